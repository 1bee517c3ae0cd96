"""Victims chosen and timed by the work they lose, in the policy's own terms.

Two nodes of 4 CPU each hold one running job (a PS and 3 workers of 1 CPU), both suspendable long runners
of the fresh gang's PriorityClass; the fresh gang needs 4 CPU, one node's worth. Which is suspended, and
when, follows from their checkpoints: the one that loses least, once waiting for a checkpoint due soon
costs the gang more than the training it would save.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.policy.core.settings import PolicySettings
from extender.policy.preemption.choice import choose_preemption
from extender.policy.preemption.lost_work import AtRisk
from extender.policy.preemption.residual_life import Suspendable
from extender.policy.preemption.taking_cost import checkpoint_wait_s, cost_of
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.state.gang_annotations import (
    CHECKPOINT_INTERVAL_ANNOTATION,
    LAST_CHECKPOINT_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
    TAKEN_ANNOTATION,
)
from tests.builders import cluster, cpu_nodes, running_gang, snapshot, waiting_job

NOW = 1_800_000_000.0
MIN_RUN = 120.0
SETTINGS = PolicySettings(min_run_before_preemption_s=MIN_RUN, restart_cost_s=20.0)
BOTH = Suspendable(long_runners=frozenset({"default/a", "default/b"}))


def runner(
    name: str,
    node: str,
    ran_s: float,
    *,
    checkpoint_ago_s: float | None = None,
    annotations: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A suspendable job on `node`, bound `ran_s` before NOW, its pods reporting a checkpoint
    `checkpoint_ago_s` before NOW (none when None), its TFJob carrying `annotations`."""
    objects = running_gang(name, workers=3, nodes=[node], priority=100, dynamic=False)
    bound = datetime.fromtimestamp(NOW - ran_s, UTC).isoformat().replace("+00:00", "Z")
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": bound}]
            if checkpoint_ago_s is not None:
                stamp = f"{NOW - checkpoint_ago_s:.3f}"
                obj["metadata"].setdefault("annotations", {})[LAST_CHECKPOINT_ANNOTATION] = stamp
        if obj["kind"] == "TFJob":
            obj["metadata"].setdefault("annotations", {}).update(
                {SUSPENDABLE_ANNOTATION: "true", **(annotations or {})}
            )
    return objects


def suspended_for_fresh(*running: list[dict[str, Any]], suspendable: Suspendable = BOTH) -> tuple[str, ...]:
    snap = snapshot(*cpu_nodes(2), *(obj for job in running for obj in job), *waiting_job("fresh", pods=4))
    plan = plan_preemption(snap, "default/fresh", SETTINGS, NOW, suspendable=suspendable)
    assert isinstance(plan, PreemptionPlan), plan
    return tuple(job for job, _ in plan.suspended)


def test_of_two_equal_long_runners_the_one_that_just_checkpointed_is_suspended() -> None:
    for fresh_one, stale_one in (("a", "b"), ("b", "a")):
        jobs = {
            fresh_one: runner(fresh_one, "node-0", 3000, checkpoint_ago_s=10),
            stale_one: runner(stale_one, "node-1", 3000, checkpoint_ago_s=1500),
        }
        assert suspended_for_fresh(jobs["a"], jobs["b"]) == (f"default/{fresh_one}",)


def test_a_long_runner_is_suspended_only_when_its_margin_exceeds_what_it_would_lose() -> None:
    job = runner("a", "node-0", 3000, checkpoint_ago_s=600)
    filler = runner("b", "node-1", 3000)
    only_a = Suspendable(long_runners=frozenset({"default/a"}), margins_s={"default/a": 10_000.0})
    assert suspended_for_fresh(job, filler, suspendable=only_a) == ("default/a",)
    too_small = replace(only_a, margins_s={"default/a": 600.0 + SETTINGS.restart_cost_s - 1})
    snap = snapshot(*cpu_nodes(2), *job, *filler, *waiting_job("fresh", pods=4))
    refused = plan_preemption(snap, "default/fresh", SETTINGS, NOW, suspendable=too_small)
    assert not isinstance(refused, PreemptionPlan), "it would lose 600 s of training and its restart"


JUST_ARRIVED = datetime.fromtimestamp(NOW - 60, UTC).isoformat().replace("+00:00", "Z")
"""A minute before NOW: the fresh gang is far from starving (a starving gang is never held)."""


