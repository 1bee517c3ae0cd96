"""The baselines play fair: Tiresias preempts only for a higher queue that cannot start otherwise, Optimus
keeps every job within its bounds and never resizes a rigid one, every policy gets the same jobs, and a
job that never completes still counts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from extender.sim import cli, report
from extender.sim.baselines import Tiresias
from extender.sim.engine import Simulation
from extender.sim.gpu_traces import gpu_gangs
from extender.sim.optimus import Optimus
from extender.sim.workload import NodeSpec, Workload, with_load
from tests.builders import sim_job


def nodes(count: int) -> tuple[NodeSpec, ...]:
    return tuple(NodeSpec(f"node-{i}", "8", "32Gi") for i in range(count))


def test_tiresias_does_not_preempt_while_the_higher_queue_job_fits_elsewhere() -> None:
    """`long` is in the low queue (past a tiny threshold) on one node; `short` arrives in the high queue and
    the other node is empty: it starts there and `long` keeps running."""
    trace = Workload("two-nodes", nodes(2), (sim_job("long", 0.0, epochs=2.0), sim_job("short", 100.0)))
    policy = Tiresias(threshold=1.0)
    result = report.metrics(Simulation(trace, policy).run())
    assert result["preemptions"] == 0
    jobs = result["jobs"]
    assert jobs["short"]["started_s"] < jobs["long"]["finished_s"]


def test_tiresias_preempts_a_lower_queue_job_when_the_higher_queue_cannot_start_otherwise() -> None:
    trace = Workload("one-node", nodes(1), (sim_job("long", 0.0, epochs=2.0), sim_job("short", 100.0)))
    result = report.metrics(Simulation(trace, Tiresias(threshold=1.0)).run())
    assert result["preemptions"] == 1
    jobs = result["jobs"]
    assert jobs["short"]["finished_s"] < jobs["long"]["finished_s"]


def test_tiresias_never_preempts_within_its_queue() -> None:
    """Both jobs stay in the high queue (a threshold nobody reaches): the second waits for the first."""
    trace = Workload("one-node", nodes(1), (sim_job("first", 0.0, epochs=2.0), sim_job("second", 100.0)))
    result = report.metrics(Simulation(trace, Tiresias(threshold=1e12)).run())
    assert result["preemptions"] == 0


def test_tiresias_preempts_nothing_on_an_uncontended_cluster() -> None:
    roomy = with_load(gpu_gangs(seed=1, jobs=30, nodes=32), 0.1)
    assert report.metrics(Simulation(roomy, Tiresias()).run())["preemptions"] == 0


class CheckedOptimus(Optimus):
    """Optimus with its bounds checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.restarted: list[str] = []

    def step(self, now: float) -> None:
        before = {name: sorted(p.uid for p in j.pods.values() if p.bound) for name, j in self.cluster.jobs.items()}
        super().step(now)
        for name, uids in before.items():
            now_bound = sorted(p.uid for p in self.cluster.jobs[name].pods.values() if p.bound)
            if uids and not self.cluster.jobs[name].finished and not set(uids) <= set(now_bound):
                self.restarted.append(name)
        for simulated in self.cluster.jobs.values():
            spec = simulated.spec
            if simulated.finished:
                continue
            assert (spec.min_workers if simulated.elastic else spec.workers) <= simulated.workers, spec.name
            assert simulated.workers <= (spec.max_workers if simulated.elastic else spec.workers), spec.name


def test_optimus_keeps_elastic_jobs_within_bounds_and_never_resizes_a_rigid_one() -> None:
    elastic = [
        replace(sim_job(f"elastic-{i}", 30.0 * i, workers=3, cpu="2"), min_workers=2, max_workers=6, elastic=True)
        for i in range(4)
    ]
    rigid = [sim_job(f"rigid-{i}", 15.0 + 30.0 * i, workers=2, cpu="2") for i in range(3)]
    trace = Workload("mixed", nodes(3), tuple(sorted([*elastic, *rigid], key=lambda j: j.arrival_s)))
    policy = CheckedOptimus()
    result = report.metrics(Simulation(trace, policy).run())
    assert result["censored_jobs"] == 0
    assert policy.restarted, "the elastic jobs were resized"
    assert not [name for name in policy.restarted if name.startswith("rigid")]


@pytest.mark.parametrize("policy", sorted(cli.POLICIES))
def test_every_policy_gets_the_same_jobs(policy: str) -> None:
    elastic = replace(sim_job("elastic", 0.0, workers=2, cpu="2"), min_workers=1, max_workers=3, elastic=True)
    trace = Workload("same", nodes(1), (elastic, sim_job("rigid", 0.0, workers=2, cpu="2")))
    simulation = Simulation(trace, cli.POLICIES[policy]())
    simulation.run()
    assert simulation.cluster.jobs["elastic"].elastic
    assert not simulation.cluster.jobs["rigid"].elastic


def test_a_job_that_never_completes_counts_until_the_end_of_the_run() -> None:
    """The default scheduler strands `b` (see test_simulator): it is censored, not left out."""
    trace = Workload(
        "deadlock",
        (NodeSpec("node-0", "6", "16Gi"),),
        (sim_job("c", 0.0, cpu="3"), sim_job("a", 10.0, workers=2, cpu="2500m"), sim_job("b", 20.0, cpu="2")),
    )
    result = Simulation(trace, cli.POLICIES["default"]()).run()
    metrics = report.metrics(result)
    assert metrics["censored_jobs"] == 1
    completed = [p.finished - p.spec.arrival_s for p in result.jobs.values() if p.finished and not p.deadlocked]
    censored = result.makespan_s - 20.0
    assert metrics["avg_jct_s"] == pytest.approx((sum(completed) + censored) / 3, abs=0.1)
