"""Gang admission through the `filter` verb's policy: plan, reserve, steer, remember failures, release.

The standard gang: TFJob `mnist` with 1 PS and 4 workers of 1 CPU, 2Gi each, PodGroup minMember 5, on three
nodes of 4 CPU, 16Gi. No node holds all 5 CPU, so the plan spreads: node-0 (first by name, all equally idle)
takes the PS and workers 0-2 (4 CPU), node-1 takes worker 3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from extender.policy.core.resources import CPU, MEMORY, PODS, Resources
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.gang.planner import plan_gang
from extender.policy.gang.state import gang_state
from tests.builders import Obj, make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods
from tests.unit.policy.loop import NOW, SETTINGS, Loop

GI = 2**30
NODES = ["node-0", "node-1", "node-2"]
PLAN = {
    "default/mnist-ps-0": "node-0",
    "default/mnist-worker-0": "node-0",
    "default/mnist-worker-1": "node-0",
    "default/mnist-worker-2": "node-0",
    "default/mnist-worker-3": "node-1",
}


def three_nodes(cpu: str = "4", memory: str = "16Gi") -> list[Obj]:
    return [make_node(name, cpu=cpu, memory=memory) for name in NODES]


def mnist(*extra: Obj, min_member: int = 5, workers: int = 4, timeout_s: int | None = None) -> Loop:
    return Loop(
        *three_nodes(),
        *tfjob_pods("mnist", ps=1, workers=workers, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=min_member, timeout_s=timeout_s),
        make_tfjob("mnist", workers=workers),
        *extra,
    )


def planned(loop: Loop) -> dict[str, str]:
    return {key: r.node for key, r in loop.snapshot.reservations.items()}


# -- a gang that fits ----------------------------------------------------------------------------------


def test_a_gang_that_fits_is_reserved_whole_and_the_pod_steered_to_its_planned_node() -> None:
    loop = mnist()
    decision = loop.filter("mnist-worker-3")
    reason = "gang default/mnist: planned 5 pods on 2 node(s); this pod on node-1"
    assert decision.outcome == "planned"
    assert decision.feasible == ("node-1",)
    assert decision.failed == {}
    assert decision.unresolvable == {"node-0": reason, "node-2": reason}
    assert {r.pod: r.node for r in decision.reserve} == PLAN
    assert {r.expires_at for r in decision.reserve} == {NOW + SETTINGS.default_plan_timeout_s}
    assert planned(loop) == PLAN
    # node-0 holds 4 planned pods of 1 CPU, 2Gi: all 4 CPU, 8Gi and 4 pod slots reserved, nothing left.
    node0 = loop.snapshot.nodes["node-0"]
    assert node0.reserved == Resources({CPU: 4000, MEMORY: 8 * GI, PODS: 4})
    assert node0.available.get(CPU) == 0


@pytest.mark.parametrize(
    ("pod", "node"),
    [
        pytest.param("mnist-ps-0", "node-0", id="the PS is steered to node-0"),
        pytest.param("mnist-worker-2", "node-0", id="worker 2 is steered to node-0 beside the PS"),
        pytest.param("mnist-worker-3", "node-1", id="worker 3 is steered to node-1"),
    ],
)
def test_planned_members_are_steered_without_replanning(pod: str, node: str) -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    decision = loop.filter(pod)
    reason = f"gang default/mnist: this pod is planned on {node}"
    assert decision.outcome == "steered"
    assert decision.feasible == (node,)
    assert decision.unresolvable == {other: reason for other in NODES if other != node}
    assert decision.failed == {}
    assert (decision.reserve, decision.release_groups, decision.failed_plan) == ((), (), None)


def test_plan_gang_directly_reserves_every_pending_member() -> None:
    snapshot = mnist().snapshot
    verdict = plan_gang(snapshot, gang_state(snapshot, "default/mnist"), SETTINGS, NOW)
    assert verdict.admitted
    assert verdict.gang == "default/mnist"
    assert {r.pod: r.node for r in verdict.reservations} == PLAN
    assert {r.group for r in verdict.reservations} == {"default/mnist"}


def test_a_pod_group_timeout_sets_the_plan_lifetime() -> None:
    loop = mnist(timeout_s=30)
    decision = loop.filter("mnist-ps-0")
    assert {r.expires_at for r in decision.reserve} == {NOW + 30}


# -- a gang that does not fit --------------------------------------------------------------------------

NINE = "gang default/mnist needs 9 pods (9 × 2 CPU, 4 GiB); best plan fits 6"


def nine_of_two_cpus(*extra: Obj) -> Loop:
    """9 pods of 2 CPU, 4Gi on three 4 CPU nodes: 2 per node, so 6 of 9 fit."""
    return Loop(
        *three_nodes(),
        *tfjob_pods("mnist", ps=1, workers=8, cpu="2", memory="4Gi"),
        make_podgroup("mnist", min_member=9),
        make_tfjob("mnist", workers=8),
        *extra,
    )


def test_a_gang_that_does_not_fit_reserves_nothing_and_fails_every_node_with_the_reason() -> None:
    loop = nine_of_two_cpus()
    decision = loop.filter("mnist-worker-0")
    assert decision.outcome == "unplannable"
    assert decision.summary == NINE
    assert decision.feasible == ()
    assert decision.failed == dict.fromkeys(NODES, NINE)
    assert decision.unresolvable == {}
    assert decision.reserve == ()
    assert decision.failed_plan is not None
    assert (decision.failed_plan.placed, decision.failed_plan.needed) == (6, 9)
    assert loop.snapshot.reservations == {}


def test_the_failure_reason_counts_each_distinct_request() -> None:
    # A 1 CPU PS and 8 workers of 2 CPU: 1 + 8 × 2 = 17 CPU on 12; the PS and 5 workers fit (1 + 10 = 11).
    loop = Loop(
        *three_nodes(),
        *tfjob_pods("mnist", ps=1, workers=8, cpu="2", ps_cpu="1", memory="4Gi"),
        make_podgroup("mnist", min_member=9),
    )
    decision = loop.filter("mnist-ps-0")
    assert decision.summary == "gang default/mnist needs 9 pods (8 × 2 CPU, 4 GiB + 1 × 1 CPU, 4 GiB); best plan fits 6"


# -- a gang still being created ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        pytest.param(
            [*tfjob_pods("mnist", ps=1, workers=2), make_podgroup("mnist", min_member=5)],
            "gang default/mnist: waiting for members to be created (default/mnist 3/5)",
            id="3 of 5 members created: waiting for members",
        ),
        pytest.param(
            tfjob_pods("mnist", ps=1, workers=4),
            "gang default/mnist: waiting for PodGroup default/mnist to be created",
            id="members created before their PodGroup: waiting for the PodGroup",
        ),
    ],
)
def test_a_partially_created_gang_waits_unresolvably_and_reserves_nothing(objects: list[Obj], reason: str) -> None:
    loop = Loop(*three_nodes(), *objects)
    decision = loop.filter("mnist-ps-0")
    assert decision.outcome == "waiting"
    assert decision.feasible == ()
    assert decision.failed == {}
    assert decision.unresolvable == dict.fromkeys(NODES, reason)
    assert (decision.reserve, decision.failed_plan) == ((), None)
    assert loop.snapshot.reservations == {}


def test_a_gang_waiting_for_members_is_planned_once_the_last_one_arrives() -> None:
    loop = Loop(*three_nodes(), *tfjob_pods("mnist", ps=1, workers=4)[:4], make_podgroup("mnist", min_member=5))
    assert loop.filter("mnist-ps-0").outcome == "waiting"
    loop.add(tfjob_pods("mnist", ps=1, workers=4)[4])
    assert loop.filter("mnist-ps-0").outcome == "planned"
    assert len(loop.snapshot.reservations) == 5


# -- GangGroups ----------------------------------------------------------------------------------------

GANG = ["default/a", "default/b"]


def legacy_members(job: str, count: int, cpu: str) -> list[Obj]:
    """Pods labelled in the `scheduling.sigs.k8s.io` dialect (`pod-group.scheduling.sigs.k8s.io: <job>`)."""
    return [
        make_pod(f"{job}-worker-{i}", cpu=cpu, group=job, legacy_group=True, job=job, role="worker", index=i)
        for i in range(count)
    ]


def gang_group(b_cpu: str, b_created: int = 3) -> Loop:
    """PodGroups a (2 of 1 CPU) and b (3 of `b_cpu`), linked by the Koordinator annotation, on 2 × 4 CPU."""
    return Loop(
        make_node("node-0", cpu="4", memory="16Gi"),
        make_node("node-1", cpu="4", memory="16Gi"),
        make_podgroup("a", min_member=2, legacy=True, gang_group=GANG),
        make_podgroup("b", min_member=3, legacy=True, gang_group=GANG),
        *legacy_members("a", 2, "1"),
        *legacy_members("b", 3, b_cpu)[:b_created],
    )


def test_the_legacy_dialect_is_read_and_the_gang_group_linked() -> None:
    snapshot = gang_group("1").snapshot
    assert snapshot.groups["default/a"].api_group == "scheduling.sigs.k8s.io"
    assert snapshot.groups["default/a"].gang_group == tuple(GANG)
    assert snapshot.group_members["default/b"] == {f"default/b-worker-{i}" for i in range(3)}


def test_a_gang_group_that_fits_is_reserved_across_both_pod_groups() -> None:
    # 2 × 1 CPU + 3 × 1 CPU = 5 CPU on 8.
    loop = gang_group("1")
    decision = loop.filter("a-worker-0")
    assert decision.outcome == "planned"
    assert decision.summary.startswith("gang default/a,default/b: planned 5 pods")
    assert {r.group for r in decision.reserve} == set(GANG)
    assert len(loop.snapshot.reservations) == 5
    assert loop.filter("b-worker-2").outcome == "steered"


def test_a_gang_group_is_all_or_nothing_even_when_one_pod_group_would_fit_alone() -> None:
    # b needs 3 × 3 CPU: one per 4 CPU node, so only 2 of b fit; a's 2 × 1 CPU fit beside them.
    loop = gang_group("3")
    decision = loop.filter("a-worker-0")
    reason = "gang default/a,default/b needs 5 pods (3 × 3 CPU, 1 GiB + 2 × 1 CPU, 1 GiB); best plan fits 4"
    assert decision.outcome == "unplannable"
    assert decision.failed == dict.fromkeys(["node-0", "node-1"], reason)
    assert loop.snapshot.reservations == {}
    # The other PodGroup's members are answered from the same remembered gang failure.
    assert loop.filter("b-worker-0").summary == reason


def test_a_gang_group_waits_for_the_members_of_every_pod_group() -> None:
    loop = gang_group("1", b_created=2)
    decision = loop.filter("a-worker-0")
    assert decision.outcome == "waiting"
    assert decision.summary == "gang default/a,default/b: waiting for members to be created (default/b 2/3)"
    assert loop.snapshot.reservations == {}


def test_a_vanished_member_voids_the_plan_of_the_whole_gang_group() -> None:
    loop = gang_group("1")
    loop.filter("a-worker-0")
    loop.delete("b-worker-1")
    # Were a's reservations kept, a's pods would be steered and bind while b can no longer start.
    assert loop.snapshot.reservations == {}
    assert loop.filter("a-worker-0").outcome == "waiting"


# -- expiry --------------------------------------------------------------------------------------------


def test_an_expired_plan_is_released_and_the_gang_replans() -> None:
    loop = mnist(timeout_s=30)
    loop.filter("mnist-worker-0")  # planned at NOW, expires at NOW + 30
    before = loop.snapshot
    assert loop.state.release_expired(NOW + 29.9) == 0
    assert loop.snapshot is before
    assert loop.state.release_expired(NOW + 30) == 5
    after = loop.snapshot
    assert after.reservations == {}
    assert after.capacity_generation > before.capacity_generation
    assert after.nodes["node-0"].reserved.is_empty()
    loop.now = NOW + 45
    decision = loop.filter("mnist-ps-0")
    assert decision.outcome == "planned"
    assert {r.expires_at for r in decision.reserve} == {NOW + 45 + 30}


def test_the_loop_releases_an_expired_plan_before_filtering() -> None:
    loop = mnist(timeout_s=30)
    loop.filter("mnist-worker-0")
    loop.bind("mnist-ps-0", "node-0")
    loop.now = NOW + 31
    # The plan of the 4 unbound pods expired: they are planned afresh around the PS bound on node-0.
    decision = loop.filter("mnist-worker-3")
    assert decision.outcome == "planned"
    assert {r.pod for r in decision.reserve} == set(PLAN) - {"default/mnist-ps-0"}


# -- members vanishing or binding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "vanish",
    [
        pytest.param(lambda loop: loop.delete("mnist-worker-1"), id="a planned member is deleted"),
        pytest.param(lambda loop: loop.terminate("mnist-worker-1"), id="a planned member starts terminating"),
        pytest.param(lambda loop: loop.finish("mnist-worker-1", "Failed"), id="a planned member fails"),
    ],
)
def test_a_vanishing_member_releases_its_gangs_plan(vanish: Callable[[Loop], Any]) -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    before = loop.snapshot
    vanish(loop)
    after = loop.snapshot
    assert after.reservations == {}
    assert after.capacity_generation > before.capacity_generation
    assert loop.filter("mnist-ps-0").summary == (
        "gang default/mnist: waiting for members to be created (default/mnist 4/5)"
    )


def test_binding_on_the_planned_node_consumes_the_reservation() -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    before = loop.snapshot
    loop.bind("mnist-worker-3", "node-1")
    after = loop.snapshot
    assert planned(loop) == {k: v for k, v in PLAN.items() if k != "default/mnist-worker-3"}
    # Reserved turned into requested on node-1: its free capacity did not grow.
    assert after.nodes["node-1"].reserved.is_empty()
    assert after.nodes["node-1"].requested == Resources({CPU: 1000, MEMORY: 2 * GI, PODS: 1})
    assert after.nodes["node-1"].available == before.nodes["node-1"].available
    assert after.capacity_generation == before.capacity_generation


def test_binding_elsewhere_drops_the_reservation_and_frees_the_planned_node() -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    before = loop.snapshot
    loop.bind("mnist-worker-3", "node-2")
    after = loop.snapshot
    assert planned(loop) == {k: v for k, v in PLAN.items() if k != "default/mnist-worker-3"}
    assert after.nodes["node-1"].available.get(CPU) == 4000
    assert after.nodes["node-2"].available.get(CPU) == 3000
    assert after.capacity_generation > before.capacity_generation
    # The gang stays admitted: the other four keep their places.
    assert loop.filter("mnist-ps-0").outcome == "steered"


# -- the failed-plan memo ------------------------------------------------------------------------------


def no_planning(*args: object, **kwargs: object) -> Any:
    raise AssertionError("plan_gang was called; the remembered failure should have answered")


def test_a_failed_plan_is_remembered_and_reused_while_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = nine_of_two_cpus()
    first = loop.filter("mnist-worker-0")
    snapshot = loop.snapshot
    memo = snapshot.failed_plans["default/mnist"]
    assert memo.reason == NINE
    assert memo.capacity_generation == snapshot.capacity_generation
    assert memo.at == NOW
    monkeypatch.setattr("extender.policy.rank.admission.plan_gang", no_planning)
    second = loop.filter("mnist-worker-5")
    assert second.summary == first.summary == NINE
    assert second.outcome == "unplannable"
    assert second.failed == dict.fromkeys(NODES, NINE)
    assert second.failed_plan is None


def test_planning_happens_again_once_a_pod_finishes_and_capacity_grows() -> None:
    # Four 4 CPU nodes, one full with a 4 CPU pod: 8 pods of 2 CPU need all four; 6 fit on the other three.
    hog = make_pod("hog", cpu="4", node="node-3", phase="Running")
    loop = Loop(
        *three_nodes(),
        make_node("node-3", cpu="4", memory="16Gi"),
        hog,
        *tfjob_pods("mnist", ps=1, workers=7, cpu="2", memory="4Gi"),
        make_podgroup("mnist", min_member=8),
    )
    first = loop.filter("mnist-worker-0")
    assert first.summary == "gang default/mnist needs 8 pods (8 × 2 CPU, 4 GiB); best plan fits 6"
    generation = loop.snapshot.capacity_generation
    loop.finish("hog")
    assert loop.snapshot.capacity_generation > generation
    second = loop.filter("mnist-worker-0")
    assert second.outcome == "planned"
    assert len(loop.snapshot.reservations) == 8
    assert "default/mnist" not in loop.snapshot.failed_plans


def test_a_membership_change_forces_a_new_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = nine_of_two_cpus()
    loop.filter("mnist-worker-0")
    calls: list[str] = []

    def counting(snapshot: ClusterSnapshot, *args: Any, **kwargs: Any) -> Any:
        calls.append("plan")
        return plan_gang(snapshot, *args, **kwargs)

    monkeypatch.setattr("extender.policy.rank.admission.plan_gang", counting)
    loop.filter("mnist-worker-1")
    assert calls == []
    loop.delete("mnist-worker-7")  # 8 left of minMember 9: the memo no longer applies
    decision = loop.filter("mnist-worker-1")
    assert calls == ["plan"]
    assert decision.outcome == "waiting"


# -- reservations seen by everyone else ----------------------------------------------------------------


def test_reserved_capacity_counts_as_used_for_a_plain_pod() -> None:
    loop = mnist(make_pod("plain", cpu="1", memory="1Gi"))
    loop.filter("mnist-worker-0")
    decision = loop.filter("plain")
    # node-0: 4 CPU all reserved; node-1: 4 - 1 reserved = 3 CPU free; node-2: 4 CPU free.
    assert decision.outcome == "fit"
    assert decision.feasible == ("node-1", "node-2")
    assert decision.failed == {"node-0": "insufficient cpu"}
    assert decision.summary == "2/3 nodes fit 1 CPU, 1 GiB"


def test_a_node_full_of_reservations_rejects_everything() -> None:
    loop = mnist(make_pod("tiny", cpu="100m", memory="1Mi"))
    loop.filter("mnist-worker-0")
    assert loop.filter("tiny", ["node-0"]).failed == {"node-0": "insufficient cpu"}


def test_a_satisfied_gangs_extra_member_gets_plain_fit() -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    loop.add(make_pod("mnist-worker-4", cpu="1", memory="2Gi", group="mnist", job="mnist", role="worker", index=4))
    decision = loop.filter("mnist-worker-4")
    assert decision.outcome == "fit"
    assert decision.reserve == ()
    # The extra member must not take its own gang's reserved places: node-0 is all reserved.
    assert decision.feasible == ("node-1", "node-2")
    assert decision.failed == {"node-0": "insufficient cpu"}


def test_a_surplus_member_waits_for_room_beyond_the_gangs_minimum() -> None:
    # minMember 3 of 5 pods, one 4 CPU node: the PS and workers 0-2 are planned, worker 3 does not fit.
    loop = Loop(
        make_node("node-0", cpu="4", memory="16Gi"),
        *tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=3),
    )
    decision = loop.filter("mnist-worker-3")
    reason = (
        "gang default/mnist: planned 4 pods on 1 node(s); this surplus member waits for room beyond the gang's minimum"
    )
    assert decision.outcome == "waiting"
    assert decision.failed == {"node-0": reason}
    assert len(decision.reserve) == 4
    # Asked again, the gang is satisfied: plain fit, which must still see node-0 as full.
    again = loop.filter("mnist-worker-3")
    assert again.outcome == "no-fit"
    assert again.failed == {"node-0": "insufficient cpu"}


# -- steering when kube-scheduler no longer offers the planned node ------------------------------------


def test_a_planned_node_no_longer_offered_replans_with_the_pod_pinned_to_what_is_offered() -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")  # the PS is planned on node-0
    decision = loop.filter("mnist-ps-0", ["node-1", "node-2"])
    # Own reservations are handed back; node-0 (first by name) takes the 4 workers, the PS goes to node-1.
    assert decision.outcome == "planned"
    assert decision.release_groups == ("default/mnist",)
    assert decision.feasible == ("node-1",)
    assert planned(loop) == {
        "default/mnist-ps-0": "node-1",
        **{f"default/mnist-worker-{i}": "node-0" for i in range(4)},
    }


def test_a_replan_that_fails_releases_the_old_plan() -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    decision = loop.filter("mnist-ps-0", ["node-9"])  # a node the model does not know
    assert decision.outcome == "unplannable"
    assert decision.release_groups == ("default/mnist",)
    assert decision.failed == {"node-9": "gang default/mnist needs 5 pods (5 × 1 CPU, 2 GiB); best plan fits 4"}
    assert loop.snapshot.reservations == {}


# -- pods the gang logic does not concern --------------------------------------------------------------


def test_pods_of_other_schedulers_pass_through() -> None:
    loop = mnist(make_pod("other", cpu="64", scheduler="default-scheduler"))
    decision = loop.filter("other")
    assert decision.outcome == "passthrough"
    assert decision.feasible == tuple(NODES)
    assert (decision.failed, decision.unresolvable) == ({}, {})


def test_an_ungrouped_pod_on_a_node_the_model_lacks_is_unresolvable() -> None:
    loop = mnist(make_pod("plain", cpu="3"))
    decision = loop.filter("plain", ["node-0", "ghost"])
    assert decision.feasible == ("node-0",)
    assert decision.unresolvable == {"ghost": "node is not in the extender's cluster model yet"}


def test_a_bound_member_that_vanishes_voids_the_plan_of_the_members_still_waiting() -> None:
    loop = mnist()
    loop.filter("mnist-worker-0")
    loop.bind("mnist-worker-3", "node-1")
    loop.delete("mnist-worker-3")
    decision = loop.filter("mnist-ps-0")
    assert decision.outcome == "waiting"
    assert not decision.feasible
    assert loop.snapshot.reservations == {}, "the others must not bind into a gang that cannot reach its minimum"
