"""Suspending long-running checkpointing jobs for fresh gangs (Tiresias-style, through TFJob suspend):
who may be suspended, how the loop suspends and resumes, and where a resumed job ranks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.loops.run_clock import RunClock
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView
from extender.policy.preemption.residual_life import Suspendable
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.policy.rank.jobstates import JobState, JobStatus, job_states
from extender.policy.rank.ranking import gang_rank
from extender.state import crds
from extender.state.gang_annotations import (
    ATTAINED_ANNOTATION,
    RESUMED_AT_ANNOTATION,
    RUN_TIME_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
    SUSPENDED_AT_ANNOTATION,
    TAKEN_ANNOTATION,
)
from extender.state.kinds import Kind
from extender.state.view_manifests import job_manifest
from tests.builders import cluster, cpu_nodes, running_gang, snapshot, waiting_job

NOW = 1_800_000_000.0
NAMES = ["node-0", "node-1", "node-2"]
SETTINGS = PolicySettings(suspension_min_history=3)


def suspendable(objects: list[dict[str, Any]], **annotations: str) -> list[dict[str, Any]]:
    """`objects` with their TFJob marked suspendable (and carrying `annotations`)."""
    for obj in objects:
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("annotations", {})[SUSPENDABLE_ANNOTATION] = "true"
            obj["metadata"]["annotations"].update(annotations)
    return objects


def long_runner() -> list[dict[str, Any]]:
    """A rigid, suspendable job of 1 PS + 11 workers taking all 12 CPUs, of the fresh gang's PriorityClass."""
    return suspendable(running_gang("long", workers=11, nodes=NAMES, priority=100, dynamic=False))


