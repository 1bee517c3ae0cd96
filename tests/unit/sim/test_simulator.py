"""The simulator: deterministic runs, the ordering of policies on small traces, partial-placement deadlock."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from extender.policy.core.settings import PolicySettings
from extender.sim import cli, report
from extender.sim.cluster import SimCluster
from extender.sim.engine import RunResult, Simulation
from extender.sim.gpu_traces import gpu_gangs, heavy_tail, mixed
from extender.sim.kube import KubeScheduler
from extender.sim.policies import Ours
from extender.sim.throughput import HardwareProfile
from extender.sim.workload import (
    JobSpec,
    NodeSpec,
    Workload,
    from_snapshot,
    kod2,
    load_trace,
    pai_like,
    save_trace,
    with_load,
    with_run_time,
)
from extender.state.manifests import dump_state
from tests.builders import sim_job


def run(workload: Workload, policy: str, seed: int = 1) -> dict[str, object]:
    return report.metrics(Simulation(workload, cli.POLICIES[policy](), seed=seed).run())


@pytest.mark.parametrize("policy", sorted(cli.POLICIES))
def test_the_same_seed_gives_the_same_metrics(policy: str) -> None:
    assert run(kod2(3), policy, seed=3) == run(kod2(3), policy, seed=3)


def test_the_same_arguments_give_the_same_report_file(tmp_path: Path) -> None:
    def report_of(out: Path) -> str:
        results: list[RunResult] = [Simulation(kod2(2), cli.POLICIES[p](), seed=2).run() for p in ("ours", "default")]
        report.write(results, out, {"workload": "kod2", "seed": 2})
        return (out / "report.json").read_text()

    assert report_of(tmp_path / "a") == report_of(tmp_path / "b")


def test_a_trace_file_round_trips(tmp_path: Path) -> None:
    trace = pai_like(seed=4, jobs=12, nodes=3)
    save_trace(trace, tmp_path / "trace.json")
    assert load_trace(tmp_path / "trace.json") == trace


def test_kod2_scenario_orders_the_policies() -> None:
    """Regression on a small trace: gangs and co-location beat per-pod FIFO, and nobody deadlocks."""
    metrics = {policy: run(kod2(1), policy) for policy in ("ours", "default", "gang-fifo")}
    jct = {policy: m["avg_jct_s"] for policy, m in metrics.items()}
    assert jct["ours"] < jct["gang-fifo"] < jct["default"]  # type: ignore[operator]
    assert metrics["ours"]["cpu_util_mean"] > metrics["default"]["cpu_util_mean"]  # type: ignore[operator]
    assert all(m["censored_jobs"] == 0 for m in metrics.values())
    assert all(m["completed_jobs"] == 10 for m in metrics.values())


def test_per_pod_fifo_deadlocks_on_partial_placements_and_gangs_do_not() -> None:
    """One 6-core node, c running on 4 cores: a's PS and b's PS take the 2 free cores; when c ends, a gets
    one worker, and neither a (one 2.5-core worker short) nor b (2 cores short) can ever start with the
    1.5 cores left. The simulator terminates the younger, b, as deadlocked; a then runs."""
    workload = Workload(
        "deadlock",
        (NodeSpec("node-0", "6", "16Gi"),),
        (
            sim_job("c", 0.0, workers=1, cpu="3"),
            sim_job("a", 10.0, workers=2, cpu="2500m"),
            sim_job("b", 20.0, workers=1, cpu="2"),
        ),
    )
    default = run(workload, "default")
    assert default["censored_jobs"] == 1
    assert default["jobs"]["b"]["censored"]  # type: ignore[index]
    assert default["completed_jobs"] == 2
    for policy in ("ours", "gang-fifo", "kod2", "tiresias"):
        assert run(workload, policy)["censored_jobs"] == 0, policy


def test_simulate_command_writes_report_and_table(tmp_path: Path) -> None:
    from extender.__main__ import main

    code = main(["simulate", "--scenario", "kod2", "--policy", "ours", "--policy", "default", "--out", str(tmp_path)])
    assert code == 0
    written = json.loads((tmp_path / "report.json").read_text())
    assert set(written["policies"]) == {"ours", "default"}
    for key in ("avg_jct_s", "p95_jct_s", "makespan_s", "avg_queue_s", "cpu_util_mean", "gpu_util_mean"):
        assert key in written["policies"]["ours"]
    assert "| ours " in (tmp_path / "table.md").read_text()


def test_ours_grows_an_elastic_job_into_idle_capacity_through_the_real_scaler() -> None:
    """One elastic job submitted at 1 worker (max 3) on an otherwise empty node: the service's `ScalerLoop`
    scales it out, the new workers land where it planned them, and it never exceeds its maximum."""
    elastic = replace(sim_job("grow", 0.0, workers=1, cpu="2", epochs=0.5), min_workers=1, max_workers=3)
    elastic = replace(elastic, elastic=True)
    trace = Workload("tiny", (NodeSpec("node-0", "8", "16Gi"),), (elastic,))
    policy = Ours()
    result = Simulation(trace, policy).run()
    assert policy.scaler is not None
    grown = [r for r in policy.scaler.records if r.kind == "scale-out" and r.outcome == "done"]
    assert result.scale_actions > 0
    assert grown
    assert grown[0].replicas_from == 1
    assert max(r.replicas_to for r in grown) == 3
    assert ("sim/grow", "ScaledOut") in {(key, reason) for key, reason, _ in policy.actuator.events}
    assert report.metrics(result)["completed_jobs"] == 1
    static = Simulation(trace, Ours(scaler=False)).run()
    assert static.scale_actions == 0
    assert report.metrics(result)["avg_jct_s"] < report.metrics(static)["avg_jct_s"]


def test_a_debug_state_dump_replays_its_nodes_and_tfjobs(tmp_path: Path) -> None:
    policy = Ours(scaler=False)
    simulation = Simulation(kod2(1), policy)
    for spec in kod2(1).jobs[:4]:
        policy.submit(spec, spec.arrival_s)
        policy.step(spec.arrival_s)
    assert simulation.cluster.model is not None
    dump = tmp_path / "state.json"
    dump.write_text(json.dumps(dump_state(simulation.cluster.model.snapshot())))
    replayed = from_snapshot(dump)
    assert [n.name for n in replayed.nodes] == ["node-0", "node-1", "node-2"]
    assert [j.name for j in replayed.jobs] == [j.name for j in kod2(1).jobs[:4]]
    assert [j.arrival_s for j in replayed.jobs] == [0.0, 30.0, 60.0, 90.0]
    first = replayed.jobs[0]
    assert (first.ps, first.workers, first.min_workers, first.max_workers) == (1, 2, 1, 4)
    assert report.metrics(Simulation(replayed, Ours()).run())["completed_jobs"] == 4


def gpu_job(name: str, arrival: float, *, gpus: int, epochs: float) -> JobSpec:
    """A rigid job: a CPU PS and `gpus` one-GPU workers."""
    job = sim_job(name, arrival, workers=gpus, cpu="4", epochs=epochs)
    return replace(job, model="resnet50", ps_cpu="2", ps_memory="8Gi", worker_memory="16Gi", worker_gpu=1)


def test_ours_beats_gang_fifo_on_a_small_contended_rigid_trace() -> None:
    """One 4-GPU node, busy with `first`. `wide` (4 GPUs) arrives before four 1-GPU gangs of the same length.
    Gang-FIFO starts `wide` when `first` ends and the four small gangs wait behind it; ours ranks smaller
    gangs first (a weight that grows with a rigid job's size would rank `wide` first), so four jobs finish
    early and one late instead of one early and four late."""
    node = NodeSpec("node-0", "32", "192Gi", 4)
    jobs = (
        gpu_job("first", 0.0, gpus=4, epochs=4.0),
        gpu_job("wide", 10.0, gpus=4, epochs=4.0),
        *(gpu_job(f"small-{i}", 20.0 + i, gpus=1, epochs=1.0) for i in range(4)),
    )
    trace = Workload("contended-rigid", (node,), jobs, nic_gbps=25.0)
    ours, fifo = run(trace, "ours"), run(trace, "gang-fifo")
    assert ours["censored_jobs"] == fifo["censored_jobs"] == 0
    assert ours["avg_jct_s"] < 0.85 * fifo["avg_jct_s"]  # type: ignore[operator]
    started = {name: job["started_s"] for name, job in ours["jobs"].items()}  # type: ignore[attr-defined]
    assert all(started[f"small-{i}"] < started["wide"] for i in range(4))


def timed_gpu_job(name: str, arrival: float, *, gpus: int, run_s: float) -> JobSpec:
    """A rigid GPU job that trains for about `run_s` seconds at its size."""
    return with_run_time(gpu_job(name, arrival, gpus=gpus, epochs=1.0), run_s, HardwareProfile(nic_bytes_s=25e9 / 8))


def test_ours_suspends_a_long_runner_for_fresh_jobs_once_run_times_show_a_long_tail() -> None:
    """One 4-GPU node. Nine 1-GPU jobs of a minute and one of twenty minutes finish first: a long tail.
    Then `runner` takes the whole node for an hour, and four 1-minute jobs arrive once it has run longer
    than the short ones did. Ours suspends `runner` (it resumes from its checkpoint afterwards), so the
    four do not wait an hour; with too little history to judge (the same run with a higher
    `suspension_min_history`), they do."""
    node = NodeSpec("node-0", "32", "192Gi", 4)
    jobs = (
        *(timed_gpu_job(f"short-{i}", float(i), gpus=1, run_s=60.0) for i in range(9)),
        timed_gpu_job("tail", 9.0, gpus=1, run_s=1200.0),
        timed_gpu_job("runner", 1300.0, gpus=4, run_s=3600.0),
        *(timed_gpu_job(f"fresh-{i}", 1600.0 + i, gpus=1, run_s=60.0) for i in range(4)),
    )
    trace = Workload("long-tail", (node,), jobs, nic_gbps=25.0)

    def fresh_jct(policy: Ours) -> float:
        result = report.metrics(Simulation(trace, policy, seed=1).run())
        assert result["censored_jobs"] == 0
        times = result["jobs"]
        return float(max(times[f"fresh-{i}"]["finished_s"] - times[f"fresh-{i}"]["arrival_s"] for i in range(4)))

    suspending = Ours()
    assert fresh_jct(suspending) < 600.0
    assert suspending.actuator.suspended >= 1
    waiting = Ours(PolicySettings(suspension_min_history=11))
    assert fresh_jct(waiting) > 3000.0 and waiting.actuator.suspended == 0


def test_the_gpu_scenarios_have_their_shapes() -> None:
    rigid, heavy, mixed_jobs = gpu_gangs(seed=2), heavy_tail(seed=2), mixed(seed=2)
    for trace in (rigid, heavy, mixed_jobs):
        assert all(node.gpu == 4 for node in trace.nodes)
        assert all(job.worker_gpu == 1 and 1 <= job.workers <= 8 for job in trace.jobs)
    assert not any(job.elastic for job in rigid.jobs) and not any(job.elastic for job in heavy.jobs)
    assert {job.elastic for job in mixed_jobs.jobs} == {True, False}
    assert all(job.min_workers == job.max_workers == job.workers for job in rigid.jobs)
    # the same draws: mixed only loosens the bounds of its elastic jobs
    assert [job.workers for job in rigid.jobs] == [job.workers for job in mixed_jobs.jobs]


def test_load_compresses_arrivals_and_keeps_the_jobs() -> None:
    trace = gpu_gangs(seed=1, jobs=20, nodes=4)
    faster = with_load(trace, 2.0)
    assert [job.arrival_s for job in faster.jobs] == [round(job.arrival_s / 2, 1) for job in trace.jobs]
    assert [replace(job, arrival_s=0.0) for job in faster.jobs] == [replace(job, arrival_s=0.0) for job in trace.jobs]
    assert with_load(trace, 1.0) is trace
    with pytest.raises(ValueError, match="positive"):
        with_load(trace, 0.0)


def test_the_emulated_kube_scheduler_retries_an_unschedulable_pod_on_pod_events_not_on_tfjob_writes() -> None:
    """kube-scheduler watches pods and nodes, not TFJobs or PodGroups: an annotation on a TFJob (a plan, a
    run time) does not move a backing-off pod back to the queue; a pod created or deleted does."""
    cluster = SimCluster((NodeSpec("node-0", "4", "16Gi"),), feed_model=False)
    scheduler = KubeScheduler(cluster, random.Random(1))
    cluster.submit(sim_job("big", 0.0, workers=1, cpu="6"), 0.0, gang=False)
    scheduler.cycle(0.0)
    tried = scheduler.attempts
    cluster.annotate("big", {"tfjob-extender.io/run-s": "1"}, 20.0)
    scheduler.cycle(30.0)
    assert scheduler.attempts == tried, "the worker waits for a pod event or the flush"
    cluster.submit(sim_job("small", 30.0, workers=1, cpu="1"), 30.0, gang=False)
    scheduler.cycle(31.0)
    assert scheduler.attempts > tried + 2, "a pod event retries the waiting worker as well as the new pods"
