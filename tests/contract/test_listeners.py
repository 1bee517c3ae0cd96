"""The verb listener and the observe listener are guarded apart, as `serve` builds them from its flags:
`--auth-*` on the verbs only, `--observe-auth-*` on the observe listener's debug routes only; `/metrics`,
`/healthz`, `/readyz` stay open on the observe listener; `--observe-debug` off loopback needs a token check,
and so do the verbs off loopback (or `--verbs-insecure`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from extender.__main__ import main
from extender.api.app import make_service
from extender.cli.args import parse_args, settings_from
from extender.cli.exposure import exposure_checked
from extender.cli.serving import Wiring, listeners, offline_wiring
from extender.config import Settings
from extender.state.store import ClusterState
from tests.contract.listeners import client_of_server
from tests.contract.support import Clock, filter_args, worker

EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"
TOKEN = "observe-secret"
OFF_LOOPBACK = ("--observe-host", "0.0.0.0")
VERB_TOKEN = "verb-secret"


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"{TOKEN}\n")
    return path


@pytest.fixture
def verb_tokens(tmp_path: Path) -> Path:
    path = tmp_path / "verb-tokens"
    path.write_text(f"{VERB_TOKEN}\n")
    return path


@contextlib.contextmanager
def served(settings: Settings, wiring: Wiring) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Clients of the verb listener and the observe listener `serve` builds from `settings` and `wiring`, each
    served on a free loopback port while the block runs."""
    verbs, observe = listeners(settings, wiring, access_log=False)
    for listener in (verbs, observe):
        listener.host, listener.port = "127.0.0.1", 0
    with client_of_server(verbs) as verb_client, client_of_server(observe) as observe_client:
        yield verb_client, observe_client