def test_the_tfjob_says_whether_it_may_be_suspended_and_when_it_was() -> None:
    obj = suspendable(
        running_gang("long", workers=1, nodes=NAMES, dynamic=False),
        **{ATTAINED_ANNOTATION: "120.5", SUSPENDED_AT_ANNOTATION: "1800000000", RESUMED_AT_ANNOTATION: "1"},
    )[-1]
    obj["spec"]["runPolicy"] = {"suspend": True}
    obj["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    job = crds.job_view(obj)
    assert (job.suspendable, job.suspended, job.succeeded) == (True, True, True)
    assert (job.attained_s, job.suspended_at, job.resumed_at) == (120.5, 1_800_000_000.0, 1.0)
    assert job.suspended_by_extender
    plain = crds.job_view(running_gang("plain", workers=1, nodes=NAMES, dynamic=False)[-1])
    assert (plain.suspendable, plain.suspended, plain.succeeded, plain.attained_s) == (False, False, False, 0.0)
    assert plain.run_s == 0.0
    assert crds.job_view(finished_job("done", 61.5)).run_s == 61.5


def test_what_the_tfjob_says_about_suspension_survives_a_state_dump() -> None:
    job = crds.job_view(finished_job("done", 61.5))
    job = replace(job, suspendable=True, suspended=True, suspended_at=NOW, resumed_at=NOW - 5, attained_s=40.25)
    again = crds.job_view(job_manifest(job))
    assert again == job


def test_a_suspendable_job_of_the_same_priorityclass_is_suspended_for_a_fresh_gang() -> None:
    snap = snapshot(*cpu_nodes(3), *long_runner(), *waiting_job("fresh", pods=4))
    assert not isinstance(plan_preemption(snap, "default/fresh", SETTINGS, NOW), PreemptionPlan), "not suspendable"
    plan = plan_preemption(
        snap, "default/fresh", SETTINGS, NOW, suspendable=Suspendable(long_runners=frozenset({"default/long"}))
    )
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.suspended == (("default/long", "default/long"),)
    assert plan.evicted == () and plan.scale_ins == {}
    assert plan.removed_whole == ("default/long",)
    assert "suspend default/long" in plan.reason and plan.verdict.admitted


STARVING_SINCE = "2027-01-15T07:45:00Z"
"""Created 900 s before NOW: past the 600-s starvation limit."""
FRESH_SINCE = "2027-01-15T07:58:20Z"
"""Created 100 s before NOW: not starving."""


def test_a_newcomer_is_suspended_only_for_a_starving_gang_of_its_priorityclass_or_a_higher_one() -> None:
    newcomer = Suspendable(newcomers=frozenset({"default/long"}))
    starving = snapshot(*cpu_nodes(3), *long_runner(), *waiting_job("big", pods=4, created=STARVING_SINCE))
    plan = plan_preemption(starving, "default/big", SETTINGS, NOW, suspendable=newcomer)
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.suspended == (("default/long", "default/long"),) and plan.evicted == ()
    fresh = snapshot(*cpu_nodes(3), *long_runner(), *waiting_job("big", pods=4, created=FRESH_SINCE))
    decision = plan_preemption(fresh, "default/big", SETTINGS, NOW, suspendable=newcomer)
    assert not isinstance(decision, PreemptionPlan), "a gang that does not starve waits its turn"
    lower = snapshot(*cpu_nodes(3), *long_runner(), *waiting_job("big", pods=4, priority=0, created=STARVING_SINCE))
    decision = plan_preemption(lower, "default/big", SETTINGS, NOW, suspendable=newcomer)
    assert not isinstance(decision, PreemptionPlan), "never for a gang of a lower PriorityClass"


def test_a_lower_priorityclass_job_that_checkpoints_is_suspended_rather_than_evicted() -> None:
    lower = suspendable(running_gang("batch", workers=11, nodes=NAMES, priority=0, dynamic=False))
    snap = snapshot(*cpu_nodes(3), *lower, *waiting_job("urgent", pods=4, priority=100))
    plan = plan_preemption(snap, "default/urgent", SETTINGS, NOW)
    assert isinstance(plan, PreemptionPlan), plan
    assert plan.suspended == (("default/batch", "default/batch"),) and plan.evicted == ()


def test_a_job_that_was_suspended_before_suspends_nobody() -> None:
    fresh = suspendable(waiting_job("again", pods=4), **{ATTAINED_ANNOTATION: "50", SUSPENDED_AT_ANNOTATION: str(NOW)})
    snap = snapshot(*cpu_nodes(3), *long_runner(), *fresh)
    decision = plan_preemption(
        snap, "default/again", SETTINGS, NOW + 1, suspendable=Suspendable(long_runners=frozenset({"default/long"}))
    )
    assert not isinstance(decision, PreemptionPlan)


def test_a_resumed_job_ranks_after_fresh_ones_and_queues_from_its_suspension() -> None:
    resumed = suspendable(
        waiting_job("resumed", pods=2), **{ATTAINED_ANNOTATION: "50", SUSPENDED_AT_ANNOTATION: str(NOW)}
    )
    late = waiting_job("late", pods=8, created="2026-03-01T10:05:00Z")
    snap = snapshot(*cpu_nodes(3), *resumed, *late)
    demoted = gang_rank(snap, "default/resumed", NOW + 10, SETTINGS)
    fresh = gang_rank(snap, "default/late", NOW + 10, SETTINGS)
    assert demoted.demoted and not fresh.demoted
    assert fresh.outranks(demoted), "a smaller size class does not lift a demoted job above a fresh one"
    assert demoted.arrival == NOW and not demoted.starving
    starving = gang_rank(snap, "default/resumed", NOW + SETTINGS.starvation_limit_s + 60, SETTINGS)
    assert starving.starving and not starving.demoted, "starving lifts the demotion: waiting stays bounded"


def status(job: str, state: JobState, *, placed: bool | None = None) -> JobStatus:
    return JobStatus(job, state, "", 1, 1, placed=state is JobState.RUNNING if placed is None else placed)


def test_the_run_clock_counts_runs_across_suspensions_and_remembers_finished_ones() -> None:
    clock = RunClock(limit=2)
    jobs = {"a/j": JobView("a", "j", attained_s=30.0)}
    clock.observe([status("a/j", JobState.RUNNING)], jobs, 100.0)
    assert clock.running(jobs, 160.0) == {"a/j": 90.0}, "30 s before its suspension, 60 s since"
    clock.observe([status("a/j", JobState.WAITING)], jobs, 170.0)
    assert clock.running(jobs, 180.0) == {}
    clock.observe([status("a/j", JobState.RUNNING)], jobs, 200.0)
    assert clock.observe([status("a/j", JobState.COMPLETED)], jobs, 250.0) == [("a/j", 80.0)]
    assert clock.observe([status("a/j", JobState.COMPLETED)], jobs, 260.0) == []
    assert list(clock.finished) == [80.0], "counted once"
    succeeded = {"a/k": JobView("a", "k", succeeded=True)}
    clock.observe([status("a/k", JobState.RUNNING)], {"a/k": JobView("a", "k")}, 300.0)
    clock.observe([status("a/k", JobState.WAITING)], succeeded, 340.0)
    assert list(clock.finished) == [80.0, 40.0], "a job whose pods went with its success still counts"


def test_a_job_scaled_in_runs_on_and_its_run_counts_when_it_finishes() -> None:
    clock = RunClock(limit=10)
    jobs = {"a/j": JobView("a", "j")}
    clock.observe([status("a/j", JobState.RUNNING)], jobs, 100.0)
    clock.observe([status("a/j", JobState.PREEMPTED, placed=True)], jobs, 150.0)
    assert clock.running(jobs, 160.0) == {"a/j": 60.0}, "a scale-in neither ends nor restarts its run"
    assert clock.observe([status("a/j", JobState.COMPLETED)], jobs, 400.0) == [("a/j", 300.0)]
    clock.observe([status("a/k", JobState.RUNNING)], {"a/k": JobView("a", "k")}, 500.0)
    clock.observe([status("a/k", JobState.PREEMPTED, placed=False)], {"a/k": JobView("a", "k")}, 520.0)
    assert clock.running(jobs, 530.0) == {}, "evicted: its run ends"


def test_a_new_clock_recalls_the_run_times_recorded_on_the_tfjobs_oldest_job_first() -> None:
    clock = RunClock(limit=2)
    jobs = {
        "a/new": JobView("a", "new", created=300.0, run_s=30.0),
        "a/old": JobView("a", "old", created=100.0, run_s=10.0),
        "a/mid": JobView("a", "mid", created=200.0, run_s=20.0),
        "a/unknown": JobView("a", "unknown", created=50.0),
    }
    assert clock.observe([], jobs, 1000.0) == []
    assert list(clock.finished) == [20.0, 30.0], "the most recent `limit` of them"
    clock.observe([], {"a/later": JobView("a", "later", run_s=99.0)}, 1010.0)
    assert list(clock.finished) == [20.0, 30.0], "recalled once, at the first observation"


def finished_job(name: str, run_s: float) -> dict[str, Any]:
    """A TFJob training-operator marked Succeeded, whose run time a loop recorded; its pods are gone."""
    job = next(obj for obj in running_gang(name, workers=1, nodes=NAMES, dynamic=False) if obj["kind"] == "TFJob")
    job["metadata"].setdefault("annotations", {})[RUN_TIME_ANNOTATION] = f"{run_s:.3f}"
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    return job


def test_the_loop_records_each_run_time_it_sees_and_a_restarted_loop_suspends_from_the_records() -> None:
    loop, actuator = loop_with_history([*cpu_nodes(3), *long_runner()])
    loop.tick(NOW)
    done = next(obj for obj in long_runner() if obj["kind"] == "TFJob")
    done["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    loop.state.apply(Kind.TFJOB, "MODIFIED", done)
    loop.tick(NOW + 42)
    assert ("default/long", {RUN_TIME_ANNOTATION: "42.000"}) in actuator.annotated
    history = [finished_job(f"short-{i}", 10.0) for i in range(3)] + [finished_job("tail", 10_000.0)]
    restarted = PreemptionLoop(
        cluster(*cpu_nodes(3), *history, *long_runner(), *waiting_job("fresh", pods=4)),
        RecordingActuator(),
        SETTINGS,
        lambda: NOW,
    )
    assert restarted.tick(NOW) is None, "the runner has not run long enough to tell yet"
    plan = restarted.tick(NOW + 100)
    assert plan is not None and plan.suspended == (("default/long", "default/long"),), "history recalled"


class DeletedBeforeRecorded(RecordingActuator):
    def annotate_job(self, job: str, annotations: Mapping[str, str]) -> None:
        raise RuntimeError(f"404: tfjobs {job} not found")


def test_a_run_time_that_cannot_be_recorded_is_kept_in_memory_and_the_tick_goes_on() -> None:
    clock = RunClock(limit=10)
    actuator = DeletedBeforeRecorded()
    loop = PreemptionLoop(cluster(*cpu_nodes(3), *long_runner()), actuator, SETTINGS, lambda: NOW, run_clock=clock)
    loop.tick(NOW)
    done = next(obj for obj in long_runner() if obj["kind"] == "TFJob")
    done["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    loop.state.apply(Kind.TFJOB, "MODIFIED", done)
    loop.tick(NOW + 5)
    assert list(clock.finished) == [5.0]


def loop_with_history(objects: list[dict[str, Any]]) -> tuple[PreemptionLoop, RecordingActuator]:
    clock = RunClock(limit=100)
    clock.finished.extend([10.0, 10.0, 10.0, 10_000.0])
    actuator = RecordingActuator()
    return PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW, run_clock=clock), actuator


def test_the_loop_suspends_a_long_runner_for_a_fresh_gang_and_holds_the_room_for_it() -> None:
    loop, actuator = loop_with_history([*cpu_nodes(3), *long_runner(), *waiting_job("fresh", pods=4)])
    assert loop.tick(NOW) is None, "the runner has not run long enough to tell yet"
    plan = loop.tick(NOW + 100)
    assert plan is not None and plan.suspended == (("default/long", "default/long"),)
    [(job, suspend, annotations)] = actuator.suspended
    assert (job, suspend) == ("default/long", True)
    assert annotations == {
        ATTAINED_ANNOTATION: "100.000",
        SUSPENDED_AT_ANNOTATION: f"{NOW + 100:.3f}",
        TAKEN_ANNOTATION: f"{NOW + 100:.3f}",
    }
    assert actuator.evicted == [], "a suspended job is not evicted: training-operator deletes its pods"
    assert ("TFJob", "default/long", "Suspended", plan.reason) in actuator.events
    held = {r.pod for r in loop.state.snapshot().reservations.values()}
    assert held == {f"default/fresh-worker-{i}" for i in range(4)}


def test_the_loop_suspends_a_newcomer_for_a_starving_gang_without_demoting_it() -> None:
    settings = replace(SETTINGS, suspension_newcomer_s=60.0, min_run_before_preemption_s=0.0)
    objects = [*cpu_nodes(3), *long_runner(), *waiting_job("big", pods=4, created=STARVING_SINCE)]
    actuator = RecordingActuator()
    loop = PreemptionLoop(cluster(*objects), actuator, settings, lambda: NOW, run_clock=RunClock(limit=100))
    assert loop.tick(NOW - 10) is None, "the run clock sees the runner start"
    plan = loop.tick(NOW)
    assert plan is not None and plan.suspended == (("default/long", "default/long"),)
    stamps = {SUSPENDED_AT_ANNOTATION: f"{NOW:.3f}", TAKEN_ANNOTATION: f"{NOW:.3f}"}
    assert actuator.suspended == [("default/long", True, stamps)], (
        "no attained-s: it had barely started, so it queues again by its own rank"
    )
    late = PreemptionLoop(cluster(*objects), RecordingActuator(), settings, lambda: NOW, run_clock=RunClock(100))
    late.tick(NOW - 61)
    assert late.tick(NOW) is None, "a job that has run longer than the window is no newcomer"


def test_a_job_the_loop_suspended_is_resumed_once_its_pods_are_gone_and_one_a_person_suspended_is_not() -> None:
    ours = suspendable(
        running_gang("ours", workers=1, nodes=NAMES, dynamic=False), **{SUSPENDED_AT_ANNOTATION: str(NOW)}
    )
    theirs = suspendable(running_gang("theirs", workers=1, nodes=NAMES, dynamic=False))
    jobs = [obj for obj in [*ours, *theirs] if obj["kind"] == "TFJob"]
    for job in jobs:
        job["spec"]["runPolicy"] = {"suspend": True}
    loop, actuator = loop_with_history([*cpu_nodes(3), *[obj for obj in [*ours, *theirs] if obj["kind"] != "Pod"]])
    reasons = {status.job: status.reason for status in job_states(loop.state.snapshot(), NOW, SETTINGS)}
    assert reasons["default/ours"].startswith("suspended by the preemption loop")
    assert reasons["default/theirs"].startswith("suspended (spec.runPolicy.suspend), not by the extender")
    loop.tick(NOW + 5)
    assert actuator.suspended == [("default/ours", False, {RESUMED_AT_ANNOTATION: f"{NOW + 5:.3f}"})]
    still_running = next(obj for obj in ours if obj["kind"] == "Pod")
    loop.state.apply(Kind.POD, "ADDED", still_running)
    actuator.suspended.clear()
    loop.tick(NOW + 7)
    assert actuator.suspended == [], "not while a pod of it is left"
