"""`tfjob-extender replay` over a scripted API server (`api_call` replaced) and over files: what it reads, what it
prints, its exit code (0 replayed, 2 input unreadable or empty, 3 no API server); and the gains it words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.__main__ import main
from extender.k8s import reads
from extender.k8s.client import ApiCallError
from extender.replay.command import describe
from extender.replay.comparison import gains, mean_over_seeds, ratios
from extender.replay.history import Assumptions, history
from tests.builders import make_node
from tests.kubeconfigs import kubeconfig_file
from tests.unit.replay.test_history import finished, tfjob

Obj = dict[str, Any]


class FakeApi:
    """Answers the replay's reads: the version, the Nodes and the TFJobs (as a list gives them: no `kind`)."""

    def __init__(self) -> None:
        nodes = [make_node(f"node-{i}", cpu="16", memory="64Gi") for i in range(2)]
        jobs = [finished("done", 300.0), tfjob("waiting", created="2026-03-01T10:01:00Z")]
        self.lists: dict[str, list[Obj]] = {
            "/api/v1/nodes": [_listed(node) for node in nodes],
            "/apis/kubeflow.org/v1/tfjobs": [_listed(job) for job in jobs],
            "/apis/kubeflow.org/v1/namespaces/team-a/tfjobs": [_listed(jobs[0])],
        }
        self.missing: set[str] = set()
        self.asked: list[str] = []

    def __call__(self, api: object, method: str, path: str, body: Any = None) -> Any:
        assert method == "GET", "the replay only reads"
        self.asked.append(path)
        route, _, _ = path.partition("?")
        if route == "/version":
            return {"gitVersion": "v1.37.1"}
        if route in self.lists and route not in self.missing:
            return {"metadata": {}, "items": self.lists[route]}
        raise ApiCallError(404, f"{method} {route}: HTTP 404")


def _listed(manifest: Obj) -> Obj:
    return {key: value for key, value in manifest.items() if key not in ("kind", "apiVersion")}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(reads, "api_call", fake)
    return fake


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    return str(kubeconfig_file(tmp_path))


