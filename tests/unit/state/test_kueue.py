"""TFJobs Kueue admits: how the model recognises them, and that the preemption loop and the scaler leave
their admission, suspension and size to Kueue while the extender still places them."""

from __future__ import annotations

from typing import Any

from extender.api.standing_view import RankContext, gang_standing, job_standing
from extender.explain import describe
from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.loops.run_clock import RunClock
from extender.loops.scaler import ScalerLoop
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import KUEUE_LEFT_ALONE
from extender.policy.preemption.residual_life import Suspendable
from extender.policy.preemption.scale_in import plan_scale_in
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.policy.rank.jobstates import job_states
from extender.policy.scaling.scale_out import plan_scale_out
from extender.state import crds
from extender.state.gang_annotations import SUSPENDABLE_ANNOTATION, SUSPENDED_AT_ANNOTATION
from extender.state.kueue import POD_SET_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, WORKLOAD_ANNOTATION
from extender.state.state_dump import dump_state
from extender.state.view_manifests import job_manifest
from tests.builders import (
    Obj,
    cluster,
    cpu_nodes,
    make_workload_priority_class,
    placed_job,
    running_gang,
    snapshot,
    waiting_job,
)

NOW = 1_800_000_000.0
NAMES = ["node-0", "node-1", "node-2"]
SETTINGS = PolicySettings(suspension_min_history=3)


def queued(objects: list[Obj], queue: str = "team-a") -> list[Obj]:
    """`objects` with their TFJob queued in a Kueue LocalQueue."""
    for obj in objects:
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("labels", {})[QUEUE_NAME_LABEL] = queue
    return objects


def suspendable(objects: list[Obj], **annotations: str) -> list[Obj]:
    for obj in objects:
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("annotations", {})[SUSPENDABLE_ANNOTATION] = "true"
            obj["metadata"]["annotations"].update(annotations)
    return objects


def tfjob(objects: list[Obj]) -> Obj:
    return next(obj for obj in objects if obj["kind"] == "TFJob")


def test_a_tfjob_is_kueues_by_its_queue_name_its_workload_owner_or_kueues_marks_on_its_templates() -> None:
    plain = running_gang("plain", workers=1, nodes=NAMES)
    assert not crds.job_view(tfjob(plain)).kueue_managed
    assert crds.job_view(tfjob(queued(running_gang("q", workers=1, nodes=NAMES)))).kueue_managed
    owned = tfjob(running_gang("owned", workers=1, nodes=NAMES))
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "w", "uid": "u"}
    ]
    assert crds.job_view(owned).kueue_managed
    for key, mark in (("annotations", WORKLOAD_ANNOTATION), ("labels", POD_SET_LABEL)):
        marked = tfjob(running_gang("tas", workers=1, nodes=NAMES))
        template = marked["spec"]["tfReplicaSpecs"]["Worker"]["template"]
        template.setdefault("metadata", {})[key] = {mark: "value"}
        assert crds.job_view(marked).kueue_managed, mark
    empty = tfjob(running_gang("empty", workers=1, nodes=NAMES))
    empty["metadata"]["labels"] = {QUEUE_NAME_LABEL: ""}
    assert not crds.job_view(empty).kueue_managed, "an empty queue name queues nowhere"


def test_that_kueue_admits_a_tfjob_survives_a_state_dump() -> None:
    job = crds.job_view(tfjob(queued(running_gang("q", workers=1, nodes=NAMES))))
    assert crds.job_view(job_manifest(job)) == job


def test_a_tfjobs_workload_priority_class_and_the_classes_survive_a_state_dump() -> None:
    labelled = tfjob(queued(running_gang("q", workers=1, nodes=NAMES)))
    labelled["metadata"]["labels"][PRIORITY_CLASS_LABEL] = "research"
    job = crds.job_view(labelled)
    assert job.kueue_priority_class == "research"
    assert crds.job_view(job_manifest(job)) == job
    state = cluster(make_workload_priority_class("research", 100))
    dumped = [m for m in dump_state(state.snapshot())["items"] if m["kind"] == "WorkloadPriorityClass"]
    assert dumped == [make_workload_priority_class("research", 100)]
    assert state.snapshot().workload_priority_classes == {"research": 100}


def test_a_kueue_job_is_never_suspended_for_a_fresh_gang_even_when_it_checkpoints() -> None:
    runner = queued(suspendable(running_gang("long", workers=11, nodes=NAMES, priority=100, dynamic=False)))
    snap = snapshot(*cpu_nodes(3), *runner, *waiting_job("fresh", pods=4))
    assert not snap.jobs["default/long"].may_be_suspended
    plan = plan_preemption(
        snap, "default/fresh", SETTINGS, NOW, suspendable=Suspendable(long_runners=frozenset({"default/long"}))
    )
    assert not isinstance(plan, PreemptionPlan), "a long runner of Kueue is no victim"


def test_a_kueue_job_of_a_lower_priorityclass_is_neither_suspended_nor_evicted() -> None:
    lower = queued(suspendable(running_gang("batch", workers=11, nodes=NAMES, priority=0, dynamic=False)))
    snap = snapshot(*cpu_nodes(3), *lower, *waiting_job("urgent", pods=4, priority=100))
    assert not isinstance(plan_preemption(snap, "default/urgent", SETTINGS, NOW), PreemptionPlan)
    unqueued = suspendable(running_gang("batch", workers=11, nodes=NAMES, priority=0, dynamic=False))
    snap = snapshot(*cpu_nodes(3), *unqueued, *waiting_job("urgent", pods=4, priority=100))
    assert isinstance(plan_preemption(snap, "default/urgent", SETTINGS, NOW), PreemptionPlan), (
        "the same job, not Kueue's"
    )


