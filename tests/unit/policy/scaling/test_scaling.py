"""Elastic scaling planners: scale-out into idle capacity, KOD2 scale-in for a waiting gang, consolidation."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import Role
from extender.policy.preemption.scale_in import plan_scale_in
from extender.policy.preemption.search import PreemptionRefusal
from extender.policy.preemption.victims import PreemptionPlan
from extender.policy.rank.ranking import gang_rank
from extender.policy.scaling.consolidation import plan_consolidation
from extender.policy.scaling.scale_out import ActionKind, ScalingPlan, plan_scale_out
from tests.builders import (
    Obj,
    cpu_nodes,
    make_node,
    make_pod,
    make_podgroup,
    make_sized_tfjob,
    placed_job,
    snapshot,
    waiting_job,
)

NOW = 1_772_363_100.0
"""2026-03-01T11:05:00Z: five minutes after the waiting gangs arrived (none is starving)."""
WAITING_SINCE = "2026-03-01T11:00:00Z"
"""When the waiting gangs of these tests arrived."""
SETTINGS = PolicySettings()
NEVER: dict[str, float] = {}


def kinds(plan: ScalingPlan) -> list[tuple[ActionKind, str, int, int]]:
    return [(a.kind, a.job, a.replicas_from, a.replicas_to) for a in plan.actions]


# -- scale-out --------------------------------------------------------------------------------------------


def test_a_running_job_grows_by_the_step_onto_its_ps_node_first() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    plan = plan_scale_out(snap, SETTINGS, NOW, NEVER)
    assert kinds(plan) == [(ActionKind.SCALE_OUT, "default/a", 2, 4)]
    action = plan.actions[0]
    assert action.pods == ("default/a-worker-2", "default/a-worker-3")
    assert [(r.pod, r.node, r.group) for r in action.placements] == [
        ("default/a-worker-2", "node-0", "default/a"),
        ("default/a-worker-3", "node-0", "default/a"),
    ]
    assert "from 2 to 4 workers" in action.reason


def test_growth_stops_at_the_maximum() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=3))
    assert kinds(plan_scale_out(snap, SETTINGS, NOW, NEVER)) == [(ActionKind.SCALE_OUT, "default/a", 2, 3)]
    full = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=2))
    assert plan_scale_out(full, SETTINGS, NOW, NEVER).actions == ()


def test_growth_is_limited_by_idle_capacity() -> None:
    # node-0: PS + 3 workers = 4 CPU full; node-1: 1 worker, 3 CPU idle
    snap = snapshot(*cpu_nodes(2), *placed_job("a", placement=["node-0", "node-0", "node-0", "node-0", "node-1"]))
    plan = plan_scale_out(snap, PolicySettings(scale_out_step=10), NOW, NEVER)
    assert [r.node for r in plan.actions[0].placements] == ["node-1"] * 3


def test_higher_rank_grows_first_and_the_next_job_gets_only_what_is_left() -> None:
    # "big" needs 2 CPU per worker (lower weight); "small" 1 CPU per worker: small ranks higher
    snap = snapshot(
        *cpu_nodes(2, cpu="8"),
        *placed_job("small", placement=["node-0", "node-0"]),
        *placed_job("big", placement=["node-1", "node-1"], cpu="2", created="2026-03-01T09:00:00Z"),
    )
    plan = plan_scale_out(snap, PolicySettings(scale_out_step=4), NOW, NEVER)
    assert kinds(plan) == [(ActionKind.SCALE_OUT, "default/small", 1, 5), (ActionKind.SCALE_OUT, "default/big", 1, 4)]
    assert [r.node for r in plan.actions[0].placements] == ["node-0"] * 4
    assert [r.node for r in plan.actions[1].placements] == ["node-1", "node-1", "node-0"]


def test_the_next_workers_go_to_the_job_they_help_most_not_to_the_heaviest() -> None:
    """Three idle CPU. "wide" runs 3 workers and weighs more (more minimum workers per share); "narrow"
    runs 1 worker of the same size, so one more worker cuts its time by half against a quarter: it grows
    first. Ranked by weight alone (KOD2's heaviest first), "wide" would take the room."""
    objects = [
        make_node("node-0", cpu="5", memory="64Gi"),
        make_node("node-1", cpu="4", memory="64Gi"),
        *placed_job("wide", placement=["node-0"] * 4, min_workers=3),
        *placed_job("narrow", placement=["node-1"] * 2),
    ]
    by_weight = PolicySettings(size_class_ratio=1.0)
    assert gang_rank(snapshot(*objects), "default/wide", NOW, by_weight).outranks(
        gang_rank(snapshot(*objects), "default/narrow", NOW, by_weight)
    )
    plan = plan_scale_out(snapshot(*objects), by_weight, NOW, NEVER)
    assert kinds(plan) == [(ActionKind.SCALE_OUT, "default/narrow", 1, 3), (ActionKind.SCALE_OUT, "default/wide", 3, 4)]
    heaviest_first = replace(by_weight, scale_out_by_gain=False)
    plan = plan_scale_out(snapshot(*objects), heaviest_first, NOW, NEVER)
    assert kinds(plan) == [(ActionKind.SCALE_OUT, "default/wide", 3, 5), (ActionKind.SCALE_OUT, "default/narrow", 1, 2)]


def test_a_job_without_dynamic_workers_is_left_alone_with_a_reason() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], dynamic=False))
    plan = plan_scale_out(snap, SETTINGS, NOW, NEVER)
    assert plan.actions == ()
    assert plan.skipped == (
        ("default/a", "left alone: it declares elastic worker bounds but not enableDynamicWorker: true"),
    )


