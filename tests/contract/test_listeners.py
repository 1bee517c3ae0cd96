"""The verb listener and the observe listener are guarded apart, as `serve` builds them from its flags:
`--auth-*` on the verbs only, `--observe-auth-*` on the observe listener's debug routes only; `/metrics`,
`/healthz`, `/readyz` stay open on the observe listener; `--observe-debug` off loopback needs a token check."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.__main__ import main
from extender.api.app import make_service
from extender.cli.args import parse_args, settings_from
from extender.cli.exposure import exposure_checked
from extender.cli.serving import Wiring, listener_apps, offline_wiring
from extender.config import Settings
from extender.state.store import ClusterState
from tests.contract.support import Clock, filter_args, worker

EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"
TOKEN = "observe-secret"
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


def listeners(argv: list[str], state: ClusterState) -> tuple[TestClient, TestClient]:
    """Clients of the verb listener and the observe listener `serve ARGV` would run (over `state`)."""
    settings = settings_from(parse_args(["serve", "--observe-port", "8890", *argv]))
    app, observe_app = listener_apps(settings, Wiring(make_service(settings, state, Clock())))
    assert observe_app is not None
    return TestClient(app), TestClient(observe_app)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_without_observe_debug_the_observe_listener_hides_debug_and_the_page(state: ClusterState) -> None:
    _, observe = listeners([], state)
    for path in ("/debug/state", "/ui", "/debug/explain/default/mnist"):
        assert observe.get(path).status_code == 404, path
    for path in ("/metrics", "/healthz", "/readyz"):
        assert observe.get(path).status_code == 200, path


def test_observe_debug_routes_need_the_observe_token_and_metrics_stay_open(state: ClusterState, tokens: Path) -> None:
    _, observe = listeners(["--observe-debug", "--observe-auth-token-file", str(tokens)], state)
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
    verbs, observe = listeners(["--auth-token-file", str(verb_tokens), "--observe-host", "127.0.0.1"], state)
    filter_call = filter_args(worker())
    refused = verbs.post("/filter", json=filter_call)
    assert refused.status_code == 401 and "error" in refused.json()
    assert verbs.post("/filter", json=filter_call, headers=bearer(VERB_TOKEN)).json()["Error"] == ""
    assert observe.get("/metrics").status_code == 200
    _, observe_with_debug = listeners(
        ["--auth-token-file", str(verb_tokens), "--observe-host", "127.0.0.1", "--observe-debug"], state
    )
    assert observe_with_debug.get("/debug/state").status_code == 200, "the verb tokens do not guard /debug there"


def test_observe_tokens_leave_kube_schedulers_unauthenticated_filter_alone(state: ClusterState, tokens: Path) -> None:
    verbs, observe = listeners(["--observe-debug", "--observe-auth-token-file", str(tokens)], state)
    assert verbs.post("/filter", json=filter_args(worker())).json()["Error"] == ""
    assert verbs.get("/debug/gangs").status_code == 200, "the verb listener keeps its own (no) checks"
    assert observe.get("/debug/gangs").status_code == 401


def test_observe_token_review_is_refused_without_an_api_server(state: ClusterState) -> None:
    with pytest.raises(ValueError, match="--observe-auth-token-review needs an API server"):
        listeners(["--observe-debug", "--observe-auth-token-review"], state)


@pytest.mark.parametrize(
    ("argv", "accepted", "said"),
    [
        pytest.param(["--observe-debug"], False, "--observe-auth-token-file", id="debug off loopback, no auth"),
        pytest.param(["--observe-debug", "--observe-debug-insecure"], True, "warning", id="insecure allowed"),
        pytest.param(["--observe-debug", "--observe-host", "127.0.0.1"], True, "", id="loopback"),
        pytest.param(["--observe-debug", "--observe-auth-token-file", "t"], True, "clear text", id="tokens, no TLS"),
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
    assert main(["serve", "--observe-port", "8890", "--observe-debug", "--cluster-snapshot", "none.yaml"]) == 2
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
    _, observe_app = listener_apps(settings, wiring)
    assert observe_app is not None
    observe = TestClient(observe_app)
    metrics = observe.get("/metrics").text
    assert "tfjob_extender_preemption_leader" in metrics and "tfjob_extender_scaler_leader" in metrics
    assert observe.get("/debug/scaler").json()["settings"]["scaleOutStep"] == 2
    assert observe.get("/debug/jobs").json()["shadowMode"] is True
