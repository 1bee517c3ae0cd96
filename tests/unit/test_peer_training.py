"""A job's training on the peer benchmark's cluster (`benchmarks/peer_training.py`): it trains while runnable
at its placement's rate, checkpoints on its interval, and a taking that stops it loses the training since its
last checkpoint, as in the simulator."""

from __future__ import annotations

import dataclasses

import pytest

from benchmarks.peer_training import BoundPod, Training
from extender.policy.core.views import Role
from extender.sim.throughput import HardwareProfile
from extender.sim.workload import JobSpec

JOB = JobSpec("vgg", 0.0, "vgg16", 32, 1.0, 1, 3, 1, 3, "1", "2Gi", "2", "4Gi", elastic=True, checkpoint_s=100.0)
PS = BoundPod("u-ps", Role.PS, "n0")


def workers(count: int, node: str = "n0", uid: str = "u") -> dict[str, BoundPod]:
    return {f"vgg-worker-{i}": BoundPod(f"{uid}-w{i}", Role.WORKER, node) for i in range(count)}


def whole(count: int = 3, **kwargs: str) -> dict[str, BoundPod]:
    return {"vgg-ps-0": PS, **workers(count, **kwargs)}


def training(spec: JobSpec = JOB, elastic: bool = True) -> Training:
    return Training(spec, 0.5, HardwareProfile(), elastic)


def test_a_rigid_job_trains_only_with_every_worker_and_an_elastic_one_with_its_minimum() -> None:
    rigid, elastic = training(elastic=False), training()
    for job in (rigid, elastic):
        job.place(0.0, whole(1))
    assert not rigid.training and elastic.training
    rigid.place(1.0, whole(3))
    assert rigid.training and rigid.eta(1.0) == pytest.approx(1.0 + JOB.samples / rigid.samples_s)


def test_it_checkpoints_on_its_interval_on_the_runs_clock_and_finishes_at_its_eta() -> None:
    job = training()
    job.place(0.0, whole())
    job.advance(120.0)
    assert job.checkpoints() == [pytest.approx(100.0)]
    assert job.since_save_s == pytest.approx(20.0) and job.checkpoints() == []
    eta = job.eta(120.0)
    assert eta is not None
    job.advance(eta + 5.0)
    assert job.finished and job.done == pytest.approx(JOB.samples)


def test_losing_its_ps_restarts_it_from_its_last_checkpoint_and_counts_the_lost_training() -> None:
    job = training()
    job.place(0.0, whole())
    job.place(70.0, workers(3))
    assert job.restarts == 1 and job.takings == [70.0] and not job.training
    assert job.lost_work_s == pytest.approx(20.0 * (1 + 3 * 2))
    assert job.done == job.saved
    job.place(80.0, whole(uid="v"))
    assert job.training and job.restarts == 1


def test_a_worker_taken_above_the_minimum_is_a_taking_without_restart_and_below_it_a_restart() -> None:
    job = training()
    job.place(0.0, whole())
    job.place(60.0, whole(1))
    assert (job.restarts, len(job.takings), job.lost_work_s) == (0, 1, 0.0) and job.training
    job.place(61.0, {"vgg-ps-0": PS})
    assert (job.restarts, len(job.takings)) == (1, 2)


def test_a_pod_replaced_between_two_looks_is_a_pod_lost() -> None:
    job = training()
    job.place(0.0, whole())
    job.place(70.0, {"vgg-ps-0": BoundPod("u-ps-2", Role.PS, "n0"), **workers(3)})
    assert job.restarts == 1 and job.training


def test_a_job_that_never_checkpoints_loses_everything_and_one_that_keeps_every_step_nothing() -> None:
    never = training(dataclasses.replace(JOB, checkpoint_s=None))
    always = training(dataclasses.replace(JOB, checkpoint_s=0.0))
    for job in (never, always):
        job.place(0.0, whole())
        job.place(60.0, {})
    assert never.lost_work_s == pytest.approx(60.0 * 7) and never.done == 0.0
    assert always.lost_work_s == 0.0 and always.done > 0.0 and always.checkpoints() == []


def test_a_finished_job_losing_its_pods_is_not_taken() -> None:
    job = training()
    job.place(0.0, whole())
    eta = job.eta(0.0)
    assert eta is not None
    job.place(eta + 1.0, {})
    assert job.takings == [] and job.restarts == 0
