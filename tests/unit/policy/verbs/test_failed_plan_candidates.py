"""`filter` remembers a failed gang plan for the candidate nodes it was planned from, and no others.

The member asked about is pinned to the call's candidates, so a plan that failed on some nodes says
nothing about more: it is reused for the same nodes in any order, or fewer, while neither capacity nor
membership changed; a call offering another node plans again. The cluster: four 4-CPU nodes, node-0 and
node-1 full; the gang `mnist` (a PS and three workers of 1 CPU, minMember 4) fits whole on node-2 or node-3.
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.gang.planner import plan_gang
from extender.policy.gang.state import gang_state, standing_failed_plan
from tests.builders import make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods
from tests.unit.policy.loop import Loop

NODES = ["node-0", "node-1", "node-2", "node-3"]
FULL = ["node-0", "node-1"]
NO_ROOM = "gang default/mnist needs 4 pods (4 × 1 CPU, 2 GiB); best plan fits 3"


def two_full_nodes() -> Loop:
    return Loop(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *(make_pod(f"hog-{node}", cpu="4", memory="4Gi", node=node, phase="Running") for node in FULL),
        *tfjob_pods("mnist", ps=1, workers=3, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=4),
        make_tfjob("mnist", workers=3),
    )


class PlanCounter:
    """Stands in for `plan_gang` where admission calls it, counting the plans made."""

    def __init__(self) -> None:
        self.plans = 0

    def __call__(self, snapshot: ClusterSnapshot, *args: Any, **kwargs: Any) -> Any:
        self.plans += 1
        return plan_gang(snapshot, *args, **kwargs)


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> PlanCounter:
    counting = PlanCounter()
    monkeypatch.setattr("extender.policy.rank.admission.plan_gang", counting)
    return counting


def test_a_failure_on_nodes_without_room_is_remembered_with_those_nodes() -> None:
    loop = two_full_nodes()
    decision = loop.filter("mnist-worker-0", FULL)
    assert (decision.outcome, decision.summary) == ("unplannable", NO_ROOM)
    memo = loop.snapshot.failed_plans["default/mnist"]
    assert memo.offered is not None
    assert (memo.offered.pod, memo.offered.nodes) == ("default/mnist-worker-0", frozenset(FULL))
    assert memo.tried_on == "with default/mnist-worker-0 on the 2 nodes kube-scheduler offered it"


def test_it_is_reused_for_the_same_nodes_in_another_order_and_for_fewer(counter: PlanCounter) -> None:
    loop = two_full_nodes()
    loop.filter("mnist-worker-0", FULL)
    planned = counter.plans
    again = loop.filter("mnist-worker-0", FULL[::-1])
    fewer = loop.filter("mnist-worker-1", ["node-1"])
    assert counter.plans == planned, "answered from the remembered failure"
    assert (again.outcome, again.summary, again.failed_plan) == ("unplannable", NO_ROOM, None)
    assert (fewer.outcome, fewer.failed) == ("unplannable", {"node-1": NO_ROOM})


def test_a_call_offering_a_node_outside_them_plans_again_and_is_admitted(counter: PlanCounter) -> None:
    loop = two_full_nodes()
    loop.filter("mnist-worker-0", FULL)
    planned = counter.plans
    decision = loop.filter("mnist-worker-0", ["node-1", "node-3", "node-0"])
    assert counter.plans > planned
    assert (decision.outcome, decision.feasible) == ("planned", ("node-3",))
    assert "default/mnist" not in loop.snapshot.failed_plans


def test_failing_again_on_more_nodes_remembers_those_nodes() -> None:
    loop = two_full_nodes()
    loop.filter("mnist-worker-0", ["node-0"])
    loop.filter("mnist-worker-0", FULL)
    memo = loop.snapshot.failed_plans["default/mnist"]
    assert memo.offered is not None and memo.offered.nodes == frozenset(FULL)


def test_unknown_node_names_then_the_real_nodes_admit_the_member() -> None:
    loop = two_full_nodes()
    first = loop.filter("mnist-worker-0", ["ghost-a", "ghost-b"])
    second = loop.filter("mnist-worker-0", NODES)
    assert first.outcome == "unplannable"
    assert second.outcome == "planned"
    assert second.feasible in (("node-2",), ("node-3",))


def test_capacity_freed_plans_again_on_the_same_nodes(counter: PlanCounter) -> None:
    loop = two_full_nodes()
    loop.filter("mnist-worker-0", FULL)
    planned = counter.plans
    loop.finish("hog-node-0")
    decision = loop.filter("mnist-worker-0", FULL)
    assert counter.plans > planned
    assert (decision.outcome, decision.feasible) == ("planned", ("node-0",))


def test_without_candidates_at_hand_the_last_failure_stands_whatever_nodes_it_was_tried_on() -> None:
    """The readers that plan the gang on the whole cluster (admission, backfill, the queue, `explain`)."""
    loop = two_full_nodes()
    loop.filter("mnist-worker-0", FULL)
    snapshot = loop.snapshot
    state = gang_state(snapshot, "default/mnist")
    memo = snapshot.failed_plans["default/mnist"]
    assert standing_failed_plan(snapshot, state) is memo
    assert standing_failed_plan(snapshot, state, ("node-1", "node-0")) is memo
    assert standing_failed_plan(snapshot, state, ("node-2",)) is None