def test_the_api_servers_nodes_and_tfjobs_are_replayed_and_the_gain_printed(
    api: FakeApi, kubeconfig: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "replay.json"
    assert main(["replay", "--kubeconfig", kubeconfig, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(
        "replay of the API server at https://127.0.0.1:1: 2 TFJob(s) on 2 node(s), 0 TFJob(s) skipped"
    )
    assert "1 recorded by the preemption loop (tfjob-extender.io/run-s), 0 from status" in text
    assert "1 assumed to run 300 s (the median of the 1 known run time(s))" in text
    assert [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")][:7] == [
        "policy",
        "ours",
        "default",
        "gang-fifo",
        "kod2",
        "tiresias",
        "optimus",
    ]
    report = json.loads(out.read_text())
    assert set(report["policies"]) == {"ours", "default", "gang-fifo", "kod2", "tiresias", "optimus"}
    assert report["run_times"] == {"recorded": 1, "status": 0, "assumed": 1}
    assert report["jobs"]["waiting"]["arrival_s"] == 60.0
    assert api.asked[0] == "/version"


def test_namespace_reads_the_tfjobs_of_that_namespace_only(
    api: FakeApi, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "--kubeconfig", kubeconfig, "--namespace", "team-a"]) == 0
    assert "1 TFJob(s) on 2 node(s)" in capsys.readouterr().out
    assert any(path.startswith("/apis/kubeflow.org/v1/namespaces/team-a/tfjobs?") for path in api.asked)


def test_no_tfjob_api_exits_2_and_no_api_server_exits_3(
    api: FakeApi, kubeconfig: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api.missing.add("/apis/kubeflow.org/v1/tfjobs")
    assert main(["replay", "--kubeconfig", kubeconfig]) == 2
    assert "has no TFJob API (is training-operator installed?)" in capsys.readouterr().err

    def unreachable(*_: object) -> Any:
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(reads, "api_call", unreachable)
    assert main(["replay", "--kubeconfig", kubeconfig]) == 3
    assert capsys.readouterr().err == "replay: cannot reach the API server: connection refused\n"


def test_a_kubeconfig_that_cannot_be_loaded_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--kubeconfig", str(tmp_path / "missing")]) == 3
    assert capsys.readouterr().err.startswith("replay: cannot load the credentials: ")


def test_an_unreadable_or_empty_state_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--state", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "List", "items": [')
    assert main(["replay", "--state", str(broken)]) == 2
    nodes_only = tmp_path / "nodes.yaml"
    nodes_only.write_text(yaml.safe_dump({"kind": "List", "items": [make_node("node-0"), tfjob("x", ps=0)]}))
    assert main(["replay", "--state", str(nodes_only)]) == 2
    assert capsys.readouterr().err.splitlines()[-2:] == [
        "skipped TFJob team-a/x: no PS replica: the simulator's throughput model is parameter-server training",
        f"replay: {nodes_only}: no TFJob that can be replayed",
    ]


def test_the_help_states_the_assumptions_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = capsys.readouterr().out
    for words in (
        "--state FILE",
        "--kubeconfig",
        "--seeds",
        "resnet50 at batch 64",
        "median",
        "Exit 0",
        "2 the",
        "3 the",
    ):
        assert words in text


def metrics(avg: float | None, p95: float, makespan: float, wait: float) -> dict[str, Any]:
    return {"avg_jct_s": avg, "p95_jct_s": p95, "makespan_s": makespan, "avg_queue_s": wait, "resizes": "no"}


def test_ours_is_held_against_default_and_the_best_honest_baseline_never_optimus() -> None:
    policies = {
        "ours": metrics(80.0, 150.0, 400.0, 10.0),
        "default": metrics(100.0, 200.0, 500.0, 0.0),
        "gang-fifo": metrics(90.0, 120.0, 400.0, 20.0),
        "kod2": metrics(95.0, 150.0, 400.0, 20.0),
        "tiresias": metrics(None, 150.0, 400.0, 20.0),
        "optimus": metrics(50.0, 60.0, 300.0, 5.0),
    }
    found = gains(policies)
    assert found["against_default"] == {"avg_jct_s": 0.8, "p95_jct_s": 0.75, "makespan_s": 0.8, "avg_queue_s": None}
    assert found["best_baseline"] == "gang-fifo"
    assert found["against_best_baseline"] == {
        "avg_jct_s": 0.889,
        "p95_jct_s": 1.25,
        "makespan_s": 1.0,
        "avg_queue_s": 0.5,
    }
    assert ratios(metrics(None, 1.0, 1.0, 1.0), policies["default"])["avg_jct_s"] is None


def test_metrics_are_averaged_over_the_seeds() -> None:
    one = {"ours": {"avg_jct_s": 100.0, "censored_jobs": 0, "preemptions": 1, "p95_jct_s": None, "resizes": "yes"}}
    two = {"ours": {"avg_jct_s": 110.0, "censored_jobs": 0, "preemptions": 2, "p95_jct_s": 5.0, "resizes": "yes"}}
    assert mean_over_seeds([one, two]) == {
        "ours": {"avg_jct_s": 105.0, "censored_jobs": 0, "preemptions": 1.5, "p95_jct_s": None, "resizes": "yes"}
    }


def test_the_header_counts_the_skipped_tfjobs_and_the_nodes_left_out_and_lists_each() -> None:
    objects = [make_node("node-0", cpu="16"), make_node("cordoned", unschedulable=True)]
    found = history([*objects, finished("done", 60.0), finished("no-ps", 60.0, ps=0)], Assumptions())
    lines = describe(found, "state.json", 3).splitlines()
    assert lines[0] == (
        "replay of state.json: 1 TFJob(s) on 1 node(s), 1 TFJob(s) skipped, 1 node(s) left out, seeds 1..3"
    )
    assert lines[-2:] == [
        "  skipped Node cordoned: cordoned or not Ready",
        "  skipped TFJob team-a/no-ps: no PS replica: the simulator's throughput model is parameter-server training",
    ]
