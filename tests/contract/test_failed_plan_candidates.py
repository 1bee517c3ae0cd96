"""A failed gang plan answers only the candidate nodes it was planned from, as kube-scheduler sends them.

kube-scheduler offers each member the nodes its own filters let through, in a new order on every call;
a member offered only nodes without room is refused, and the refusal is remembered for those nodes. The
same nodes in another order, or some of them, are refused from that memory; a node outside them, or a
change of capacity, is planned again. The cluster: four 4-CPU nodes, node-0 and node-1 full; the gang
`mnist` (a PS and three workers of 1 CPU, minMember 4) fits whole on node-2 or node-3.
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.explain import describe
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods
from tests.contract.listeners import ListenerClient
from tests.contract.support import NOW, Clock, filter_args, post

NODES = ["node-0", "node-1", "node-2", "node-3"]
FULL = ["node-0", "node-1"]
MEMBER = tfjob_pods("mnist", ps=1, workers=3, cpu="1", memory="2Gi")[1]
"""The gang's first worker, as kube-scheduler sends it."""


def hog(node: str, phase: str = "Running") -> dict[str, Any]:
    return make_pod(f"hog-{node}", cpu="4", memory="4Gi", node=node, phase=phase)


@pytest.fixture
def state() -> ClusterState:
    return cluster(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *(hog(node) for node in FULL),
        *tfjob_pods("mnist", ps=1, workers=3, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=4),
        make_tfjob("mnist", workers=3),
    )


def refused(reply: dict[str, Any], offered: list[str]) -> str:
    """The one reason every offered node was refused with (none kept)."""
    assert reply["Error"] == ""
    assert not reply["NodeNames"]
    reasons = {**(reply["FailedNodes"] or {}), **(reply["FailedAndUnresolvableNodes"] or {})}
    assert set(reasons) == set(offered)
    assert len(set(reasons.values())) == 1
    return str(next(iter(reasons.values())))


def last_failure(client: ListenerClient) -> dict[str, Any]:
    gang = client.get("/debug/gangs/default/mnist").json()
    return {"at": gang["lastFailedPlanAt"], "offered": gang["lastFailedPlanOffered"], "why": gang["why"]}


def test_a_refusal_on_full_nodes_is_kept_for_those_nodes_in_any_order_and_a_node_with_room_plans_again(
    client: ListenerClient, clock: Clock
) -> None:
    reason = refused(post(client, "filter", filter_args(MEMBER, FULL)), FULL)
    assert reason == "gang default/mnist needs 4 pods (4 × 1 CPU, 2 GiB); best plan fits 3"
    assert last_failure(client) == {
        "at": NOW,
        "offered": {"pod": "default/mnist-worker-0", "nodes": 2},
        "why": reason,
    }
    clock.now += 30
    assert refused(post(client, "filter", filter_args(MEMBER, FULL[::-1])), FULL) == reason
    assert refused(post(client, "filter", filter_args(MEMBER, ["node-1"])), ["node-1"]) == reason
    assert last_failure(client)["at"] == NOW, "answered from the remembered failure, not planned again"
    reply = post(client, "filter", filter_args(MEMBER, ["node-1", "node-2", "node-0"]))
    assert reply["NodeNames"] == ["node-2"]
    assert client.get("/debug/gangs/default/mnist").json()["status"] == "admitted"


def test_capacity_freed_on_the_offered_nodes_plans_again(client: ListenerClient, state: ClusterState) -> None:
    refused(post(client, "filter", filter_args(MEMBER, FULL)), FULL)
    state.apply(Kind.POD, "MODIFIED", hog("node-0", phase="Succeeded"))
    reply = post(client, "filter", filter_args(MEMBER, FULL))
    assert reply["NodeNames"] == ["node-0"]


def test_unknown_node_names_then_the_real_nodes_admit_the_member(client: ListenerClient, clock: Clock) -> None:
    ghosts = ["ghost-a", "ghost-b"]
    refused(post(client, "filter", filter_args(MEMBER, ghosts)), ghosts)
    clock.now += 75
    reply = post(client, "filter", filter_args(MEMBER, NODES))
    assert reply["NodeNames"] in (["node-2"], ["node-3"])
    assert client.get("/debug/gangs/default/mnist").json()["status"] == "admitted"


def test_the_queue_and_explain_show_the_last_failure_with_where_it_was_tried(client: ListenerClient) -> None:
    """A view has no candidates at hand: it shows the last failure, and the member and nodes it was tried on."""
    reason = refused(post(client, "filter", filter_args(MEMBER, FULL)), FULL)
    (row,) = client.get("/debug/queue").json()["queue"]
    explained = client.get("/debug/explain/default/mnist").json()
    tried = "with default/mnist-worker-0 on the 2 nodes kube-scheduler offered it"
    assert (row["waitsFor"], row["why"]) == ("GangWaitingForRoom", reason)
    assert row["bestPlan"] == {"placed": 3, "needed": 4, "triedOn": tried}
    assert f"best plan found: places 3 of the 4 pods it needs, tried {tried}" in describe(explained)
