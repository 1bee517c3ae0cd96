"""The config file (`--config`): every `PolicySettings` field by its name at the top level, as policy files
have always been written, checked by its declared rule; the flags given explicitly on top; `serve`, `loops`
and `scaler` reading the same file alike. The other groups' sections: `test_config_sections.py`."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.__main__ import main
from extender.cli.args import parse_args, settings_from
from extender.config import Settings, SettingsError, load_config_file
from extender.config.tree import build, values_from_file
from extender.policy.core.setting_rules import SettingValueError, declarations
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import NetworkLayer

EVERY_FIELD_CHANGED: dict[str, Any] = {
    "scheduler_name": "other-scheduler",
    "managed_namespaces": ["team-a", "team-b"],
    "default_plan_timeout_s": 90.5,
    "max_score": 7,
    "colocation_weight": 0.6,
    "idleness_weight": 0.4,
    "colocation_ps_bonus": 0.9,
    "colocation_same_job": 0.5,
    "weight_scale": 0.75,
    "weight_offset": -2.5,
    "weight_min_share": 0.01,
    "default_weight": 0.25,
    "starvation_limit_s": 300,
    "aging_rate_per_s": 0.002,
    "aging_max_weight": 0.9,
    "starving_backfill": False,
    "starving_reservations": 2,
    "starving_hold": "block",
    "size_class_ratio": 4.0,
    "rank_gangs_checked": 5,
    "suspension_min_history": 3,
    "suspension_newcomer_s": 0,
    "min_run_before_preemption_s": 45,
    "assumed_checkpoint_interval_s": 900,
    "restart_cost_s": 30,
    "checkpoint_wait_value": 0.5,
    "max_checkpoint_wait_s": 300,
    "kueue_priority_boost": True,
    "priority_boost_resource_s": 30,
    "max_priority_boost": 500,
    "max_takings_per_hour": 3,
    "suspension_history_jobs": 50,
    "scale_out_step": 3,
    "scale_out_by_gain": False,
    "scale_in_step": 1,
    "scale_cooldown_s": 10,
    "consolidation_enabled": False,
    "consolidation_budget": 2,
    "consolidation_interval_s": 120,
    "defer_to_scheduler_gang_barrier": False,
    "network_topology": [
        {"name": "SpineLayer", "labels": ["network.topology.nvidia.com/spine"]},
        {"name": "RackLayer", "labels": ["rack", "topology.kubernetes.io/rack"]},
    ],
}


def policy_file(tmp_path: Path, values: object, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(values))
    return path


def load_policy_file(path: Path) -> PolicySettings:
    return build(load_config_file(path)).policy


def policy_from_mapping(values: dict[str, object]) -> PolicySettings:
    return build(values_from_file(values)).policy


def refusal(path: Path) -> str:
    with pytest.raises(SettingsError) as refused:
        load_config_file(path)
    message = str(refused.value)
    assert message.startswith(f"config file {path}: ") and "\n" not in message
    return message


def test_every_setting_is_declared_and_the_test_changes_every_one() -> None:
    names = {field.name for field in fields(PolicySettings)}
    assert {name for name, _ in declarations(PolicySettings)} == names
    assert set(EVERY_FIELD_CHANGED) == names


def test_every_field_round_trips_through_the_file(tmp_path: Path) -> None:
    policy = load_policy_file(policy_file(tmp_path, EVERY_FIELD_CHANGED))
    defaults = PolicySettings()
    for name, value in EVERY_FIELD_CHANGED.items():
        if name != "network_topology":
            assert getattr(policy, name) == (tuple(value) if isinstance(value, list) else value), name
            assert getattr(policy, name) != getattr(defaults, name), f"{name} is changed from its default"
    assert policy.network_topology == (
        NetworkLayer("SpineLayer", ("network.topology.nvidia.com/spine",)),
        NetworkLayer("RackLayer", ("rack", "topology.kubernetes.io/rack")),
    )
    assert isinstance(policy.starvation_limit_s, float), "an integer in YAML is a float setting's value"


def test_an_empty_file_and_an_empty_topology_list() -> None:
    assert policy_from_mapping({}) == PolicySettings()
    assert policy_from_mapping({"network_topology": []}).network_topology == ()


def test_an_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_policy_file(empty) == PolicySettings()


@pytest.mark.parametrize(
    ("values", "said"),
    [
        pytest.param({"starvation_limit_s": -1}, "starvation_limit_s: -1 is out of range (>= 0)", id="below range"),
        pytest.param({"colocation_weight": 1.5}, "colocation_weight: 1.5 is out of range (0 to 1)", id="above range"),
        pytest.param({"max_score": 11}, "max_score: 11 is out of range (1 to 10)", id="integer range"),
        pytest.param({"default_plan_timeout_s": 0}, "default_plan_timeout_s: 0 is out of range (> 0)", id="open"),
        pytest.param({"weight_offset": float("inf")}, "weight_offset: inf is out of range", id="infinite"),
        pytest.param(
            {"starving_hold": "always"}, "starving_hold: 'always' is not one of newcomers, block", id="choice"
        ),
        pytest.param({"starvation_limit_s": "ten"}, "starvation_limit_s: 'ten' is not a number (>= 0)", id="type"),
        pytest.param({"scale_out_step": 1.5}, "scale_out_step: 1.5 is not an integer (>= 0)", id="not an integer"),
        pytest.param({"scale_out_step": True}, "scale_out_step: True is not an integer", id="a bool for a count"),
        pytest.param(
            {"starving_backfill": "yes please"}, "starving_backfill: 'yes please' is not true or false", id="b"
        ),
        pytest.param({"scheduler_name": ""}, "scheduler_name: '' is not a non-empty name", id="empty name"),
        pytest.param({"network_topology": "spine"}, "network_topology: 'spine' is not a list of", id="layers type"),
        pytest.param(
            {"network_topology": [{"name": "A", "labels": []}]},
            "network_topology: layer 1 (A): labels [] is not a non-empty list",
            id="no labels",
        ),
        pytest.param(
            {"network_topology": [{"name": "A", "labels": ["a"]}, {"name": "A", "labels": ["b"]}]},
            "network_topology: layer names ['A', 'A'] repeat",
            id="repeated layer",
        ),
        pytest.param(
            {"starvation_limt_s": 5}, "unknown key 'starvation_limt_s' (allowed: decision_history, ", id="unknown key"
        ),
        pytest.param(["starvation_limit_s"], "expected a mapping of setting names to values", id="not a mapping"),
    ],
)
def test_a_bad_value_is_refused_naming_the_key_and_what_it_takes(tmp_path: Path, values: object, said: str) -> None:
    assert said in refusal(policy_file(tmp_path, values))


def test_a_missing_or_unparsable_file_is_refused(tmp_path: Path) -> None:
    assert "cannot be read" in refusal(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("starvation_limit_s: [600\n")
    assert "not valid YAML (line 2, column 1)" in refusal(broken)


def test_each_rule_refuses_by_itself() -> None:
    with pytest.raises(SettingValueError, match=r"^suspension_history_jobs: 0 is out of range \(>= 1\)$"):
        policy_from_mapping({"suspension_history_jobs": 0})


def test_a_policy_built_directly_is_checked_by_the_same_rules() -> None:
    with pytest.raises(SettingValueError, match=r"^colocation_weight: 1.5 is out of range \(0 to 1\)$"):
        PolicySettings(colocation_weight=1.5)
    assert Settings().policy == PolicySettings()


def test_flags_given_override_the_file_and_flags_left_out_do_not(tmp_path: Path) -> None:
    path = policy_file(
        tmp_path,
        {
            "starvation_limit_s": 300,
            "starving_hold": "block",
            "scale_out_step": 5,
            "consolidation_enabled": False,
            "defer_to_scheduler_gang_barrier": False,
            "network_topology": [],
        },
    )
    from_file = settings_from(parse_args(["serve", "--config", str(path)])).policy
    assert (from_file.starvation_limit_s, from_file.starving_hold, from_file.scale_out_step) == (300.0, "block", 5)
    assert not from_file.consolidation_enabled and not from_file.defer_to_scheduler_gang_barrier
    assert from_file.network_topology == ()
    overridden = settings_from(
        parse_args(
            [
                "serve",
                "--config",
                str(path),
                "--starvation-limit-s",
                "42",
                "--scale-out-step",
                "1",
                "--network-topology",
                "SpineLayer=spine",
            ]
        )
    ).policy
    assert (overridden.starvation_limit_s, overridden.scale_out_step) == (42.0, 1)
    assert overridden.network_topology == (NetworkLayer("SpineLayer", ("spine",)),)
    assert overridden.starving_hold == "block" and not overridden.consolidation_enabled, "kept from the file"


def test_serve_loops_and_scaler_read_the_same_file_alike(tmp_path: Path) -> None:
    path = policy_file(tmp_path, EVERY_FIELD_CHANGED)
    policies = [settings_from(parse_args([command, "--config", str(path)])).policy for command in ("serve", "loops")]
    policies.append(settings_from(parse_args(["scaler", "--config", str(path)])).policy)
    assert policies[0] == policies[1] == policies[2] == load_policy_file(path)


def test_loops_take_the_topology_and_barrier_flags_as_serve_does() -> None:
    argv = ["--network-topology", "", "--own-barrier-for-gated-gangs"]
    serve, loops = (settings_from(parse_args([command, *argv])).policy for command in ("serve", "loops"))
    assert serve == loops
    assert loops.network_topology == () and not loops.defer_to_scheduler_gang_barrier


def test_a_flag_out_of_range_is_refused_naming_the_flag() -> None:
    with pytest.raises(SettingsError, match=r"^--starvation-limit-s: -1.0 is out of range \(>= 0\)$"):
        settings_from(parse_args(["loops", "--starvation-limit-s", "-1"]))


@pytest.mark.parametrize("command", ["serve", "loops", "scaler"])
def test_a_bad_policy_file_stops_the_start_with_exit_code_2(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = policy_file(tmp_path, {"starvation_limit_s": -1})
    assert main([command, "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"tfjob-extender: config file {path}: starvation_limit_s: -1 is out of range (>= 0)\n"