def test_a_job_in_its_cooldown_does_not_grow() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"]))
    assert plan_scale_out(snap, SETTINGS, NOW, {"default/a": NOW - 5}).actions == ()
    assert plan_scale_out(snap, SETTINGS, NOW, {"default/a": NOW - SETTINGS.scale_cooldown_s}).actions != ()


def test_a_job_with_a_pending_worker_does_not_grow() -> None:
    objects = placed_job("a", placement=["node-0", "node-1", "node-2"])
    objects.append(make_pod("a-worker-2", job="a", role="worker", index=2, group="a"))
    snap = snapshot(*cpu_nodes(3), *objects)
    assert plan_scale_out(snap, SETTINGS, NOW, NEVER).actions == ()


def test_a_job_does_not_grow_while_a_higher_ranked_gang_waits_for_room() -> None:
    # 12 CPU; "a" holds 3, 9 idle; the urgent gang needs 10 single-CPU pods and outranks "a"
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("a", placement=["node-0", "node-1", "node-2"]),
        *waiting_job("urgent", pods=10, priority=100, declare_bounds=True, created=WAITING_SINCE),
    )
    plan = plan_scale_out(snap, SETTINGS, NOW, NEVER)
    assert plan.actions == ()
    assert plan.skipped == (("default/a", "not scaled out: gang default/urgent ranked above it waits for room"),)


def test_growth_never_takes_the_room_of_a_waiting_gang_that_fits_now() -> None:
    # 8 CPU; "a" holds 3; "later" (lower-ranked: 4 CPU pods) fits in the 5 idle CPU, and keeps fitting only
    # if "a" takes at most 1
    snap = snapshot(
        *cpu_nodes(2),
        *placed_job("a", placement=["node-0", "node-0", "node-0"]),
        *waiting_job("later", pods=1, cpu="4", priority=0, declare_bounds=True, created=WAITING_SINCE),
    )
    plan = plan_scale_out(snap, SETTINGS, NOW, NEVER)
    assert plan.actions == ()
    assert plan.skipped == (("default/a", "not scaled out: the room is needed by a waiting gang that fits now"),)


def test_a_job_ranked_above_every_waiting_gang_grows_into_room_they_cannot_use() -> None:
    # the waiting gang needs more than the whole cluster: it never blocks growth
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("a", placement=["node-0", "node-1", "node-2"]),
        *waiting_job("huge", pods=20, declare_bounds=True, created=WAITING_SINCE),
    )
    assert kinds(plan_scale_out(snap, SETTINGS, NOW, NEVER)) == [(ActionKind.SCALE_OUT, "default/a", 2, 4)]


