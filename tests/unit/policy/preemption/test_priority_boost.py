"""Kueue's priority boost from the cost of taking an admitted TFJob: larger for the job that would lose more,
never into the next PriorityClass or WorkloadPriorityClass, written only when it changes and not more often
than the interval."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from extender.loops.actuator import RecordingActuator
from extender.loops.priority_booster import PRIORITY_BOOST_ANNOTATION, PriorityBooster
from extender.policy.core.settings import PolicySettings
from extender.policy.preemption.priority_boost import boost_for, priority_boosts
from extender.state.gang_annotations import CHECKPOINT_INTERVAL_ANNOTATION, LAST_CHECKPOINT_ANNOTATION
from extender.state.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from tests.builders import make_priority_class, make_workload_priority_class, running_gang, snapshot

NOW = 1_800_000_000.0
SETTINGS = PolicySettings(kueue_priority_boost=True, priority_boost_resource_s=10.0, restart_cost_s=20.0)


def admitted(name: str, node: str, *, checkpoint_ago_s: float, queue: str = "team-a") -> list[dict[str, Any]]:
    """A running TFJob of 4 CPU Kueue admitted, bound 600 s ago, its pods reporting a checkpoint."""
    objects = running_gang(name, workers=3, nodes=[node], priority=0, dynamic=False)
    bound = datetime.fromtimestamp(NOW - 600, UTC).isoformat().replace("+00:00", "Z")
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": bound}]
            obj["metadata"].setdefault("annotations", {})[LAST_CHECKPOINT_ANNOTATION] = f"{NOW - checkpoint_ago_s:.3f}"
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("annotations", {})[CHECKPOINT_INTERVAL_ANNOTATION] = "3600"
            if queue:
                obj["metadata"].setdefault("labels", {})[QUEUE_NAME_LABEL] = queue
    return objects


def test_the_job_that_would_lose_more_gets_the_larger_boost() -> None:
    snap = snapshot(
        *admitted("cheap", "node-0", checkpoint_ago_s=5), *admitted("costly", "node-1", checkpoint_ago_s=300)
    )
    boosts = priority_boosts(snap, SETTINGS, NOW)
    assert boosts == {"default/cheap": (5 + 20) * 4 // 10, "default/costly": (300 + 20) * 4 // 10}


def test_only_running_jobs_kueue_admits_are_boosted_and_only_when_turned_on() -> None:
    snap = snapshot(*admitted("outside", "node-0", checkpoint_ago_s=5, queue=""))
    assert priority_boosts(snap, SETTINGS, NOW) == {}
    booster = PriorityBooster(RecordingActuator(), replace(SETTINGS, kueue_priority_boost=False), 30.0)
    booster.tick(snapshot(*admitted("queued", "node-0", checkpoint_ago_s=5)), NOW)
    assert booster.written == {}


def test_the_boost_stays_below_the_next_priorityclass_and_the_cap() -> None:
    classes = [0, 100, 1000]
    assert boost_for(10_000.0, 0, classes, SETTINGS) == 99
    assert boost_for(10_000.0, 100, classes, SETTINGS) == 899
    assert boost_for(10_000.0, 1000, classes, SETTINGS) == SETTINGS.max_priority_boost
    assert boost_for(50.0, 0, classes, SETTINGS) == 5
    snap = snapshot(make_priority_class("batch", 30), *admitted("costly", "node-1", checkpoint_ago_s=300))
    assert priority_boosts(snap, SETTINGS, NOW) == {"default/costly": 29}


def with_workload_priority_class(objects: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    for obj in objects:
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("labels", {})[PRIORITY_CLASS_LABEL] = name
    return objects


def test_the_boost_stays_below_the_next_workload_priority_class_from_the_jobs_own() -> None:
    """Kueue's priority of a job labelled with a WorkloadPriorityClass is that class's value, and the next
    class above may be a WorkloadPriorityClass or a PriorityClass."""
    costly = with_workload_priority_class(admitted("costly", "node-1", checkpoint_ago_s=300), "research")
    classes = [make_workload_priority_class("research", 100), make_workload_priority_class("production", 120)]
    assert priority_boosts(snapshot(*classes, *costly), SETTINGS, NOW) == {"default/costly": 19}
    below_a_pod_class = snapshot(
        make_workload_priority_class("research", 100), make_priority_class("high", 105), *costly
    )
    assert priority_boosts(below_a_pod_class, SETTINGS, NOW) == {"default/costly": 4}
    unlabelled = admitted("plain", "node-1", checkpoint_ago_s=300)
    assert priority_boosts(snapshot(*classes, *unlabelled), SETTINGS, NOW) == {"default/plain": 99}, (
        "its pods' priority 0, below the WorkloadPriorityClass of 100"
    )


def test_a_boost_is_written_when_it_changes_and_at_most_once_per_interval() -> None:
    actuator = RecordingActuator()
    booster = PriorityBooster(actuator, SETTINGS, 30.0)
    snap = snapshot(*admitted("costly", "node-0", checkpoint_ago_s=300))
    booster.tick(snap, NOW)
    booster.tick(snap, NOW)
    booster.tick(snap, NOW + 10)
    booster.tick(snap, NOW + 40)
    written = [annotations[PRIORITY_BOOST_ANNOTATION] for _, annotations in actuator.annotated_workloads]
    assert written == [str((300 + 20) * 4 // 10), str((340 + 20) * 4 // 10)]