@contextlib.contextmanager
def serving(argv: list[str], state: ClusterState) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Clients of the verb listener and the observe listener `serve ARGV` would run (over `state`)."""
    settings = settings_from(parse_args(["serve", "--observe-port", "8890", *argv]))
    with served(settings, Wiring(make_service(settings, state, Clock()))) as clients:
        yield clients


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_without_observe_debug_the_observe_listener_hides_debug_and_the_page(state: ClusterState) -> None:
    with serving([], state) as (_, observe):
        for path in ("/debug/state", "/ui", "/debug/explain/default/mnist"):
            assert observe.get(path).status_code == 404, path
        for path in ("/metrics", "/healthz", "/readyz"):
            assert observe.get(path).status_code == 200, path


def test_observe_debug_routes_need_the_observe_token_and_metrics_stay_open(state: ClusterState, tokens: Path) -> None:
    with serving(["--observe-debug", "--observe-auth-token-file", str(tokens)], state) as (_, observe):
        for path in ("/debug/state", "/ui", "/debug/explain/default/mnist", "/debug/jobs"):
            refused = observe.get(path)
            assert refused.status_code == 401, path
            assert refused.headers["content-type"] == "application/json" and "bearer token" in refused.json()["error"]
            wrong = observe.get(path, headers=bearer("not-it"))
            assert wrong.status_code in (401, 403) and "error" in wrong.json()
            assert observe.get(path, headers=bearer(TOKEN)).status_code == 200, path
        for path in ("/metrics", "/healthz", "/readyz"):
            assert observe.get(path).status_code == 200, path


def test_verb_tokens_guard_the_verbs_and_leave_the_observe_listener_alone(
    state: ClusterState, verb_tokens: Path
) -> None:
    filter_call = filter_args(worker())
    with serving(["--auth-token-file", str(verb_tokens)], state) as (verbs, observe):
        refused = verbs.post("/filter", json=filter_call)
        assert refused.status_code == 401 and "error" in refused.json()
        assert verbs.post("/filter", json=filter_call, headers=bearer(VERB_TOKEN)).json()["Error"] == ""
        assert verbs.get("/healthz").status_code == 200, "the probes need no token"
        assert observe.get("/metrics").status_code == 200
    with serving(["--auth-token-file", str(verb_tokens), "--observe-debug"], state) as (_, observe_with_debug):
        assert observe_with_debug.get("/debug/state").status_code == 200, "the verb tokens do not guard /debug there"


def test_observe_tokens_leave_kube_schedulers_unauthenticated_filter_alone(state: ClusterState, tokens: Path) -> None:
    with serving(["--observe-debug", "--observe-auth-token-file", str(tokens)], state) as (verbs, observe):
        assert verbs.post("/filter", json=filter_args(worker())).json()["Error"] == ""
        elsewhere = verbs.get("/debug/gangs")
        assert elsewhere.status_code == 404, "the verb listener asks no token, and serves no debug routes"
        assert "the verb listener serves" in elsewhere.json()["error"]
        assert observe.get("/debug/gangs").status_code == 401


def test_observe_token_review_is_refused_without_an_api_server(state: ClusterState) -> None:
    settings = settings_from(
        parse_args(["serve", "--observe-port", "8890", "--observe-debug", "--observe-auth-token-review"])
    )
    with pytest.raises(ValueError, match="--observe-auth-token-review needs an API server"):
        listeners(settings, Wiring(make_service(settings, state, Clock())), access_log=False)


@pytest.mark.parametrize(
    ("argv", "accepted", "said"),
    [
        pytest.param([*OFF_LOOPBACK, "--observe-debug"], False, "--observe-auth-token-file", id="debug, no auth"),
        pytest.param([*OFF_LOOPBACK, "--observe-debug", "--observe-debug-insecure"], True, "warning", id="insecure"),
        pytest.param(["--observe-debug"], True, "", id="loopback by default"),
        pytest.param(["--observe-debug", "--observe-host", "127.0.0.1"], True, "", id="loopback"),
        pytest.param(
            [*OFF_LOOPBACK, "--observe-debug", "--observe-auth-token-file", "t"], True, "clear text", id="no TLS"
        ),
        pytest.param(["--observe-tls-cert-file", "c"], False, "--observe-tls-key-file go together", id="half TLS"),
        pytest.param([], True, "", id="metrics only"),
    ],
)
def test_observe_exposure_is_checked_apart_from_the_verbs(
    argv: list[str], accepted: bool, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_from(parse_args(["serve", "--observe-port", "8890", *argv]))
    assert exposure_checked(settings) is accepted
    assert said in capsys.readouterr().err


def test_serve_refuses_observe_debug_off_loopback_without_auth_with_exit_code_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["serve", "--observe-port", "8890", *OFF_LOOPBACK, "--observe-debug", "--cluster-snapshot", "none.yaml"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--observe-debug on 0.0.0.0" in err and "--observe-debug-insecure" in err


def test_observe_flags_need_an_observe_port(capsys: pytest.CaptureFixture[str]) -> None:
    assert not exposure_checked(settings_from(parse_args(["serve", "--observe-debug"])))
    assert "need --observe-port" in capsys.readouterr().err


def test_a_loop_process_judges_its_one_listener_by_the_observe_flags(capsys: pytest.CaptureFixture[str]) -> None:
    off_loopback = settings_from(parse_args(["loops", "--host", "0.0.0.0", "--observe-debug"]))
    assert not exposure_checked(off_loopback, verbs=False)
    assert "--observe-debug on 0.0.0.0" in capsys.readouterr().err
    assert exposure_checked(settings_from(parse_args(["loops", "--observe-debug"])), verbs=False)
    assert exposure_checked(Settings(host="0.0.0.0"), verbs=False), "probes and metrics alone need nothing"


def test_serves_observe_listener_exports_the_loops_metrics_and_their_debug_views() -> None:
    argv = ["--cluster-snapshot", str(EXAMPLE), "--with-scaler", "--dry-run", "--observe-port", "8890"]
    settings = settings_from(parse_args(["serve", *argv, "--observe-host", "127.0.0.1", "--observe-debug"]))
    loaded = ClusterState(settings.policy)
    wiring = offline_wiring(settings, loaded, make_service(settings, loaded, Clock()))
    assert wiring is not None
    with served(settings, wiring) as (verbs, observe):
        metrics = observe.get("/metrics").text
        assert "tfjob_extender_preemption_leader" in metrics and "tfjob_extender_scaler_leader" in metrics
        assert observe.get("/debug/scaler").json()["settings"]["scaleOutStep"] == 2
        assert observe.get("/debug/jobs").json()["shadowMode"] is True
        assert verbs.get("/debug/scaler").status_code == 404 and verbs.get("/metrics").status_code == 404