def test_the_surplus_workers_of_an_elastic_kueue_job_are_never_scaled_in() -> None:
    elastic = running_gang("elastic", workers=11, nodes=NAMES, priority=0, min_workers=1)
    snap = snapshot(*cpu_nodes(3), *queued(elastic), *waiting_job("urgent", pods=2, priority=100))
    assert not isinstance(plan_scale_in(snap, "default/urgent", SETTINGS, NOW), PreemptionPlan)
    elastic = running_gang("elastic", workers=11, nodes=NAMES, priority=0, min_workers=1)
    snap = snapshot(*cpu_nodes(3), *elastic, *waiting_job("urgent", pods=2, priority=100))
    assert isinstance(plan_scale_in(snap, "default/urgent", SETTINGS, NOW), PreemptionPlan), "not Kueue's: scaled in"


def loop_with_history(objects: list[Obj]) -> tuple[PreemptionLoop, RecordingActuator]:
    clock = RunClock(limit=100)
    clock.finished.extend([10.0, 10.0, 10.0, 10_000.0])
    actuator = RecordingActuator()
    return PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW, run_clock=clock), actuator


def test_the_preemption_loop_neither_suspends_nor_evicts_a_long_running_kueue_job_for_a_waiting_gang() -> None:
    runner = queued(suspendable(running_gang("long", workers=11, nodes=NAMES, priority=100, dynamic=False)))
    loop, actuator = loop_with_history([*cpu_nodes(3), *runner, *waiting_job("fresh", pods=4)])
    for tick in (0, 100, 1000, 5000):
        assert loop.tick(NOW + tick) is None
    assert actuator.suspended == [] and actuator.evicted == [] and actuator.scaled == []


def test_a_kueue_job_suspended_by_kueue_is_never_resumed_by_the_loop() -> None:
    suspended = queued(running_gang("queued", workers=1, nodes=NAMES, dynamic=False))
    tfjob(suspended)["spec"]["runPolicy"] = {"suspend": True}
    stamped = queued(suspendable(running_gang("stamped", workers=1, nodes=NAMES, dynamic=False)))
    tfjob(stamped)["metadata"]["annotations"][SUSPENDED_AT_ANNOTATION] = str(NOW)
    tfjob(stamped)["spec"]["runPolicy"] = {"suspend": True}
    objects = [obj for obj in [*suspended, *stamped] if obj["kind"] != "Pod"]
    loop, actuator = loop_with_history([*cpu_nodes(3), *objects])
    assert not loop.state.snapshot().jobs["default/stamped"].suspended_by_extender, "Kueue owns its suspension"
    reasons = {status.job: status.reason for status in job_states(loop.state.snapshot(), NOW, SETTINGS)}
    assert reasons["default/queued"] == "suspended (spec.runPolicy.suspend): waiting for Kueue to admit it"
    loop.tick(NOW + 5)
    loop.tick(NOW + 10)
    assert actuator.suspended == []


def scaler_over(*objects: Obj) -> tuple[ScalerLoop, RecordingActuator]:
    actuator = RecordingActuator()
    return ScalerLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW), actuator


def test_the_scaler_never_grows_nor_migrates_the_workers_of_a_kueue_job_and_says_why() -> None:
    job = queued(placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    snap = snapshot(*cpu_nodes(3), *job)
    plan = plan_scale_out(snap, SETTINGS, NOW, {})
    assert plan.actions == ()
    assert plan.skipped == (("default/a", f"left alone: {KUEUE_LEFT_ALONE}"),)
    loop, actuator = scaler_over(*cpu_nodes(3), *queued(placed_job("a", placement=["node-0", "node-1", "node-2"])))
    assert loop.tick(NOW) == [] and loop.tick(NOW + 600) == []
    assert actuator.scaled == [] and actuator.restarted == []
    assert loop.left_alone == {"default/a": f"left alone: {KUEUE_LEFT_ALONE}"}


def test_debug_jobs_and_explain_say_that_kueue_admits_the_job() -> None:
    snap = snapshot(*cpu_nodes(3), *queued(running_gang("q", workers=1, nodes=NAMES)))
    context = RankContext.of(snap, SETTINGS, NOW)
    standing = job_standing(context, "default/q")
    assert (standing["admittedBy"], standing["loops"]) == ("Kueue", KUEUE_LEFT_ALONE)
    gang = gang_standing(context, "default/q")
    assert gang is not None and gang["loops"] == KUEUE_LEFT_ALONE
    body: dict[str, Any] = {
        "object": "default/q",
        "kind": "TFJob",
        "status": "started",
        "summary": "running",
        "standing": standing,
        "pods": {"bound": {"default/q-ps-0": "node-0"}, "total": 1, "pending": []},
    }
    assert f"  {KUEUE_LEFT_ALONE}" in describe(body).splitlines()
    plain = snapshot(*cpu_nodes(3), *running_gang("p", workers=1, nodes=NAMES))
    assert "loops" not in job_standing(RankContext.of(plain, SETTINGS, NOW), "default/p")
