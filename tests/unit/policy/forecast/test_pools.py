"""Pools: on a cluster whose GPU nodes are tainted, a CPU job waits for CPU nodes however much CPU the GPU
nodes have free, a job tolerating the taint takes room from the GPU nodes first, and nodes no waiting pod may
go to are not counted at all."""

from __future__ import annotations

from dataclasses import replace

import pytest

from extender.policy.core.settings import PolicySettings
from extender.policy.forecast.inputs import forecast_inputs
from extender.policy.forecast.model import ForecastInputs
from extender.policy.forecast.montecarlo import forecast_starts
from extender.policy.forecast.pools import take_order
from tests.builders import Obj, make_node, make_pod, make_podgroup, make_sized_tfjob, snapshot
from tests.unit.policy.forecast.test_montecarlo import fixed_curve

GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATE_GPU = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


def cluster(*, tainted: bool) -> list[Obj]:
    cpu_nodes = [make_node(f"cpu-{i}", cpu="4") for i in range(2)]
    gpu_nodes = [make_node(f"gpu-{i}", cpu="16", gpu=4) for i in range(2)]
    for node in gpu_nodes:
        node["spec"]["taints"] = [GPU_TAINT] if tainted else []
    return [*cpu_nodes, *gpu_nodes]


def job(name: str, *, workers: int, node: str = "", tolerate: bool = False) -> list[Obj]:
    """A TFJob of 1 PS + `workers` of 2 CPUs each, its pods bound to `node` when given."""
    pods = [make_pod(f"{name}-ps-0", job=name, role="ps", group=name, cpu="2", node=node)] + [
        make_pod(f"{name}-worker-{i}", job=name, role="worker", index=i, group=name, cpu="2", node=node)
        for i in range(workers)
    ]
    for pod in pods:
        if tolerate:
            pod["spec"]["tolerations"] = TOLERATE_GPU
        if node:
            pod["status"]["phase"] = "Running"
    return [make_sized_tfjob(name, workers=workers, cpu="2"), make_podgroup(name, min_member=workers + 1), *pods]


def inputs_of(*objects: Obj) -> ForecastInputs:
    waiting, _ = forecast_inputs(snapshot(*objects), PolicySettings(), 0.0, [], {"default/running": 40.0})
    return replace(waiting, curve=fixed_curve(100))


@pytest.mark.parametrize(("tainted", "start"), [(True, 60.0), (False, 0.0)])
def test_a_cpu_job_waits_for_the_cpu_nodes_when_the_gpu_nodes_keep_it_out(tainted: bool, start: float) -> None:
    running = [*job("running", workers=1, node="cpu-0"), *job("other", workers=1, node="cpu-1")]
    objects = [*cluster(tainted=tainted), *running, *job("waiting", workers=1)]
    case = inputs_of(*objects)
    assert case.pooled()[0].capacity[0] == (8000.0 if tainted else 40000.0), "no waiting pod may use the GPU nodes"
    band = forecast_starts(case, 50, 1)["default/waiting"]
    assert band.p50_s == pytest.approx(start, abs=1.0), "the GPU nodes' 32 free CPUs are closed to it"


def test_a_gpu_job_that_tolerates_the_taint_takes_the_gpu_nodes_room_first() -> None:
    objects = [*cluster(tainted=True), *job("cpu-job", workers=1), *job("gpu-job", workers=1, tolerate=True)]
    case = inputs_of(*objects)
    pools = {gang.key: gang.pools for gang in case.waiting}
    assert len(pools["default/cpu-job"]) == 1, "only the CPU nodes admit it"
    assert len(pools["default/gpu-job"]) == 2, "every node admits it"
    assert take_order((0, 1), (1.0, 0.0, 1.0), ((4.0, 1.0, 0.0), (16.0, 1.0, 4.0))) == (1, 0)


def test_a_job_that_needs_more_than_its_pool_has_never_starts_and_says_where() -> None:
    objects = [*cluster(tainted=True), *job("wide", workers=4)]
    band = forecast_starts(inputs_of(*objects), 20, 1)["default/wide"]
    assert band.unknown.startswith("it needs more than the nodes it may go to have (node selector")
    assert "10 CPU of 8 CPU" in band.unknown


def test_a_tainted_control_plane_node_no_waiting_pod_tolerates_is_left_out() -> None:
    control = make_node("control-plane", cpu="64")
    control["spec"]["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    running = [*job("running", workers=1, node="cpu-0"), *job("other", workers=1, node="cpu-1")]
    case = inputs_of(*cluster(tainted=True), control, *running, *job("waiting", workers=1))
    (pool,) = case.pooled()
    assert pool.capacity[0] == 8000.0, "only the CPU nodes: the GPU nodes and the control plane keep it out"
    assert forecast_starts(case, 50, 1)["default/waiting"].p50_s == pytest.approx(60.0, abs=1.0)
