"""A minimum run before a preemption may take a job, and a bound on how often one job is suspended.

Three nodes of 4 CPU are full with one running job; a gang of 4 workers waits for room. The running job
is, by case, a suspendable long runner of the same PriorityClass, a rigid job of a lower PriorityClass, or
an elastic one whose surplus could be scaled in. Its pods were bound `RAN` seconds before NOW.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.loops.run_clock import RunClock
from extender.policy.core.settings import PolicySettings
from extender.policy.core.takings import HOUR_S
from extender.policy.preemption.residual_life import Suspendable
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.state import crds
from extender.state.gang_annotations import (
    MIN_RUN_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
    TAKEN_ANNOTATION,
)
from extender.state.view_manifests import job_manifest
from tests.builders import cluster, cpu_nodes, running_gang, snapshot, waiting_job

NOW = 1_800_000_000.0
NAMES = ["node-0", "node-1", "node-2"]
MIN_RUN = 120.0
SETTINGS = PolicySettings(suspension_min_history=3, min_run_before_preemption_s=MIN_RUN)
LONG_RUNNER = Suspendable(long_runners=frozenset({"default/long"}))


def started(objects: list[dict[str, Any]], ran_s: float, **annotations: str) -> list[dict[str, Any]]:
    """`objects` with their bound pods bound `ran_s` before NOW and their TFJob carrying `annotations`."""
    at = datetime.fromtimestamp(NOW - ran_s, UTC).isoformat().replace("+00:00", "Z")
    for obj in objects:
        if obj["kind"] == "Pod" and obj["spec"].get("nodeName"):
            obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": at}]
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("annotations", {}).update(annotations)
    return objects


def long_runner(ran_s: float, **annotations: str) -> list[dict[str, Any]]:
    job = running_gang("long", workers=11, nodes=NAMES, priority=100, dynamic=False)
    return started(job, ran_s, **{SUSPENDABLE_ANNOTATION: "true", **annotations})


def plan_for_fresh(running: list[dict[str, Any]], settings: PolicySettings = SETTINGS) -> object:
    snap = snapshot(*cpu_nodes(3), *running, *waiting_job("fresh", pods=4))
    return plan_preemption(snap, "default/fresh", settings, NOW, suspendable=LONG_RUNNER)


@pytest.mark.parametrize(("ran_s", "taken"), [(MIN_RUN - 1, False), (MIN_RUN + 1, True)])
def test_a_job_is_not_suspended_before_its_minimum_run(ran_s: float, taken: bool) -> None:
    assert isinstance(plan_for_fresh(long_runner(ran_s)), PreemptionPlan) is taken


def test_a_job_of_a_lower_priorityclass_is_neither_evicted_nor_shrunk_before_its_minimum_run() -> None:
    rigid = started(running_gang("batch", workers=11, nodes=NAMES, priority=0, dynamic=False), 10)
    elastic = started(running_gang("batch", workers=11, nodes=NAMES, priority=0, min_workers=3), 10)
    for running in (rigid, elastic):
        snap = snapshot(*cpu_nodes(3), *running, *waiting_job("urgent", pods=4, priority=100))
        assert not isinstance(plan_preemption(snap, "default/urgent", SETTINGS, NOW), PreemptionPlan)
        later = plan_preemption(snap, "default/urgent", SETTINGS, NOW + MIN_RUN)
        assert isinstance(later, PreemptionPlan), later


def test_the_tfjob_annotation_lowers_or_raises_the_minimum_for_that_job() -> None:
    assert isinstance(plan_for_fresh(long_runner(10, **{MIN_RUN_ANNOTATION: "5"})), PreemptionPlan)
    raised = long_runner(MIN_RUN + 1, **{MIN_RUN_ANNOTATION: "3600"})
    assert not isinstance(plan_for_fresh(raised), PreemptionPlan)
    assert not isinstance(plan_for_fresh(long_runner(10), replace(SETTINGS)), PreemptionPlan)
    assert isinstance(plan_for_fresh(long_runner(10), replace(SETTINGS, min_run_before_preemption_s=0)), PreemptionPlan)


def test_a_job_taken_too_often_in_the_last_hour_is_not_suspended_again() -> None:
    settings = replace(SETTINGS, max_takings_per_hour=2)
    recent = f"{NOW - 1000:.3f},{NOW - 500:.3f}"
    assert not isinstance(plan_for_fresh(long_runner(600, **{TAKEN_ANNOTATION: recent}), settings), PreemptionPlan)
    old = f"{NOW - HOUR_S - 10:.3f},{NOW - 500:.3f}"
    assert isinstance(plan_for_fresh(long_runner(600, **{TAKEN_ANNOTATION: old}), settings), PreemptionPlan)
    unbounded = replace(settings, max_takings_per_hour=0)
    assert isinstance(plan_for_fresh(long_runner(600, **{TAKEN_ANNOTATION: recent}), unbounded), PreemptionPlan)


def test_the_loop_writes_the_suspensions_of_the_last_hour_with_each_suspension() -> None:
    old, recent = NOW - HOUR_S - 10, NOW - 500
    clock = RunClock(limit=100)
    clock.finished.extend([10.0, 10.0, 10.0, 10_000.0])
    actuator = RecordingActuator()
    running = long_runner(MIN_RUN + 100, **{TAKEN_ANNOTATION: f"{old:.3f},{recent:.3f}"})
    objects = [*cpu_nodes(3), *running, *waiting_job("fresh", pods=4)]
    loop = PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW, run_clock=clock)
    loop.tick(NOW - 100)
    assert loop.tick(NOW) is not None
    [(_, _, annotations)] = actuator.suspended
    assert annotations[TAKEN_ANNOTATION] == f"{recent:.3f},{NOW:.3f}"


STARVING_SINCE = "2027-01-15T07:45:00Z"
"""Created 900 s before NOW: past the 600-s starvation limit."""


@pytest.mark.parametrize(("seen_running_s", "newcomer"), [(30, False), (MIN_RUN + 30, True), (MIN_RUN + 90, False)])
def test_the_newcomer_window_opens_when_the_minimum_run_ends(seen_running_s: float, newcomer: bool) -> None:
    settings = replace(SETTINGS, suspension_newcomer_s=60.0)
    objects = [*cpu_nodes(3), *long_runner(seen_running_s), *waiting_job("big", pods=4, created=STARVING_SINCE)]
    actuator = RecordingActuator()
    loop = PreemptionLoop(cluster(*objects), actuator, settings, lambda: NOW, run_clock=RunClock(limit=100))
    loop.tick(NOW - seen_running_s)
    plan = loop.tick(NOW)
    assert (plan is not None and bool(plan.suspended)) is newcomer


def test_the_suspension_times_and_the_minimum_survive_a_state_dump() -> None:
    job = crds.job_view(long_runner(10)[-1])
    job = replace(job, taken=(NOW - 100, NOW), min_run_before_preemption_s=30.0)
    assert crds.job_view(job_manifest(job)) == job


def test_the_loop_takes_the_job_once_its_minimum_run_has_passed_on_an_unchanged_model() -> None:
    running = started(running_gang("batch", workers=11, nodes=NAMES, priority=0, dynamic=False), 10)
    objects = [*cpu_nodes(3), *running, *waiting_job("urgent", pods=4, priority=100)]
    actuator = RecordingActuator()
    loop = PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW)
    assert loop.tick(NOW) is None, "batch has run 10 s of its 120"
    assert actuator.evicted == []
    later = NOW + MIN_RUN + loop.loop_settings.quiet_recheck_s
    plan = loop.tick(later)
    assert plan is not None and plan.evicted == ("default/batch",), "the refusal lasted only until then"
