"""Elastic jobs whose PodGroup asks for every replica, as training-operator makes it by default, and the
what-if check built on them: the PodGroup follows `Worker.replicas`, a smaller submission asks for less, and
the forecaster gives each such job a band at every smaller size."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.start_forecast import Forecast
from benchmarks.what_if_check import at_submission, drawn_pairs
from extender.policy.forecast.model import StartBand
from extender.sim.cluster import SimCluster
from extender.sim.engine import Simulation
from extender.sim.policies import Ours
from extender.sim.workload import JobSpec, NodeSpec, Workload, asking_all, resubmitted
from tests.builders import sim_job


def elastic(name: str, arrival: float, workers: int, minimum: int) -> JobSpec:
    return replace(
        sim_job(name, arrival, workers=workers, cpu="2"), elastic=True, min_workers=minimum, max_workers=workers * 2
    )


def small_workload() -> Workload:
    jobs = (
        elastic("a", 0.0, 4, 1),
        sim_job("b", 5.0, workers=2, cpu="2"),
        elastic("c", 10.0, 6, 2),
        elastic("d", 20.0, 3, 1),
    )
    return Workload("small", (NodeSpec("n0", "16", "64Gi"), NodeSpec("n1", "16", "64Gi")), jobs)


def min_member(cluster: SimCluster, job: str) -> int:
    assert cluster.model is not None
    return cluster.model.snapshot().groups[f"sim/{job}"].min_member


def test_asking_all_marks_only_the_elastic_jobs() -> None:
    asked = asking_all(small_workload())
    assert [job.gang_asks_all for job in asked.jobs] == [True, False, True, True]
    assert asked.name == "small-asking-all"


def test_the_podgroup_asks_every_replica_and_follows_them() -> None:
    cluster = SimCluster((NodeSpec("n", "16", "64Gi"),), feed_model=True)
    follows, pinned = asking_all(small_workload()).jobs[0], small_workload().jobs[0]
    cluster.submit(follows, 0.0, gang=True)
    cluster.submit(replace(pinned, name="pinned"), 0.0, gang=True)
    assert (min_member(cluster, "a"), min_member(cluster, "pinned")) == (5, 2)
    cluster.set_workers("a", 2, 10.0)
    cluster.set_workers("pinned", 2, 10.0)
    assert (min_member(cluster, "a"), min_member(cluster, "pinned")) == (3, 2)


def test_resubmitted_changes_only_that_jobs_workers() -> None:
    workload = asking_all(small_workload())
    smaller = resubmitted(workload, "c", 3)
    changed = [(old, new) for old, new in zip(workload.jobs, smaller.jobs, strict=True) if old != new]
    assert [(old.name, old.workers, new.workers) for old, new in changed] == [("c", 6, 3)]
    assert replace(changed[0][1], workers=6) == changed[0][0]


def test_jobs_asking_every_replica_all_finish_under_ours() -> None:
    result = Simulation(asking_all(small_workload()), Ours(), seed=1).run()
    assert all(p.finished is not None and not p.deadlocked for p in result.jobs.values())


def test_the_check_takes_each_jobs_first_forecast_at_submission_with_what_ifs() -> None:
    workload = small_workload()
    band = StartBand(10.0, 20.0, 40.0)
    smaller = ((2, StartBand(5.0, 10.0, 20.0)), (1, StartBand(0.0, 5.0, 10.0)))
    forecasts = [
        Forecast("c", 10.0, band, 3, smaller),
        Forecast("c", 40.0, band, 3, smaller),
        Forecast("d", 50.0, band, 3, smaller),
        Forecast("a", 0.0, band, 3, ()),
    ]
    kept = at_submission(forecasts, workload)
    assert list(kept) == ["c"], "d was forecast only long after it arrived, a with no what-if"
    pairs = drawn_pairs(kept, pairs=5, seed=1)
    assert [(pair.job, pair.made_at) for pair in pairs] == [("c", 10.0)]
    assert (pairs[0].workers, pairs[0].band) in smaller