# -- scale-in ---------------------------------------------------------------------------------------------

FULL = ["node-0", *(f"node-{(i + 1) % 3}" for i in range(11))]
"""A PS and 11 workers filling three 4-CPU nodes."""


def test_scale_in_takes_at_most_the_step_highest_indices_first() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("light", placement=FULL, min_workers=3),
        *waiting_job("heavy", pods=2, declare_bounds=True, created=WAITING_SINCE),
    )
    plan = plan_scale_in(snap, "default/heavy", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.scale_ins == {"default/light": 9}
    assert sorted(pod.index for pod in plan.victims) == [9, 10]
    assert plan.evicted == ()


def test_scale_in_stops_as_soon_as_the_gang_fits() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("light", placement=FULL, min_workers=3),
        *waiting_job("heavy", pods=1, declare_bounds=True, created=WAITING_SINCE),
    )
    plan = plan_scale_in(snap, "default/heavy", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan)
    assert plan.scale_ins == {"default/light": 10}


def test_scale_in_beyond_the_step_is_refused() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("light", placement=FULL, min_workers=3),
        *waiting_job("heavy", pods=4, declare_bounds=True, created=WAITING_SINCE),
    )
    assert isinstance(plan_scale_in(snap, "default/heavy", SETTINGS, NOW), PreemptionRefusal)
    wider = PolicySettings(scale_in_step=4)
    plan = plan_scale_in(snap, "default/heavy", wider, NOW)
    assert isinstance(plan, PreemptionPlan) and plan.scale_ins == {"default/light": 7}


def test_scale_in_never_goes_below_the_minimum() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("light", placement=FULL, min_workers=10),
        *waiting_job("heavy", pods=2, declare_bounds=True, created=WAITING_SINCE),
    )
    assert isinstance(plan_scale_in(snap, "default/heavy", SETTINGS, NOW), PreemptionRefusal)


def test_scale_in_leaves_jobs_without_dynamic_workers_alone() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *placed_job("light", placement=FULL, min_workers=3, dynamic=False),
        *waiting_job("heavy", pods=2, declare_bounds=True, created=WAITING_SINCE),
    )
    assert isinstance(plan_scale_in(snap, "default/heavy", SETTINGS, NOW), PreemptionRefusal)


def test_an_equal_ranked_job_is_exempt() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("light", placement=FULL, min_workers=3), *waiting_twin())
    refusal = plan_scale_in(snap, "default/twin", PolicySettings(scale_in_step=8), NOW)
    assert isinstance(refusal, PreemptionRefusal), "equal weight, earlier arrival: never scaled in"


def waiting_twin() -> list[Obj]:
    """A waiting job with exactly the weight of `light` (same minimum demand), arrived later."""
    members = [make_pod(f"twin-worker-{i}", job="twin", role="worker", index=i, group="twin") for i in range(2)]
    members.append(make_pod("twin-ps-0", job="twin", role="ps", group="twin"))
    job = make_sized_tfjob("twin", workers=3, min_workers=3, max_workers=3, created="2026-03-01T11:00:00Z")
    return [*members, make_podgroup("twin", min_member=3), job]


def test_the_lowest_ranked_job_is_scaled_in_first() -> None:
    # both elastic and full: "costly" (2 CPU workers) ranks below "cheap"
    placement_cheap = ["node-0", "node-0", "node-0", "node-0", "node-0"]
    placement_costly = ["node-1", "node-1", "node-2", "node-2"]
    snap = snapshot(
        *cpu_nodes(3, cpu="5"),
        *placed_job("cheap", placement=placement_cheap, min_workers=1),
        *placed_job("costly", placement=placement_costly, min_workers=1, cpu="2"),
        *waiting_job("urgent", pods=1, priority=100, cpu="2", declare_bounds=True, created=WAITING_SINCE),
    )
    plan = plan_scale_in(snap, "default/urgent", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan), plan
    assert list(plan.scale_ins) == ["default/costly"]


# -- consolidation ----------------------------------------------------------------------------------------


