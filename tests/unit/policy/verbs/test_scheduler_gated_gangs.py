"""Gangs kube-scheduler gates itself (`scheduling.k8s.io` PodGroups with a gang policy): the extender plans,
steers and ranks them as any gang, but never turns a member away for the all-or-nothing barrier.

The standard gang of `test_gang`: TFJob `mnist`, 1 PS and 4 workers of 1 CPU, 2Gi, on three 4-CPU nodes,
here in the PodGroup `mnist` of `scheduling.k8s.io` (pods name it in `spec.schedulingGroup`).
"""

from __future__ import annotations

from dataclasses import replace

from extender.policy.core.settings import PolicySettings
from tests.builders import (
    Obj,
    in_scheduling_group,
    make_k8s_podgroup,
    make_node,
    make_pod,
    make_podgroup,
    make_tfjob,
    tfjob_pods,
)
from tests.unit.policy.loop import NOW, SETTINGS, Loop

NODES = ["node-0", "node-1", "node-2"]
OWN_BARRIER = replace(PolicySettings(), defer_to_scheduler_gang_barrier=False)
PLAN = {
    "default/mnist-ps-0": "node-0",
    "default/mnist-worker-0": "node-0",
    "default/mnist-worker-1": "node-0",
    "default/mnist-worker-2": "node-0",
    "default/mnist-worker-3": "node-1",
}


def mnist(*extra: Obj, workers: int = 4, min_count: int = 5, settings: PolicySettings = SETTINGS) -> Loop:
    return Loop(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *in_scheduling_group(tfjob_pods("mnist", ps=1, workers=workers, cpu="1", memory="2Gi"), "mnist"),
        make_k8s_podgroup("mnist", min_count=min_count),
        make_tfjob("mnist", workers=workers),
        *extra,
        settings=settings,
    )


def test_a_gated_gang_that_fits_is_planned_and_steered_like_any_gang() -> None:
    loop = mnist()
    decision = loop.filter("mnist-worker-3")
    assert (decision.outcome, decision.feasible) == ("planned", ("node-1",))
    assert {key: r.node for key, r in loop.snapshot.reservations.items()} == PLAN
    assert loop.filter("mnist-ps-0").feasible == ("node-0",)


def test_a_gated_gang_too_big_for_the_cluster_gets_plain_fit_and_kube_scheduler_decides() -> None:
    loop = mnist(workers=12, min_count=13)  # 13 CPU on 12
    decision = loop.filter("mnist-worker-0")
    assert (decision.outcome, decision.feasible, decision.model_behind) == ("fit", tuple(NODES), False)
    assert "kube-scheduler gates gang default/mnist (gang default/mnist needs 13 pods" in decision.summary
    assert loop.snapshot.reservations == {}
    assert loop.snapshot.failed_plans["default/mnist"].placed == 12, "the failed plan is still remembered"
    again = loop.filter("mnist-worker-1")
    assert (again.outcome, again.feasible) == ("fit", tuple(NODES)), "the remembered failure is no barrier either"


def test_with_its_own_barrier_the_extender_turns_the_same_gang_away() -> None:
    decision = mnist(workers=12, min_count=13, settings=OWN_BARRIER).filter("mnist-worker-0")
    assert (decision.outcome, decision.feasible) == ("unplannable", ())


def test_an_incomplete_gated_gang_is_not_held_back_by_the_extender() -> None:
    # kube-scheduler only lets members through once minCount exist: fewer in the model means it is behind
    loop = mnist(workers=2, min_count=5)
    decision = loop.filter("mnist-worker-0")
    assert (decision.outcome, decision.model_behind) == ("fit", True)
    assert "waiting for members to be created (default/mnist 3/5)" in decision.summary
    assert mnist(workers=2, min_count=5, settings=OWN_BARRIER).filter("mnist-worker-0").outcome == "waiting"


