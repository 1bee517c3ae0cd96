"""Tainted nodes in the simulator: only jobs that tolerate the taint go there, the policies that do not read
taints refuse such a workload, and a trace keeps its taints and tolerations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from extender.sim import cluster as sim_cluster
from extender.sim.baselines import Kod2
from extender.sim.engine import Simulation
from extender.sim.policies import DefaultKubeScheduler, Ours, Policy
from extender.sim.workload import GPU_NODE_TAINT, NodeSpec, Workload, load_trace, pai_pools, save_trace
from tests.builders import sim_job

GPU_NODE = NodeSpec("gpu-0", "16", "64Gi", 4, taints=(GPU_NODE_TAINT,))
CPU_NODE = NodeSpec("cpu-0", "16", "64Gi")


def workload() -> Workload:
    cpu_jobs = [sim_job(f"cpu-{i}", arrival=10.0 * i, workers=2) for i in range(3)]
    gpu_job = replace(sim_job("gpu", arrival=0.0, workers=2), tolerations=(GPU_NODE_TAINT,))
    return Workload("pools", (GPU_NODE, CPU_NODE), (*cpu_jobs, gpu_job))


def test_a_node_admits_a_job_only_if_it_tolerates_every_taint_that_keeps_pods_out() -> None:
    cpu_job, *_, gpu_job = workload().jobs
    assert (GPU_NODE.admits(cpu_job), GPU_NODE.admits(gpu_job)) == (False, True)
    assert CPU_NODE.admits(cpu_job) and CPU_NODE.admits(gpu_job)
    soft = NodeSpec("soft", "8", "8Gi", taints=("spot=true:PreferNoSchedule",))
    assert soft.admits(cpu_job), "PreferNoSchedule only scores"


@pytest.mark.parametrize("policy", [Ours, DefaultKubeScheduler])
def test_pods_go_only_to_nodes_whose_taints_they_tolerate(
    policy: type[Policy], monkeypatch: pytest.MonkeyPatch
) -> None:
    bound: list[tuple[str, str]] = []
    bind = sim_cluster.SimCluster.bind

    def recording(self: sim_cluster.SimCluster, key: str, node: str, *, at: float = 0.0) -> None:
        bound.append((self.pods[key].job, node))
        bind(self, key, node, at=at)

    monkeypatch.setattr(sim_cluster.SimCluster, "bind", recording)
    result = Simulation(workload(), policy(), seed=1).run()
    assert all(progress.finished is not None for progress in result.jobs.values())
    assert {node for job, node in bound if job.startswith("cpu-")} == {"cpu-0"}


def test_a_policy_that_does_not_read_taints_refuses_a_tainted_workload() -> None:
    with pytest.raises(ValueError, match="kod2 does not read node taints"):
        Simulation(workload(), Kod2(), seed=1)


def test_a_trace_keeps_its_taints_and_tolerations(tmp_path: Path) -> None:
    trace = pai_pools(seed=2, jobs=12, nodes=4)
    save_trace(trace, tmp_path / "trace.json")
    loaded = load_trace(tmp_path / "trace.json")
    assert loaded.nodes == trace.nodes and loaded.tainted
    assert [job.tolerations for job in loaded.jobs] == [job.tolerations for job in trace.jobs]
