"""The honest simulator: a restart goes back to the last checkpoint and counts what it threw away."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from extender.sim.cluster import EPOCH, SimCluster
from extender.sim.engine import checkpoint, restart
from extender.sim.policies import JobProgress
from extender.sim.workload import (
    CHECKPOINT_RANGE_S,
    NEVER_CHECKPOINTS_SHARE,
    NodeSpec,
    load_trace,
    pai_like,
    save_trace,
    with_checkpoints,
)
from tests.builders import sim_job

RATE = 10.0
JOB_CPU = 7
"""CPUs of `sim_job`'s PS (1) and worker (6): what its lost seconds are counted in."""
"""Samples a second."""


def trained(interval: float | None, seconds: list[float]) -> JobProgress:
    """A job of `interval` after training at `RATE` for each span of `seconds`."""
    progress = JobProgress(replace(sim_job("a", 0.0), checkpoint_s=interval))
    for span in seconds:
        progress.done += RATE * span
        checkpoint(progress, RATE, span)
    return progress


def stopped(progress: JobProgress) -> JobProgress:
    """`progress`'s job restarted (its PS and worker hold `JOB_CPU` CPUs)."""
    cluster = SimCluster((NodeSpec("n", "8", "32Gi"),), feed_model=False)
    cluster.submit(progress.spec, 0.0, gang=True)
    restart(progress, cluster.jobs[progress.spec.name])
    return progress


def test_a_restart_goes_back_to_the_last_checkpoint() -> None:
    progress = stopped(trained(100.0, [60.0, 60.0, 30.0]))
    assert progress.done == pytest.approx(RATE * 100)
    assert progress.restarts == 1
    assert progress.lost_work_s == pytest.approx(50.0 * JOB_CPU)


def test_a_job_that_never_checkpoints_loses_everything() -> None:
    progress = stopped(trained(None, [60.0, 60.0]))
    assert progress.done == 0.0 and progress.lost_work_s == pytest.approx(120.0 * JOB_CPU)


def test_a_job_that_keeps_every_step_loses_nothing() -> None:
    progress = stopped(trained(0.0, [60.0, 45.0]))
    assert progress.done == pytest.approx(RATE * 105) and progress.lost_work_s == 0.0


def test_checkpoints_count_training_time_across_spans_and_restarts() -> None:
    progress = trained(100.0, [250.0])
    assert (progress.saved, progress.since_save_s) == pytest.approx((RATE * 200, 50.0))
    stopped(progress)
    progress.done += RATE * 120
    checkpoint(progress, RATE, 120.0)
    assert (progress.saved, progress.since_save_s) == pytest.approx((RATE * 300, 20.0))


def test_built_in_scenarios_draw_intervals_apart_from_the_rest_of_the_workload() -> None:
    workload = pai_like(3)
    intervals = [job.checkpoint_s for job in workload.jobs]
    never = sum(1 for interval in intervals if interval is None) / len(intervals)
    assert abs(never - NEVER_CHECKPOINTS_SHARE) < 0.08
    low, high = CHECKPOINT_RANGE_S
    assert all(low <= interval <= high for interval in intervals if interval is not None)
    plain = replace(workload, jobs=tuple(replace(j, checkpoint_s=0.0) for j in workload.jobs))
    assert with_checkpoints(plain, 3) == workload


def test_a_trace_keeps_its_declared_intervals_and_draws_the_others(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    save_trace(pai_like(1, jobs=4, nodes=2), path)
    document = json.loads(path.read_text())
    document["jobs"][0]["checkpoint_s"] = 1234.0
    for job in document["jobs"][1:]:
        del job["checkpoint_s"]
    path.write_text(json.dumps(document))
    jobs = {job.name: job for job in load_trace(path).jobs}
    assert jobs[document["jobs"][0]["name"]].checkpoint_s == 1234.0
    assert all(jobs[job["name"]].checkpoint_s != 0.0 for job in document["jobs"][1:])


@pytest.mark.parametrize("tells", [True, False])
def test_jobs_tell_the_model_their_interval_and_checkpoints_unless_told_not_to(tells: bool) -> None:
    cluster = SimCluster((NodeSpec("n", "8", "32Gi"),), feed_model=True, tells_checkpoints=tells)
    spec = replace(sim_job("a", 0.0), checkpoint_s=600.0)
    job = cluster.submit(spec, 0.0, gang=True)
    for key in list(job.pods):
        cluster.bind(key, "n", at=5.0)
    events = cluster.pods_version
    cluster.report_checkpoint("a", 605.0)
    assert cluster.pods_version == events, "a checkpoint is no cluster event to kube-scheduler"
    assert cluster.model is not None
    snap = cluster.model.snapshot()
    assert snap.jobs["sim/a"].checkpoint_interval_s == (600.0 if tells else None)
    reported = {pod.last_checkpoint for key, pod in snap.pods.items() if key.startswith("sim/a-")}
    assert reported == ({EPOCH + 605.0} if tells else {0.0})