def test_a_worker_away_from_its_ps_moves_onto_the_ps_node() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-0", "node-1", "node-2"]))
    plan = plan_consolidation(snap, SETTINGS, NOW, NEVER, NEVER)
    assert len(plan.actions) == 1, "one worker per job per interval"
    action = plan.actions[0]
    assert action.kind is ActionKind.MIGRATE and action.replicas_from == action.replicas_to == 3
    assert action.pods == ("default/a-worker-1",) or action.pods == ("default/a-worker-2",)
    assert [r.node for r in action.placements] == ["node-0"]


def test_consolidation_respects_budget_interval_switch_and_worker_zero() -> None:
    snap = snapshot(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"]))
    two = PolicySettings(consolidation_budget=2)
    assert [a.pods for a in plan_consolidation(snap, two, NOW, NEVER, NEVER).actions] == [("default/a-worker-1",)]
    assert plan_consolidation(snap, two, NOW, NEVER, {"default/a": NOW - 10}).actions == ()
    off = PolicySettings(consolidation_enabled=False)
    assert plan_consolidation(snap, off, NOW, NEVER, NEVER).actions == ()


def test_a_job_beside_its_ps_or_without_room_there_stays() -> None:
    together = snapshot(*cpu_nodes(2), *placed_job("a", placement=["node-0", "node-0", "node-0"]))
    assert plan_consolidation(together, SETTINGS, NOW, NEVER, NEVER).actions == ()
    crowded = snapshot(*cpu_nodes(2), *placed_job("a", placement=["node-0", "node-0", "node-0", "node-0", "node-1"]))
    assert plan_consolidation(crowded, SETTINGS, NOW, NEVER, NEVER).actions == ()


# -- properties -------------------------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> tuple[ClusterSnapshot, PolicySettings]:
    node_count = draw(st.integers(min_value=1, max_value=4))
    names = [f"node-{i}" for i in range(node_count)]
    objects: list[Obj] = list(cpu_nodes(node_count, cpu="6"))
    free = dict.fromkeys(names, 6)
    for j in range(draw(st.integers(min_value=1, max_value=3))):
        workers = draw(st.integers(min_value=1, max_value=5))
        placement = []
        for _ in range(workers + 1):
            candidates = [name for name in names if free[name] >= 1]
            if not candidates:
                break
            node = draw(st.sampled_from(candidates))
            free[node] -= 1
            placement.append(node)
        if len(placement) < 2:
            break
        low = draw(st.integers(min_value=0, max_value=len(placement) - 1))
        high = draw(st.integers(min_value=len(placement) - 1, max_value=10))
        objects += placed_job(
            f"job{j}",
            placement=placement,
            min_workers=low,
            max_workers=high,
            dynamic=draw(st.booleans()),
            created=f"2026-03-01T10:0{j}:00Z",
        )
    if draw(st.booleans()):
        objects += waiting_job(
            "gang",
            pods=draw(st.integers(min_value=1, max_value=8)),
            priority=draw(st.sampled_from([0, 100])),
            declare_bounds=True,
            created=WAITING_SINCE,
        )
    tuned = PolicySettings(
        scale_out_step=draw(st.integers(min_value=1, max_value=4)),
        scale_in_step=draw(st.integers(min_value=1, max_value=4)),
        consolidation_budget=draw(st.integers(min_value=1, max_value=3)),
    )
    return snapshot(*objects), tuned


@given(clusters())
@settings(max_examples=150, deadline=None)
def test_scale_out_respects_bounds_steps_and_capacity(case: tuple[ClusterSnapshot, PolicySettings]) -> None:
    snap, tuned = case
    plan = plan_scale_out(snap, tuned, NOW, NEVER)
    used: dict[str, Resources] = {}
    for action in plan.actions:
        job = snap.jobs[action.job]
        assert job.enable_dynamic_worker
        assert action.replicas_from == job.replicas[Role.WORKER]
        assert action.replicas_from < action.replicas_to <= job.max_workers
        assert action.replicas_to - action.replicas_from <= tuned.scale_out_step
        assert len(action.placements) == action.replicas_to - action.replicas_from
        for reservation in action.placements:
            used[reservation.node] = used.get(reservation.node, EMPTY) + reservation.requests
    for node, taken in used.items():
        assert taken.fits_in(snap.nodes[node].available)
    assert plan_scale_out(snap, tuned, NOW, NEVER) == plan, "deterministic on one snapshot"


@given(clusters())
@settings(max_examples=150, deadline=None)
def test_scale_in_never_below_min_never_ps_worker_zero_within_step(
    case: tuple[ClusterSnapshot, PolicySettings],
) -> None:
    snap, tuned = case
    if "default/gang" not in snap.groups:
        return
    plan = plan_scale_in(snap, "default/gang", tuned, NOW)
    if not isinstance(plan, PreemptionPlan):
        return
    assert plan.evicted == ()
    for job_key, replicas in plan.scale_ins.items():
        job = snap.jobs[job_key]
        assert job.enable_dynamic_worker
        assert replicas >= max(job.min_workers, 1)
        assert job.replicas[Role.WORKER] - replicas <= tuned.scale_in_step
    for pod in plan.victims:
        assert pod.role is Role.WORKER and pod.index > 0
        assert pod.index >= plan.scale_ins[pod.job], "exactly the highest indices training-operator removes"


@given(clusters())
@settings(max_examples=150, deadline=None)
def test_what_grows_is_never_what_a_waiting_gang_would_shrink(case: tuple[ClusterSnapshot, PolicySettings]) -> None:
    """No oscillation: on one snapshot, a job the scaler grows is never a scale-in victim of a waiting gang."""
    snap, tuned = case
    grown = {action.job for action in plan_scale_out(snap, tuned, NOW, NEVER).actions}
    if "default/gang" in snap.groups:
        plan = plan_scale_in(snap, "default/gang", tuned, NOW)
        if isinstance(plan, PreemptionPlan):
            assert not grown & set(plan.scale_ins)


@given(clusters())
@settings(max_examples=100, deadline=None)
def test_consolidation_moves_only_non_ps_workers_onto_ps_nodes(case: tuple[ClusterSnapshot, PolicySettings]) -> None:
    snap, tuned = case
    plan = plan_consolidation(snap, tuned, NOW, NEVER, NEVER)
    per_job: dict[str, int] = {}
    for action in plan.actions:
        pod = snap.pods[action.pods[0]]
        assert pod.role is Role.WORKER and pod.index > 0
        target = action.placements[0].node
        ps_nodes = {snap.pods[key].node_name for key in snap.job_members[action.job] if snap.pods[key].role is Role.PS}
        assert target in ps_nodes and pod.node_name not in ps_nodes
        per_job[action.job] = per_job.get(action.job, 0) + 1
    assert all(count <= tuned.consolidation_budget for count in per_job.values())


@given(
    workers=st.integers(min_value=1, max_value=11),
    low=st.integers(min_value=0, max_value=11),
    wanted=st.integers(min_value=1, max_value=6),
    step=st.integers(min_value=1, max_value=6),
)
@settings(max_examples=150, deadline=None)
def test_scale_in_on_a_full_cluster_takes_exactly_the_highest_surplus_indices(
    workers: int, low: int, wanted: int, step: int
) -> None:
    placement = ["node-0", *(f"node-{(i + 1) % 3}" for i in range(workers))]
    snap = snapshot(
        *cpu_nodes(3, cpu=str((workers + 3) // 3)),
        *placed_job("light", placement=placement, min_workers=min(low, workers), max_workers=11),
        *waiting_job("heavy", pods=wanted, declare_bounds=True, created=WAITING_SINCE),
    )
    plan = plan_scale_in(snap, "default/heavy", PolicySettings(scale_in_step=step), NOW)
    if not isinstance(plan, PreemptionPlan):
        return
    target = plan.scale_ins["default/light"]
    assert max(min(low, workers), 1) <= target < workers
    assert workers - target <= step
    assert sorted(pod.index for pod in plan.victims) == list(range(target, workers))
    assert plan.verdict.admitted
