"""Hostile and broken request bodies: each gets a precise error in milliseconds, and nothing sticks."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from extender.api import wire
from extender.api.history import DecisionHistory, Record
from extender.policy.core.decisions import FilterDecision
from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import make_pod, tfjob_pods
from tests.contract.listeners import ListenerClient
from tests.contract.support import NODES, filter_args, post, worker


def timed_post(client: ListenerClient, verb: str, payload: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    reply = post(client, verb, payload)
    return reply, time.perf_counter() - started


def with_phase(pod: dict[str, Any], phase: Any) -> dict[str, Any]:
    return {**pod, "status": {"phase": phase}}


def test_a_pod_with_a_list_for_a_phase_is_refused_and_gang_scheduling_goes_on(client: ListenerClient) -> None:
    stranger = with_phase(make_pod("stranger", group="mnist"), [1])
    reply = post(client, "filter", filter_args(stranger))
    assert reply["Error"].startswith("tfjob-extender filter: Pod default/stranger: status.phase=a list [1] is not")
    assert "internal error" not in reply["Error"]
    assert post(client, "filter", filter_args(worker()))["Error"] == ""
    for route in ("/debug/gangs", "/debug/jobs", "/metrics", "/debug/state", "/debug/decisions"):
        assert client.get(route).status_code == 200, route


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        pytest.param(
            filter_args(make_pod("p", memory="1e999999")),
            "spec.containers[0].resources: resource quantity '1e999999': exponent beyond ±64",
            id="a pod asking for 1e999999 bytes",
        ),
        pytest.param(
            filter_args(make_pod("p", memory="1e5000")), "exponent beyond ±64", id="an exponent past the digit limit"
        ),
        pytest.param(
            filter_args(make_pod("p", memory="9Ei")), "is over 9223372036854775807 bytes", id="9 EiB of memory"
        ),
        pytest.param(
            filter_args(make_pod("p", namespace="a/b")), "metadata.namespace='a/b' is not a DNS-1123 label", id="ns"
        ),
        pytest.param(
            filter_args(make_pod("p"), ["node-0", "Node_1"]),
            "NodeNames[1]='Node_1' is not a node name",
            id="a candidate name Kubernetes forbids",
        ),
        pytest.param(
            filter_args(make_pod("p"), ["n"] * (wire.CANDIDATES_MAX + 1)),
            f"NodeNames names {wire.CANDIDATES_MAX + 1} nodes (at most {wire.CANDIDATES_MAX})",
            id="too many candidates",
        ),
        pytest.param(
            {"Pod": make_pod("p"), "Nodes": {"items": [{"metadata": [1]}]}, "NodeNames": None},
            "Nodes.items[0] must be a Node object with metadata.name",
            id="a node object without a name",
        ),
        pytest.param({"Pod": [1]}, "Pod must be an object or null", id="a pod that is a list"),
    ],
)
def test_bad_input_is_refused_in_milliseconds_naming_the_field(
    client: ListenerClient, payload: Any, message: str
) -> None:
    reply, seconds = timed_post(client, "filter", payload)
    assert message in reply["Error"]
    assert "internal error" not in reply["Error"]
    assert seconds < 0.5


def test_a_body_of_empty_objects_is_refused_before_it_is_decoded() -> None:
    body = orjson.dumps({"Pod": make_pod("p"), "Nodes": {"items": [{}] * (wire.JSON_CONTAINERS_MAX + 1)}})
    started = time.perf_counter()
    with pytest.raises(wire.WireError, match=r"holds 1000\d\d objects and lists \(at most 100000\)"):
        wire.parse_extender_args(body)
    assert time.perf_counter() - started < 0.05


@pytest.mark.parametrize(
    ("victims", "message"),
    [
        pytest.param({"node-0": {"Pods": [{"UID": 7}]}}, "NodeNameToMetaVictims[node-0].Pods[].UID must be", id="uid"),
        pytest.param({"node-0": {"Pods": [], "NumPDBViolations": -1}}, "must be an integer from 0", id="negative"),
        pytest.param({"Node 0": {"Pods": []}}, "NodeNameToMetaVictims[0]='Node 0' is not a node name", id="node"),
    ],
)
def test_bad_preemption_arguments_are_refused_naming_the_field(
    client: ListenerClient, victims: dict[str, Any], message: str
) -> None:
    reply = post(client, "preempt", {"Pod": make_pod("p"), "NodeNameToMetaVictims": victims})
    assert message in reply["Error"]


def test_the_topology_view_refuses_a_huge_quantity_at_once(client: ListenerClient) -> None:
    started = time.perf_counter()
    response = client.get("/debug/topology", params={"memory": "1e999999"})
    assert time.perf_counter() - started < 0.5
    assert response.status_code == 400
    assert "exponent beyond" in response.json()["error"]
    assert client.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("route", "params", "message"),
    [
        pytest.param("/debug/topology", {"depth": "deep"}, "query.depth: Input should be a valid integer", id="depth"),
        pytest.param("/debug/decisions", {"limit": "1e9"}, "query.limit", id="a limit in float syntax"),
        pytest.param("/debug/topology", {"cpu": "-1"}, "is negative", id="negative cpu"),
        pytest.param("/debug/topology", {"gpu": "x" * 1000}, "1000 characters", id="a long gpu count"),
    ],
)
def test_debug_queries_are_validated_with_a_400(
    client: ListenerClient, route: str, params: dict[str, str], message: str
) -> None:
    response = client.get(route, params=params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_a_state_dump_holding_a_delete_character_loads_back(client: ListenerClient, tmp_path: Path) -> None:
    dump = client.get("/debug/state").json()
    dump["items"][0]["metadata"].setdefault("annotations", {})["note"] = "tab\x7fdel"
    path = tmp_path / "state.json"
    path.write_bytes(orjson.dumps(dump))
    loaded = ClusterState()
    load_snapshot_file(loaded, path)
    assert dump_state(loaded.snapshot())["items"] == client.get("/debug/state").json()["items"]


def test_the_decision_history_keeps_a_bounded_number_of_node_entries() -> None:
    history = DecisionHistory(capacity=100, node_budget=12_000)
    wide = FilterDecision("fit", "", tuple(f"node-{i}" for i in range(5000)))
    for _ in range(10):
        history.add(Record(0.0, "filter", "default/p", 1, wide))
    assert len(history.render(limit=100)) == 2
    history.add(Record(0.0, "filter", "default/q", 1, FilterDecision("fit", "", ("node-0",))))
    assert [r["pod"] for r in history.render(limit=100)] == ["default/q", "default/p", "default/p"]


def test_a_gang_member_is_still_steered_after_a_flood_of_junk(client: ListenerClient, state: ClusterState) -> None:
    planned = post(client, "filter", filter_args(worker()))["NodeNames"]
    for junk in ([1], {"a": 1}, "Sleeping", None, 7):
        post(client, "filter", filter_args(with_phase(worker("mnist-worker-1"), junk)))
        post(client, "filter", filter_args(with_phase(make_pod("x", group="mnist"), junk)))
    assert post(client, "filter", filter_args(worker()))["NodeNames"] == planned
    assert len(state.snapshot().pods) == len(tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi"))
    assert NODES
