"""`POST /debug/what-if` and `tfjob-extender explain --what-if FILE` over a real observe listener: the three
verdicts on the examples' TFJobs (would start now on the plan's nodes, would wait with what it is short of or
the higher-ranked gang it yields to, never on a cluster too small), the model left as it was, and what is
refused: a body that is not JSON or not a TFJob, too many pods, a PriorityClass or scheduler the extender
cannot answer for, a job it already knows (409), a body over the listener's cap (413), a request without the
token a guarded listener asks for (401), any request when the debug routes are off (404). The command's exit
codes follow the verdicts."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from extender import what_if as what_if_command
from extender.__main__ import main
from extender.api.app import make_service
from extender.api.auth import TokenChecks, TokenFile
from extender.api.edge.app_responder import AppResponder
from extender.api.edge.server import EdgeServer
from extender.api.observe import create_observe_app
from extender.config import Settings
from extender.explain import EXIT_UNREACHABLE
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_priority_class, placed_pods
from tests.contract.listeners import client_of_server, observe_server, running, url_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOW = 1_772_363_100.0


def example(name: str) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / f"tfjob-{name}.yaml").read_text())
    return manifest


def with_workers(manifest: dict[str, Any], workers: int) -> dict[str, Any]:
    changed = copy.deepcopy(manifest)
    changed["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = workers
    return changed


def three_free_nodes() -> ClusterState:
    return cluster(*(make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(3)))


def four_cpu_free() -> ClusterState:
    """Two 4-CPU nodes, one of them full with the running job `busy`: 4 CPU free in all."""
    busy = placed_pods("busy", placement=["node-0"] * 4, cpu="1", memory="2Gi")
    return cluster(*(make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)), *busy)


@pytest.fixture
def listener(request: pytest.FixtureRequest) -> Iterator[tuple[httpx.Client, ClusterState]]:
    state: ClusterState = request.param()
    service = make_service(Settings(), state, lambda: NOW)
    with client_of_server(observe_server(service)) as client:
        yield client, state


def ask(client: httpx.Client, manifest: Any) -> httpx.Response:
    return client.post("/debug/what-if", json=manifest)


@pytest.mark.parametrize("listener", [three_free_nodes], indirect=True)
def test_a_job_that_fits_would_start_now_on_the_plans_nodes(listener: tuple[httpx.Client, ClusterState]) -> None:
    client, state = listener
    before = state.snapshot()
    answer = ask(client, example("cpu"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["verdict"] == "now"
    assert body["object"] == body["gang"] == "default/tfjob-cpu"
    assert body["pods"] == 3 and body["needed"] == "5 CPU, 10 GiB"
    assert {entry["pod"] for entry in body["plan"]} == {
        "default/tfjob-cpu-ps-0",
        "default/tfjob-cpu-worker-0",
        "default/tfjob-cpu-worker-1",
    }
    assert body["nodes"] == sorted({entry["node"] for entry in body["plan"]})
    assert set(body["nodes"]) <= {"node-0", "node-1", "node-2"} and len(body["nodes"]) == 2
    after = state.snapshot()
    assert after is before and "default/tfjob-cpu" not in after.jobs and not after.reservations


@pytest.mark.parametrize("listener", [four_cpu_free], indirect=True)
def test_a_job_that_does_not_fit_now_would_wait_short_of_cpu(listener: tuple[httpx.Client, ClusterState]) -> None:
    client, _ = listener
    body = ask(client, example("cpu")).json()
    assert body["verdict"] == "wait"
    assert body["needed"] == "5 CPU, 10 GiB" and body["free"] == "4 CPU, 24 GiB"
    assert body["shortfall"] == [{"resource": "cpu", "needed": "5 CPU", "free": "4 CPU"}]
    assert body["reason"] == (
        "gang default/tfjob-cpu needs 3 pods (2 × 2 CPU, 4 GiB + 1 × 1 CPU, 2 GiB); best plan fits 2"
    )
    assert (body["rank"], body["waiting"]) == (1, 1)
    assert body["freeable"] == "nothing"


def behind_a_higher_ranked_gang() -> ClusterState:
    """Two 4-CPU nodes and the pending gang `urgent` of priority 1000 (6 pods of 1 CPU), which fits."""
    urgent = [make_pod(f"urgent-{index}", group="urgent", cpu="1", memory="1Gi", priority=1000) for index in range(6)]
    nodes = (make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2))
    return cluster(*nodes, *urgent, make_podgroup("urgent", min_member=6), make_priority_class("urgent", 1000))


@pytest.mark.parametrize("listener", [behind_a_higher_ranked_gang], indirect=True)
def test_a_job_that_would_take_a_higher_ranked_gangs_room_would_wait_for_it(
    listener: tuple[httpx.Client, ClusterState],
) -> None:
    client, _ = listener
    body = ask(client, example("cpu")).json()
    assert body["verdict"] == "wait" and body["shortfall"] == []
    assert body["reason"] == "gang default/tfjob-cpu waits: starting it would delay higher-ranked gang default/urgent"
    assert (body["rank"], body["waiting"]) == (2, 2)
    urgent = copy.deepcopy(example("cpu"))
    for replica in urgent["spec"]["tfReplicaSpecs"].values():
        replica["template"]["spec"]["priorityClassName"] = "urgent"
    assert ask(client, urgent).json()["verdict"] == "wait"


@pytest.mark.parametrize("listener", [three_free_nodes], indirect=True)
def test_a_job_bigger_than_the_cluster_would_never_start(listener: tuple[httpx.Client, ClusterState]) -> None:
    client, _ = listener
    body = ask(client, with_workers(example("cpu"), 1000)).json()
    assert body["verdict"] == "never"
    assert body["reason"] == (
        "its minimum asks more than the whole cluster has "
        "(2001 CPU of 12 CPU, 3.9082 TiB of 48 GiB, 1001 pods of 330 pods on 3 schedulable nodes)"
    )
    gpu = ask(client, example("gpu")).json()
    assert gpu["verdict"] == "never" and "2 GPU of 0 GPU" in gpu["reason"]
    assert {"resource": "nvidia.com/gpu", "needed": "2 GPU", "free": "0 GPU"} in gpu["shortfall"]


@pytest.mark.parametrize("listener", [three_free_nodes], indirect=True)
def test_what_the_extender_cannot_answer_for_is_a_json_400(listener: tuple[httpx.Client, ClusterState]) -> None:
    client, _ = listener
    unknown_class = copy.deepcopy(example("cpu"))
    unknown_class["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["priorityClassName"] = "nowhere"
    other_scheduler = copy.deepcopy(example("cpu"))
    other_scheduler["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "default-scheduler"
    suspended = copy.deepcopy(example("cpu"))
    suspended["spec"]["runPolicy"]["suspend"] = True
    bad_replicas = with_workers(example("cpu"), -1)
    refused = {
        "not a TFJob": ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, "not a TFJob: kind 'Pod'"),
        "a list": ([1, 2], "the manifest is a list [1, 2], not a TFJob object"),
        "too many pods": (with_workers(example("cpu"), 5000), "asks for 5001 pods; what-if answers for at most 5000"),
        "no such PriorityClass": (unknown_class, "the cluster has no PriorityClass nowhere"),
        "another scheduler": (other_scheduler, "names the scheduler default-scheduler"),
        "suspended": (suspended, "is suspended (spec.runPolicy.suspend)"),
        "unreadable": (bad_replicas, "spec.tfReplicaSpecs.Worker.replicas=-1 is out of range"),
    }
    for case, (manifest, words) in refused.items():
        answer = ask(client, manifest)
        assert answer.status_code == 400, case
        assert words in answer.json()["error"], (case, answer.json())
    not_json = client.post("/debug/what-if", content=b"kind: TFJob")
    assert not_json.status_code == 400 and "not a JSON TFJob manifest" in not_json.json()["error"]
    wrong_method = client.get("/debug/what-if")
    assert wrong_method.status_code == 405 and "error" in wrong_method.json()


def known_job() -> ClusterState:
    pending = [make_pod(f"tfjob-cpu-worker-{index}", group="tfjob-cpu", job="tfjob-cpu") for index in range(2)]
    return cluster(make_node("node-0"), *pending, make_podgroup("tfjob-cpu", min_member=2))


@pytest.mark.parametrize("listener", [known_job], indirect=True)
def test_a_job_the_extender_already_knows_is_a_409_that_says_to_explain_it(
    listener: tuple[httpx.Client, ClusterState],
) -> None:
    client, _ = listener
    answer = ask(client, example("cpu"))
    assert answer.status_code == 409
    assert answer.json()["error"].startswith("the extender already knows PodGroup default/tfjob-cpu, pod ")
    assert "tfjob-extender explain default/tfjob-cpu" in answer.json()["error"]
    elsewhere = copy.deepcopy(example("cpu"))
    elsewhere["metadata"]["namespace"] = "team-a"
    assert ask(client, elsewhere).json()["verdict"] == "now"


@pytest.mark.parametrize("listener", [three_free_nodes], indirect=True)
def test_a_body_over_the_listeners_cap_is_refused_before_the_route(
    listener: tuple[httpx.Client, ClusterState],
) -> None:
    client, _ = listener
    padded = copy.deepcopy(example("cpu"))
    padded["metadata"]["annotations"] = {"padding": "x" * (Settings().observe_limits.max_body_bytes + 1)}
    answer = ask(client, padded)
    assert answer.status_code == 413 and "exceeds the limit" in answer.json()["error"]


def test_a_listener_that_guards_its_debug_routes_asks_a_token_for_the_what_if(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("observe-secret\n")
    service = make_service(Settings(), three_free_nodes(), lambda: NOW)
    app = create_observe_app(service, debug_routes=True)
    server = EdgeServer(
        AppResponder(app),
        service.settings.observe_limits,
        host="127.0.0.1",
        port=0,
        name="observe routes",
        tokens=TokenChecks([TokenFile(tokens)], None),
    )
    with client_of_server(server) as client:
        assert ask(client, example("cpu")).status_code == 401
        allowed = client.post("/debug/what-if", json=example("cpu"), headers={"Authorization": "Bearer observe-secret"})
        assert allowed.json()["verdict"] == "now"


def test_without_its_debug_routes_the_observe_listener_has_no_what_if() -> None:
    service = make_service(Settings(), three_free_nodes(), lambda: NOW)
    with client_of_server(observe_server(service, debug_routes=False)) as client:
        answer = ask(client, example("cpu"))
    assert answer.status_code == 404 and "error" in answer.json()


def test_the_command_words_each_verdict_and_exits_with_its_code(tmp_path: Path) -> None:
    service = make_service(Settings(), four_cpu_free(), lambda: NOW)
    small = with_workers(example("cpu"), 1)
    files = {
        "now": tmp_path / "small.json",
        "wait": EXAMPLES / "tfjob-cpu.yaml",
        "never": tmp_path / "huge.yaml",
        "not a TFJob": tmp_path / "pod.yaml",
    }
    files["now"].write_text(json.dumps(small))
    files["never"].write_text(yaml.safe_dump_all([{"kind": "ConfigMap"}, with_workers(example("cpu"), 1000)]))
    files["not a TFJob"].write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    server = observe_server(service)
    with running([server]):
        url = url_of(server)
        answers = {case: what_if_command.what_if(str(file), url) for case, file in files.items()}
    now = answers["now"]
    assert now.exit_code == what_if_command.EXIT_NOW
    assert now.text.splitlines()[0] == "would start now on node-1"
    assert now.text.splitlines()[2] == "  plan: tfjob-cpu-ps-0→node-1, tfjob-cpu-worker-0→node-1"
    wait = answers["wait"]
    assert wait.exit_code == what_if_command.EXIT_WAIT
    assert wait.text.splitlines()[:3] == [
        "would wait: needs 5 CPU, 10 GiB; 4 CPU, 24 GiB free",
        "  default/tfjob-cpu (TFJob, not submitted): 3 pods, 2 × 2 CPU, 4 GiB + 1 × 1 CPU, 2 GiB",
        "  short of cpu: needs 5 CPU, 4 CPU free",
    ]
    never = answers["never"]
    assert never.exit_code == what_if_command.EXIT_NEVER
    assert never.text.startswith("never: bigger than the cluster — its minimum asks more than the whole cluster has")
    refused = answers["not a TFJob"]
    assert refused.exit_code == what_if_command.EXIT_NEVER and refused.body is None
    assert refused.text.startswith("explain --what-if: not a TFJob: kind 'Pod'")
    unreachable = what_if_command.what_if(str(files["now"]), url)
    assert unreachable.exit_code == EXIT_UNREACHABLE
    assert unreachable.text.startswith(f"explain --what-if: cannot ask the extender at {url}")


def test_explain_what_if_runs_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = make_service(Settings(), three_free_nodes(), lambda: NOW)
    server = observe_server(service)
    with running([server]):
        url = url_of(server)
        file = str(EXAMPLES / "tfjob-cpu.yaml")
        assert main(["explain", "--what-if", file, "--url", url, "-n", "team-a", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["object"] == "team-a/tfjob-cpu"
        assert main(["explain", "default/tfjob-cpu", "--what-if", file, "--url", url]) == 2
        assert "not both" in capsys.readouterr().err
    assert main(["explain"]) == 2
    assert "give NAMESPACE/NAME" in capsys.readouterr().err