def choose(running: list[dict[str, Any]], now: float = NOW) -> tuple[PreemptionPlan | None, tuple[str, float] | None]:
    fresh = waiting_job("fresh", pods=4, created=JUST_ARRIVED)
    snap = snapshot(*cpu_nodes(2), *running, *runner("b", "node-1", 3000), *fresh)
    only_a = Suspendable(long_runners=frozenset({"default/a"}))
    choice = choose_preemption(snap, SETTINGS, now, {}, max_gangs=4, max_checked=4, suspendable=only_a)
    return choice.plan, choice.held


def test_a_preemption_waits_for_a_checkpoint_due_soon_and_goes_ahead_once_it_is_written() -> None:
    interval = {CHECKPOINT_INTERVAL_ANNOTATION: "600"}
    plan, held = choose(runner("a", "node-0", 3000, checkpoint_ago_s=590, annotations=interval))
    assert plan is None and held == ("default/fresh", 10.0), "590 s of 4 CPU saved for 10 s of the gang's 4"
    plan, held = choose(runner("a", "node-0", 3000, checkpoint_ago_s=5, annotations=interval))
    assert held is None and plan is not None and [job for job, _ in plan.suspended] == ["default/a"]


def test_no_wait_for_a_checkpoint_far_off_or_never_declared() -> None:
    interval = {CHECKPOINT_INTERVAL_ANNOTATION: "3600"}
    plan, held = choose(runner("a", "node-0", 3000, checkpoint_ago_s=100, annotations=interval))
    assert held is None and plan is not None, "due in 3500 s, past max_checkpoint_wait_s"
    plan, held = choose(runner("a", "node-0", 3000, checkpoint_ago_s=590))
    assert held is None and plan is not None, "no interval declared: when it checkpoints next is a guess"


def risk(lost_s: float, size: float, due_s: float | None) -> AtRisk:
    return AtRisk(lost_s, lost_s * size, "GPU", "declared", 600.0, None, size, due_s)


def test_the_wait_is_weighed_against_the_preemptors_size_and_bounded() -> None:
    assert checkpoint_wait_s([risk(500, 4, 100)], 4, SETTINGS) == 100
    assert checkpoint_wait_s([risk(500, 4, 100)], 40, SETTINGS) is None, "a gang ten times as large waits for less"
    assert checkpoint_wait_s([risk(500, 4, 100), risk(10, 4, None)], 4, SETTINGS) is None
    assert checkpoint_wait_s([risk(500, 4, 100)], 4, replace(SETTINGS, max_checkpoint_wait_s=60)) is None
    two = [risk(500, 4, 100), risk(200, 4, 50)]
    assert checkpoint_wait_s(two, 4, SETTINGS) == 100, "the second checkpoints at 50 s and loses 50 s again by 100"
    assert cost_of(risk(500, 4, 100), SETTINGS) == 500 * 4 + SETTINGS.restart_cost_s * 4


def test_a_job_that_declares_its_checkpoints_has_no_minimum_run_to_be_suspended() -> None:
    young = runner("a", "node-0", 10, annotations={CHECKPOINT_INTERVAL_ANNOTATION: "600"})
    assert suspended_for_fresh(young, runner("b", "node-1", 10)) == ("default/a",)


def test_scale_ins_and_evictions_count_toward_the_hourly_bound_and_are_written() -> None:
    settings = replace(SETTINGS, max_takings_per_hour=2)
    elastic = running_gang("batch", workers=7, nodes=["node-0", "node-1"], priority=0, min_workers=3)
    rigid = running_gang("batch", workers=7, nodes=["node-0", "node-1"], priority=0, dynamic=False)
    for running, written in ((elastic, "scaled"), (rigid, "evicted")):
        objects = [*cpu_nodes(2), *running, *waiting_job("urgent", pods=4, priority=100)]
        actuator = RecordingActuator()
        loop = PreemptionLoop(cluster(*objects), actuator, settings, lambda: NOW)
        assert loop.tick(NOW) is not None, written
        assert (dict(actuator.annotated)["default/batch"][TAKEN_ANNOTATION]) == f"{NOW:.3f}", written
        full = f"{NOW - 900:.3f},{NOW - 300:.3f}"
        for obj in running:
            if obj["kind"] == "TFJob":
                obj["metadata"].setdefault("annotations", {})[TAKEN_ANNOTATION] = full
        snap = snapshot(*objects)
        assert not isinstance(plan_preemption(snap, "default/urgent", settings, NOW), PreemptionPlan), written
