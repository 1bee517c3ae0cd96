"""The whole settings tree from the config file and the flags: every group's section, what only a flag may
set, the flags kept from earlier releases, both listeners' limits, and a setting declared once for all."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.cli.args import parse_args, settings_from
from extender.config import OBSERVE_LIMITS, VERB_LIMITS, Settings, SettingsError, load_config_file
from extender.config.rules import GROUP
from extender.config.tree import leaves
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.policy.core.setting_rules import DECLARED

SECTIONS: dict[str, Any] = {
    "starvation_limit_s": 300,
    "model_catch_up_s": 1.5,
    "log_level": "warning",
    "preemption_loop": {"interval_s": 5, "max_gangs_per_tick": 1, "wait_event_repeat_after_s": 60},
    "scaler_loop": {"interval_s": 4, "replan_unchanged_s": 20},
    "leader_election": {"lease_name": "team-a", "lease_duration_s": 30},
    "verb_limits": {"max_body_bytes": 8388608, "keep_alive_s": 100},
    "observe_limits": {"max_connections": 8},
}


def config(tmp_path: Path, values: object) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(values))
    return path


def settings(*argv: str) -> Settings:
    return settings_from(parse_args(list(argv)))


def test_every_section_of_the_file_reaches_its_settings(tmp_path: Path) -> None:
    got = settings("loops", "--config", str(config(tmp_path, SECTIONS)))
    assert got.policy.starvation_limit_s == 300.0 and got.model_catch_up_s == 1.5 and got.log_level == "warning"
    assert (got.preemption_loop.interval_s, got.preemption_loop.max_gangs_per_tick) == (5.0, 1)
    assert got.preemption_loop.wait_event_repeat_after_s == 60.0
    assert (got.scaler_loop.interval_s, got.scaler_loop.replan_unchanged_s) == (4.0, 20.0)
    assert (got.leader_election.lease_name, got.leader_election.lease_duration_s) == ("team-a", 30)
    assert got.leader_election.lease_namespace == "tfjob-system", "the rest of a section keeps its defaults"
    assert got.verb_limits == dataclasses.replace(VERB_LIMITS, max_body_bytes=8388608, keep_alive_s=100.0)
    assert got.observe_limits == dataclasses.replace(OBSERVE_LIMITS, max_connections=8)


def test_flags_given_override_the_sections_and_flags_left_out_do_not(tmp_path: Path) -> None:
    path = str(config(tmp_path, SECTIONS))
    got = settings("serve", "--config", path, "--preemption-interval-s", "7", "--observe-max-connections", "9")
    assert got.preemption_loop.interval_s == 7.0 and got.preemption_loop.max_gangs_per_tick == 1
    assert got.observe_limits.max_connections == 9 and got.verb_limits.max_body_bytes == 8388608


@pytest.mark.parametrize(
    ("values", "said"),
    [
        pytest.param({"host": "0.0.0.0"}, "host: set by its flag only (--host), not by the config file", id="host"),
        pytest.param({"dry_run": True}, "dry_run: set by its flag only (--dry-run)", id="a mode"),
        pytest.param({"auth": {"token_review": True}}, "auth: set by flags only, not by the config file", id="auth"),
        pytest.param(
            {"leader_election": {"identity": "one"}},
            "leader_election.identity: set by its flag only (--identity), not by the config file",
            id="identity",
        ),
        pytest.param(
            {"preemption_loop": {"interval_s": 0}},
            "preemption_loop.interval_s: 0 is out of range (> 0)",
            id="a section's value",
        ),
        pytest.param(
            {"verb_limits": {"max_conections": 3}},
            "unknown key 'max_conections' (allowed: max_connections, reserved_for_authenticated, ",
            id="a section's unknown key",
        ),
        pytest.param(
            {"scaler_loop": [1]}, "scaler_loop: expected a mapping of setting names to values", id="not a section"
        ),
        pytest.param(
            {"preemtion_loop": {}}, "unknown key 'preemtion_loop' (allowed: decision_history, ", id="unknown section"
        ),
    ],
)
def test_what_the_file_may_not_give_is_refused_by_name(tmp_path: Path, values: object, said: str) -> None:
    path = config(tmp_path, values)
    with pytest.raises(SettingsError) as refused:
        load_config_file(path)
    assert str(refused.value).startswith(f"config file {path}: {said}")


def test_the_lease_flags_keep_their_names_and_fill_the_leader_election() -> None:
    argv = ["--lease-namespace", "ml", "--lease-name", "loops", "--lease-duration-s", "20", "--identity", "pod-1"]
    election = settings("loops", *argv).leader_election
    assert (election.lease_namespace, election.lease_name, election.lease_duration_s) == ("ml", "loops", 20)
    assert election.identity == "pod-1"
    assert settings("scaler", "--scaler-interval-s", "5").scaler_loop.interval_s == 5.0
    unnamed, other = settings("loops").leader_election.identity, settings("loops").leader_election.identity
    assert unnamed and other and unnamed != other, "an identity of its own for every instance left unnamed"


def test_both_listeners_limits_have_flags_and_the_verb_listeners_body_cap_keeps_its_old_name() -> None:
    got = settings("serve", "--max-body-bytes", "1000", "--verb-max-connections", "5", "--observe-keep-alive-s", "3")
    assert (got.verb_limits.max_body_bytes, got.verb_limits.max_connections) == (1000, 5)
    assert got.observe_limits.keep_alive_s == 3.0 and got.observe_limits.max_body_bytes == OBSERVE_LIMITS.max_body_bytes
    assert settings("loops", "--observe-max-connections", "2").observe_limits.max_connections == 2
    assert settings("serve", "--verb-max-body-bytes", "2000").verb_limits.max_body_bytes == 2000
    with pytest.raises(SettingsError, match=r"^--observe-max-connections: 0 is out of range \(>= 1\)$"):
        settings("loops", "--observe-max-connections", "0")


def test_switch_flags_turn_a_setting_either_way_over_the_file(tmp_path: Path) -> None:
    path = str(config(tmp_path, {"consolidation_enabled": False, "starving_backfill": False}))
    assert not settings("serve", "--config", path).policy.consolidation_enabled
    turned = settings("serve", "--config", path, "--consolidation", "--starving-backfill").policy
    assert turned.consolidation_enabled and turned.starving_backfill
    assert not settings("loops", "--no-consolidation").policy.consolidation_enabled
    assert not settings("loops", "--own-barrier-for-gated-gangs").policy.defer_to_scheduler_gang_barrier
    modes = settings("serve", "--no-loops", "--with-scaler", "--dry-run", "--verbs-insecure")
    assert (modes.with_loops, modes.with_scaler, modes.dry_run, modes.verbs_insecure) == (False, True, True, True)


def test_each_command_has_its_own_port_default_and_only_its_own_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert (settings("serve").port, settings("loops").port, settings("scaler").port) == (8888, 8889, 8889)
    with pytest.raises(SystemExit):
        parse_args(["loops", "--verb-max-body-bytes", "10"])
    assert "unrecognized arguments: --verb-max-body-bytes" in capsys.readouterr().err


def test_repeated_words_and_files_reach_the_auth_settings() -> None:
    argv = ["--auth-token-review", "--auth-audience", "a", "--auth-audience", "b", "--tls-cert-file", "/c.pem"]
    auth = settings("serve", *argv, "--observe-auth-allowed-user", "alice").auth
    assert auth.token_review and auth.audiences == ("a", "b") and auth.tls_cert_file == Path("/c.pem")
    assert settings("serve", "--observe-auth-allowed-user", "alice").observe_auth.allowed_users == ("alice",)


def test_a_flag_that_is_not_a_value_stops_the_parse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["serve", "--preemption-interval-s", "soon"])
    assert "argument --preemption-interval-s: 'soon' is not a number" in capsys.readouterr().err


def test_a_snapshot_file_and_a_kubeconfig_exclude_each_other() -> None:
    with pytest.raises(SettingsError, match=r"^cluster_snapshot: not together with kubeconfig"):
        settings("serve", "--kubeconfig", "k", "--cluster-snapshot", "s.yaml")


def test_a_loop_setting_built_directly_is_checked_by_its_declaration() -> None:
    with pytest.raises(ValueError, match=r"^wait_event_pods_per_gang: -1 is out of range \(>= 0\)$"):
        PreemptionLoopSettings(wait_event_pods_per_gang=-1)


def test_every_field_of_every_settings_class_is_declared_or_a_group() -> None:
    def undeclared(settings_class: type, prefix: str) -> list[str]:
        found = []
        for field in dataclasses.fields(settings_class):
            if GROUP in field.metadata:
                assert field.default_factory is not dataclasses.MISSING
                found += undeclared(type(field.default_factory()), f"{prefix}{field.name}.")
            elif DECLARED not in field.metadata:
                found.append(prefix + field.name)
        return found

    assert undeclared(Settings, "") == []
    assert len(leaves()) == len({leaf.path for leaf in leaves()})


def test_no_two_settings_share_a_flag_or_a_file_key() -> None:
    flags = [flag for leaf in leaves() for flag in leaf.flags]
    keys = [leaf.file_key for leaf in leaves() if leaf.in_file]
    assert len(flags) == len(set(flags)) and len(keys) == len(set(keys))
