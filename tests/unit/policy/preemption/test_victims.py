"""Job-level preemption: which lower-ranked work makes room for a whole gang, and what is never touched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import Role
from extender.policy.preemption.search import PreemptionRefusal, may_preempt
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.policy.rank.ranking import JobRank, gang_rank
from tests.builders import cpu_nodes, make_pod, make_podgroup, running_gang, snapshot, waiting_job

NOW = 1_800_000_000.0
SETTINGS = PolicySettings()


NAMES = ["node-0", "node-1", "node-2"]


def test_an_elastic_job_is_scaled_in_by_its_highest_workers_not_below_its_minimum() -> None:
    # 12 CPU, all taken by the light job (1 PS + 11 workers, min 3); the heavy gang needs 4
    snap = snapshot(
        *cpu_nodes(3), *running_gang("light", workers=11, nodes=NAMES, min_workers=3), *waiting_job("heavy", pods=4)
    )
    plan = plan_preemption(snap, "default/heavy", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.scale_ins == {"default/light": 7}
    assert plan.evicted == ()
    assert sorted(p.index for p in plan.victims) == [7, 8, 9, 10]
    assert all(p.role is Role.WORKER for p in plan.victims)
    assert plan.verdict.admitted


def test_a_non_elastic_lower_priority_gang_is_evicted_whole() -> None:
    snap = snapshot(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    plan = plan_preemption(snap, "default/urgent", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.evicted == ("default/batch",)
    assert len(plan.victims) == 12, "no pod of the victim gang is left running alone"


def test_higher_ranked_work_is_never_touched() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("vip", workers=11, nodes=NAMES, priority=200, min_workers=3),
        *waiting_job("newcomer", pods=4, priority=100),
    )
    decision = plan_preemption(snap, "default/newcomer", SETTINGS, NOW)
    assert isinstance(decision, PreemptionRefusal), decision


def test_at_equal_priority_a_heavier_gang_scales_in_a_lighter_elastic_job() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("light", workers=11, nodes=NAMES, priority=100, min_workers=3),
        *waiting_job("heavy", pods=2, priority=100),
    )
    heavy = gang_rank(snap, "default/heavy", NOW, SETTINGS)
    light = gang_rank(snap, "default/light", NOW, SETTINGS)
    assert heavy.outranks(light), "fewer resources for its workers: the KOD2 weight favours it"
    decision = plan_preemption(snap, "default/heavy", SETTINGS, NOW)
    assert isinstance(decision, PreemptionPlan), decision
    assert decision.scale_ins == {"default/light": 9}


def test_at_equal_priority_weight_never_evicts_a_running_gang() -> None:
    # the same cluster with a non-elastic light job: training-operator would fail it for good if its pods
    # were deleted, so the heavier gang waits instead of evicting it
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("light", workers=11, nodes=NAMES, priority=100, dynamic=False),
        *waiting_job("heavy", pods=2, priority=100),
    )
    assert gang_rank(snap, "default/heavy", NOW, SETTINGS).outranks(gang_rank(snap, "default/light", NOW, SETTINGS))
    decision = plan_preemption(snap, "default/heavy", SETTINGS, NOW)
    assert isinstance(decision, PreemptionRefusal), decision


def test_preemption_policy_never_is_respected() -> None:
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
        *waiting_job("polite", pods=4, policy="Never"),
    )
    decision = plan_preemption(snap, "default/polite", SETTINGS, NOW)
    assert isinstance(decision, PreemptionRefusal)
    assert "preemptionPolicy Never" in decision.reason


def test_no_second_preemption_while_the_first_victims_terminate() -> None:
    batch = running_gang("batch", workers=11, nodes=NAMES, dynamic=False)
    victim = next(obj for obj in batch if obj["metadata"]["name"] == "batch-worker-3")
    victim["metadata"]["deletionTimestamp"] = "2026-03-01T10:20:00Z"
    snap = snapshot(*cpu_nodes(3), *batch, *waiting_job("urgent", pods=4))
    decision = plan_preemption(snap, "default/urgent", SETTINGS, NOW, terminating_victims=["default/batch-worker-3"])
    assert isinstance(decision, PreemptionRefusal)
    assert "still terminating" in decision.reason


def test_victims_of_a_preemption_that_never_reached_them_do_not_block_the_next() -> None:
    snap = snapshot(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    decision = plan_preemption(snap, "default/urgent", SETTINGS, NOW, terminating_victims=["default/batch-worker-3"])
    assert isinstance(decision, PreemptionPlan), "the earlier victim still runs: its eviction failed"


def test_a_hopeless_preemption_is_refused_with_what_is_missing() -> None:
    # the waiting gang needs 20 CPU; the cluster has 12 in all
    snap = snapshot(
        *cpu_nodes(3), *running_gang("batch", workers=5, nodes=NAMES, dynamic=False), *waiting_job("huge", pods=20)
    )
    decision = plan_preemption(snap, "default/huge", SETTINGS, NOW)
    assert isinstance(decision, PreemptionRefusal)
    assert "missing" in decision.reason


def test_a_pod_counted_in_a_surplus_unit_and_in_its_whole_gang_frees_its_room_once() -> None:
    # 3 nodes of 4 CPU, full: an elastic job of 1 PS + 7 workers (min 3) and a higher-priority job of 4
    # pods. The waiting gang needs 9 CPU: only the elastic job's 8 may go. Counting its 4 surplus workers
    # again inside its whole gang would invent 4 CPU and "find" a plan.
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("elastic", workers=7, nodes=NAMES, min_workers=3),
        *running_gang("vip", workers=3, nodes=["node-2", "node-0", "node-1"], priority=1000, dynamic=False),
        *waiting_job("huge", pods=9),
    )
    decision = plan_preemption(snap, "default/huge", SETTINGS, NOW)
    assert isinstance(decision, PreemptionRefusal)
    assert "missing" in decision.reason


def test_a_gang_takes_only_what_its_minimum_needs() -> None:
    # 3 full nodes of 4 CPU: an elastic job of 1 PS + 11 workers that may shrink to 9. The waiting gang has
    # 5 members but needs only 2 (minMember): the 2 surplus workers are enough, nothing is evicted.
    flexible = [obj for obj in waiting_job("flex", pods=5) if obj["kind"] != "PodGroup"]
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("elastic", workers=11, nodes=NAMES, min_workers=9),
        *flexible,
        make_podgroup("flex", min_member=2),
    )
    decision = plan_preemption(snap, "default/flex", SETTINGS, NOW)
    assert isinstance(decision, PreemptionPlan), decision
    assert decision.scale_ins == {"default/elastic": 9}
    assert not decision.evicted


def test_a_gang_that_fits_needs_no_preemption() -> None:
    snap = snapshot(*cpu_nodes(3), *waiting_job("small", pods=2))
    decision = plan_preemption(snap, "default/small", SETTINGS, NOW)
    assert isinstance(decision, PreemptionRefusal)
    assert "fits without preemption" in decision.reason


def test_one_disrupted_job_is_preferred_to_two() -> None:
    # node-0 and node-1 hold small gangs a and b (2 CPU each); node-2 holds c (4 CPU): c alone frees 4
    snap = snapshot(
        *cpu_nodes(3),
        *running_gang("a", workers=1, nodes=["node-0"], dynamic=False),
        *running_gang("b", workers=1, nodes=["node-1"], dynamic=False),
        *running_gang("c", workers=3, nodes=["node-2"], dynamic=False),
        make_pod("fill-0", cpu="2", node="node-0", phase="Running", priority=1000),
        make_pod("fill-1", cpu="2", node="node-1", phase="Running", priority=1000),
        *waiting_job("urgent", pods=4),
    )
    plan = plan_preemption(snap, "default/urgent", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.evicted == ("default/c",)


def check_invariants(snap: ClusterSnapshot, gang: str, plan: PreemptionPlan) -> None:
    preemptor = gang_rank(snap, gang, NOW, SETTINGS)
    assert plan.verdict.admitted, "the chosen set is sufficient"
    for victim in plan.victims:
        assert victim.priority < preemptor.priority or (
            victim.group and may_preempt(preemptor, gang_rank(snap, victim.group, NOW, SETTINGS))
        ), "no victim ranks equal to or above the preemptor"
    for job_key, replicas in plan.scale_ins.items():
        assert replicas >= snap.jobs[job_key].min_workers, "never below the job's minimum"
        removed = {p.index for p in plan.victims if p.job == job_key}
        assert all(index >= replicas for index in removed), "only the highest indices go"
        assert not any(p.role is Role.PS for p in plan.victims if p.job == job_key), "never the PS"


@settings(max_examples=60, deadline=None)
@given(
    light_workers=st.integers(min_value=2, max_value=11),
    light_min=st.integers(min_value=0, max_value=11),
    batch_workers=st.integers(min_value=0, max_value=5),
    wanted=st.integers(min_value=1, max_value=8),
)
def test_any_plan_respects_the_invariants(light_workers: int, light_min: int, batch_workers: int, wanted: int) -> None:
    objects = [*cpu_nodes(4)]
    objects += running_gang("light", workers=light_workers, nodes=NAMES, min_workers=min(light_min, light_workers))
    if batch_workers:
        objects += running_gang("batch", workers=batch_workers, nodes=["node-3"], dynamic=False, priority=10)
    objects += waiting_job("heavy", pods=wanted)
    snap = snapshot(*objects)
    decision = plan_preemption(snap, "default/heavy", SETTINGS, NOW)
    if isinstance(decision, PreemptionPlan):
        check_invariants(snap, "default/heavy", decision)
    else:
        # Every running job here has a lower PriorityClass and the gang fits the empty cluster, so the only
        # refusal possible is that it fits already.
        assert "fits without preemption" in decision.reason, decision.reason


def rank(*, priority: int = 0, size_class: int = 0, weight: float = 0.5, arrival: float = 0.0) -> JobRank:
    return JobRank("default/x", priority, weight, arrival, False, weight, size_class=size_class)


def test_within_a_priority_class_a_lower_size_class_may_preempt_whatever_the_weights() -> None:
    """Size comes before the KOD2 weight: a smaller waiting gang may shrink the surplus of a
    bigger running job that weighs more, never the other way round; a higher PriorityClass always may."""
    small, big = rank(size_class=1, weight=0.3), rank(size_class=4, weight=0.9)
    assert may_preempt(small, big)
    assert not may_preempt(big, small)
    assert may_preempt(rank(priority=1, size_class=9), big)
    assert may_preempt(rank(size_class=4, weight=0.95), big)
    assert not may_preempt(rank(size_class=4, weight=0.9, arrival=-1.0), big)
