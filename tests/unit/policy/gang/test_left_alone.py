"""Leftover PodGroups hold nothing: no rank, no plan, no reserved room, no preemption, no gang kept waiting.

The cluster: two nodes of 4 CPU. A leftover gang `old` (1 PS + 3 workers of 1 CPU, all pending, a higher
PriorityClass and an older arrival than anything else) belongs to a TFJob that succeeded, failed, is
suspended or is gone; a stale PodGroup `stale` (minMember 6, owned by a TFJob that is gone) has no pods at
all; the live gang `fresh` needs all 8 CPU. `fresh` must get the room.
"""

from __future__ import annotations

import copy

import pytest

from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.policy.rank.queue import queue_of
from extender.state.gang_annotations import plan_annotation
from extender.state.kinds import Kind
from tests.builders import Obj, cluster, make_node, make_pod, make_podgroup, make_tfjob, waiting_job
from tests.unit.policy.loop import NOW, SETTINGS, Loop

HIGH = 1000
FRESH = [f"default/fresh-worker-{i}" for i in range(8)]


def finished(job: Obj, how: str) -> Obj:
    """`job` as training-operator leaves it: `succeeded`, `failed` (a True condition) or `suspended`."""
    job = copy.deepcopy(job)
    if how == "suspended":
        job["spec"]["runPolicy"] = {"suspend": True}
    else:
        job["status"] = {"conditions": [{"type": how.capitalize(), "status": "True"}]}
    return job


def leftover(how: str, *, plan: bool = False) -> list[Obj]:
    """The gang `old` of a TFJob that `how` (succeeded, failed, suspended, gone), its pods still pending;
    with `plan`, its PodGroup still carries a plan for them on node-0."""
    pods = [
        make_pod(f"old-{role}-{index}", job="old", role=role, index=index, group="old", priority=HIGH)
        for role, index in (("ps", 0), ("worker", 0), ("worker", 1), ("worker", 2))
    ]
    group = make_podgroup("old", min_member=4, owner_job="old")
    if plan:
        names = {pod["metadata"]["name"]: "node-0" for pod in pods}
        uids = {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in pods}
        value = plan_annotation(names, NOW + 3600, uids)
        group["metadata"]["annotations"] = {"tfjob-extender.io/plan": value}
    job = [] if how == "gone" else [finished(make_tfjob("old", workers=3), how)]
    return [*pods, group, *job]


def stale_podgroup() -> Obj:
    return make_podgroup("stale", min_member=6, owner_job="stale")


def scene(how: str, *, plan: bool = False) -> list[Obj]:
    nodes = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    return [*nodes, *leftover(how, plan=plan), stale_podgroup(), *waiting_job("fresh", pods=8, priority=0)]


HOW = ["succeeded", "failed", "suspended", "gone"]


@pytest.mark.parametrize("how", HOW)
def test_a_leftover_gang_has_no_rank_and_the_waiting_gang_gets_the_room(how: str) -> None:
    loop = Loop(*scene(how))
    queue = queue_of(loop.snapshot, SETTINGS)
    assert queue.summary_of_group("default/old") is None
    assert queue.summary_of_group("default/stale") is None
    assert [rank.subject for rank in queue.waiting(NOW, SETTINGS)] == ["default/fresh"]
    decision = loop.filter("fresh-worker-0")
    assert decision.outcome == "planned", decision.summary
    assert set(loop.snapshot.reservations) == set(FRESH)


@pytest.mark.parametrize("how", HOW)
def test_a_pending_member_of_a_leftover_gang_is_turned_away_and_planned_nowhere(how: str) -> None:
    loop = Loop(*scene(how))
    decision = loop.filter("old-worker-0")
    assert decision.outcome == "left-over"
    assert decision.feasible == ()
    assert "is left over" in decision.summary and "old" in decision.summary
    assert loop.snapshot.reservations == {}


@pytest.mark.parametrize("how", ["succeeded", "failed", "suspended"])
def test_the_plan_on_a_leftover_podgroup_reserves_no_room(how: str) -> None:
    loop = Loop(*scene(how, plan=True))
    assert loop.snapshot.reservations == {}
    assert loop.filter("fresh-worker-0").outcome == "planned"


def test_a_job_that_succeeds_releases_the_plan_its_gang_holds() -> None:
    nodes = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    loop = Loop(*nodes, *waiting_job("fresh", pods=8, priority=0))
    assert loop.filter("fresh-worker-0").outcome == "planned"
    assert set(loop.snapshot.reservations) == set(FRESH)
    job = next(obj for obj in waiting_job("fresh", pods=8) if obj["kind"] == "TFJob")
    loop.state.apply(Kind.TFJOB, "MODIFIED", finished(job, "succeeded"))
    assert loop.snapshot.reservations == {}


def test_a_tfjob_the_model_lacks_is_not_gone_before_tfjobs_are_listed() -> None:
    objects = scene("gone")
    state = cluster(*objects)
    state.mark_unsynced(Kind.TFJOB)
    assert not state.snapshot().jobs_synced
    assert queue_of(state.snapshot(), SETTINGS).summary_of_group("default/old") is not None
    state.mark_synced(Kind.TFJOB)
    assert queue_of(state.snapshot(), SETTINGS).summary_of_group("default/old") is None


@pytest.mark.parametrize("how", HOW)
def test_no_preemption_is_made_for_a_leftover_gang(how: str) -> None:
    nodes = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    fillers = [make_pod(f"filler-{i}", cpu="4", node=f"node-{i}", phase="Running", priority=0) for i in range(2)]
    actuator = RecordingActuator()
    loop = PreemptionLoop(cluster(*nodes, *fillers, *leftover(how), stale_podgroup()), actuator, SETTINGS, lambda: NOW)
    assert loop.tick(NOW) is None
    assert actuator.evicted == []
    assert loop.state.snapshot().reservations == {}


def with_claim(pod: Obj) -> Obj:
    pod = copy.deepcopy(pod)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    return pod


def test_a_gang_with_resource_claims_is_left_to_kube_schedulers_dra_plugin() -> None:
    nodes = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    gang = waiting_job("dra", pods=3, priority=HIGH)
    gang[0] = with_claim(gang[0])
    loop = Loop(*nodes, *gang, *waiting_job("fresh", pods=8, priority=0))
    assert queue_of(loop.snapshot, SETTINGS).summary_of_group("default/dra") is None
    for name in ("dra-worker-0", "dra-worker-1"):
        decision = loop.filter(name)
        assert decision.outcome == "passthrough"
        assert decision.feasible == ("node-0", "node-1")
        assert "DRA plugin" in decision.summary
        assert set(loop.prioritize(name).scores.values()) == {0}
    assert loop.snapshot.reservations == {}
    assert loop.filter("fresh-worker-0").outcome == "planned", "the DRA gang does not make it yield"