def test_a_gated_gang_still_yields_to_a_higher_ranked_one() -> None:
    # "high" (priority 10, 8 pods of 1 CPU) waits for 8 of the 12 CPU; mnist's 5 would leave it 7
    high = [make_pod(f"high-{i}", group="high", priority=10) for i in range(8)]
    loop = mnist(*high, make_k8s_podgroup("high", min_count=8), make_pod("busy", node="node-2", cpu="3"))
    decision = loop.filter("mnist-worker-0")
    assert decision.outcome == "yielding"
    assert "would delay higher-ranked gang default/high" in decision.summary


def test_a_basic_podgroup_is_a_group_of_one() -> None:
    loop = Loop(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *in_scheduling_group([make_pod("solo-0", group="solo")], "solo"),
        make_k8s_podgroup("solo", min_count=None),
        now=NOW,
    )
    decision = loop.filter("solo-0")
    assert decision.outcome == "planned"
    assert len(decision.feasible) == 1


def test_a_member_whose_podgroup_the_model_lacks_says_the_model_is_behind() -> None:
    # kube-scheduler asks about a pod naming a PodGroup in spec.schedulingGroup only once that PodGroup exists
    loop = Loop(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *in_scheduling_group(tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi"), "mnist"),
        make_tfjob("mnist", workers=4),
    )
    decision = loop.filter("mnist-worker-0")
    assert (decision.outcome, decision.model_behind) == ("waiting", True)
    assert "waiting for PodGroup default/mnist to be created" in decision.summary
    labelled = Loop(make_node("node-0", cpu="4", memory="16Gi"), make_pod("solo-0", group="solo"))
    assert labelled.filter("solo-0").model_behind is False, "a PodGroup label is the extender's own barrier"


def test_a_gated_gang_that_fits_only_in_room_reserved_for_another_is_turned_away() -> None:
    # "held" (a higher-priority PodGroup CRD gang of 2) is planned first: 2 CPU reserved on node-2, beside
    # "busy" (1 CPU); node-0 and node-1 run 3 CPU each. mnist's 5 pods find 1 + 1 + 1 CPU: it does not fit
    # whole. Plain fit would offer node-2 to each member (1 CPU free there), and kube-scheduler, which sees
    # node-2 with 3 CPU free and places every member of a cycle before any binds, would put three there.
    held = [make_pod(f"held-{i}", group="held", priority=10) for i in range(2)]
    busy = [make_pod(f"busy-{node}", node=node, cpu="3") for node in ("node-0", "node-1")]
    loop = mnist(*held, make_podgroup("held", min_member=2), *busy, make_pod("busy-node-2", node="node-2", cpu="1"))
    assert loop.filter("held-0").outcome == "planned"
    assert {r.node for key, r in loop.snapshot.reservations.items() if "held" in key} == {"node-2"}
    for member in ("mnist-worker-0", "mnist-worker-1"):
        decision = loop.filter(member)
        assert (decision.outcome, decision.feasible) == ("unplannable", ()), decision
        assert "room on these nodes is held for gang default/held" in decision.summary
    assert loop.snapshot.failed_plans["default/mnist"].placed == 3


def test_without_room_reserved_for_another_the_same_gang_gets_plain_fit() -> None:
    busy = [make_pod(f"busy-{node}", node=node, cpu="3") for node in NODES]
    decision = mnist(*busy).filter("mnist-worker-0")
    assert (decision.outcome, decision.feasible) == ("fit", tuple(NODES))


def test_an_incomplete_gated_gang_beside_room_reserved_for_another_waits_for_the_model() -> None:
    held = [make_pod(f"held-{i}", group="held", priority=10) for i in range(2)]
    loop = mnist(*held, make_podgroup("held", min_member=2), workers=2, min_count=5)
    assert loop.filter("held-0").outcome == "planned"
    decision = loop.filter("mnist-worker-0")
    assert (decision.outcome, decision.feasible, decision.model_behind) == ("waiting", (), True)
    assert "room on these nodes is held for gang default/held" in decision.summary
