"""The peer benchmark's workloads: the contended workloads it builds, the nodes it makes, the TFJobs it submits.

`contended` turns a workload key and seed into a `Contended` case — the CPU mix (`cpu_mix`), the simulator's
gpu-gangs trace at a higher load, or KOD2 — with arrivals and run times scaled to the benchmark's time.
`set_nodes` makes the cluster's nodes exactly a given set and waits until they are Ready; `node_objects` and
`prefixed` name a workload's nodes after the workload. `tfjob_object`, `job_container` and `pod_roles` are the
TFJob, its containers' requests and its pods' names as training-operator would make them; in the KOD2
workload the TFJob declares what the simulator's does (`declarations`: suspendable, its checkpoint interval,
its elastic bounds).

For a scheduler whose gangs are Kubernetes' own, `native_podgroup` is the `scheduling.k8s.io` PodGroup an
integrating controller makes for a job before its pods (a gang policy whose `minCount` is every pod of the
job), and `join_native_group` puts a pod spec in it (`spec.schedulingGroup.podGroupName`, immutable once the
pod exists, so it is set at creation: on the pods made here, and on the TFJob's replica templates, which
training-operator copies into the pods it makes). No Workload is made: a PodGroup's `spec.workloadRef` is
optional and kube-scheduler reads PodGroups and pods only.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from extender.devcluster import kwok_node
from extender.policy.core.views import Role
from extender.sim.gpu_traces import gpu_gangs
from extender.sim.throughput import MODELS, HardwareProfile
from extender.sim.workload import (
    KOD2_BATCHES,
    JobSpec,
    NodeSpec,
    Workload,
    kod2,
    replace_spec,
    with_load,
    with_run_time,
)
from extender.state.gang_annotations import (
    CHECKPOINT_INTERVAL_ANNOTATION,
    MAX_WORKERS_ANNOTATION,
    MIN_WORKERS_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
)
from tests.e2e.bulk import Api, create_all, delete_all, list_all

CPU_MIX_JOBS = 24
CPU_MIX_NODES = 8
CPU_MIX_NODE_CPU = 16
CPU_MIX_MEMORY_PER_CPU_GI = 2
CPU_MIX_RUN_S = (15.0, 45.0)
"""A CPU-mix job's run time with every worker beside its PS, seconds (uniform); other placements run longer."""
CPU_MIX_NIC_GBPS = 10.0
"""The CPU-mix nodes' network (Gb/s). At the KOD2 testbed's 1 Gb/s a job spread over nodes runs up to 15×
longer than beside its PS (a single run of the mix then lasts many minutes); at 10 Gb/s up to 1.6×."""
GPU_GANG_JOBS = 30
GPU_GANG_LOAD = 3.0
"""gpu-gangs arrivals this many times as fast as the simulator's scenario has them (its 1.2 GPU-seconds asked
per GPU-second over the arrival window becomes 3.6), so that gangs queue."""


# -- nodes -------------------------------------------------------------------------------------------------


def set_nodes(api: Api, nodes: Sequence[dict[str, Any]], threads: int) -> None:
    """Make the cluster's nodes exactly `nodes`: delete the others, create the missing, wait until all are Ready."""
    wanted = {node["metadata"]["name"]: node for node in nodes}
    existing = {node["metadata"]["name"] for node in list_all(api, "/api/v1/nodes")}
    delete_all(api, [f"/api/v1/nodes/{name}" for name in sorted(existing - set(wanted))], threads)
    missing = [("/api/v1/nodes", name, orjson.dumps(node)) for name, node in wanted.items() if name not in existing]
    started = time.monotonic()
    create_all(api, missing, threads, None)
    deadline = time.monotonic() + 600
    while True:
        listed = list_all(api, "/api/v1/nodes")
        ready = sum(
            any(c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions") or [])
            for n in listed
            if n["metadata"]["name"] in wanted
        )
        if ready == len(wanted) and len(listed) == len(wanted):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {ready} of {len(wanted)} nodes turned Ready")
        time.sleep(1)
    print(f"# {len(wanted)} nodes Ready ({len(missing)} created in {time.monotonic() - started:.1f}s)", flush=True)


def node_objects(workload: Workload) -> list[dict[str, Any]]:
    return [
        kwok_node(f"{workload.name}-{node.name}", cpu=node.cpu, memory=node.memory, gpu=node.gpu)
        for node in workload.nodes
    ]


# -- workloads ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Contended:
    """A contended workload: its jobs, when they arrive (seconds, already scaled), how they are submitted,
    and the factor from the throughput model's seconds to the benchmark's."""

    key: str
    workload: Workload
    time_scale: float
    through_operator: bool
    declared: bool = False
    """Whether its TFJobs say what the simulator's jobs say (`declarations`): elastic bounds, suspendable,
    checkpoint interval; its pods then report each checkpoint."""


def cpu_mix(seed: int) -> Workload:
    """The CPU-only mix: 8 nodes × 16 CPU, 24 rigid TFJobs of 1 PS and 1–15 workers, 1 or 2 CPU per pod (2 GiB
    per CPU), models and batches of the simulator's KOD2 set, all submitted at once; each job's work is what it
    trains in 15–45 s with every worker beside its PS on a 10 Gb/s network."""
    rng = random.Random(seed)
    hardware = HardwareProfile(nic_bytes_s=CPU_MIX_NIC_GBPS * 1e9 / 8)
    nodes = tuple(
        NodeSpec(f"node-{i}", str(CPU_MIX_NODE_CPU), f"{CPU_MIX_NODE_CPU * 4}Gi") for i in range(CPU_MIX_NODES)
    )
    jobs = []
    for index in range(CPU_MIX_JOBS):
        workers = rng.randint(1, 15)
        ps_cpu, worker_cpu = rng.choice((1, 2)), rng.choice((1, 2))
        spec = JobSpec(
            name=f"job-{index:02d}",
            arrival_s=0.0,
            model=rng.choice(list(MODELS)),
            batch=rng.choice(KOD2_BATCHES),
            epochs=1.0,
            ps=1,
            workers=workers,
            min_workers=workers,
            max_workers=workers,
            ps_cpu=str(ps_cpu),
            ps_memory=f"{ps_cpu * CPU_MIX_MEMORY_PER_CPU_GI}Gi",
            worker_cpu=str(worker_cpu),
            worker_memory=f"{worker_cpu * CPU_MIX_MEMORY_PER_CPU_GI}Gi",
            elastic=False,
        )
        jobs.append(with_run_time(spec, rng.uniform(*CPU_MIX_RUN_S), hardware))
    return Workload(f"cpu-mix-s{seed}", nodes, tuple(jobs), nic_gbps=CPU_MIX_NIC_GBPS)


def contended(key: str, seed: int, args: argparse.Namespace) -> Contended:
    if key == "cpu-mix":
        return Contended(key, cpu_mix(seed), 1.0, through_operator=False)
    if key == "gpu-gangs":
        trace = with_load(gpu_gangs(seed, jobs=GPU_GANG_JOBS), GPU_GANG_LOAD)
        return Contended(key, scaled_arrivals(trace, args.gpu_time_scale), args.gpu_time_scale, False)
    if key == "kod2":
        workload = scaled_arrivals(kod2(seed), args.kod2_time_scale)
        return Contended(key, workload, args.kod2_time_scale, through_operator=True, declared=True)
    raise ValueError(f"unknown contended workload {key!r}")


def scaled_arrivals(workload: Workload, scale: float) -> Workload:
    jobs = tuple(replace_spec(job, arrival_s=job.arrival_s * scale) for job in workload.jobs)
    return Workload(workload.name, workload.nodes, jobs, workload.nic_gbps)


def resources_of(spec: JobSpec, role: Role) -> dict[str, Any]:
    requests: dict[str, str] = {
        "cpu": spec.ps_cpu if role is Role.PS else spec.worker_cpu,
        "memory": spec.ps_memory if role is Role.PS else spec.worker_memory,
    }
    if role is Role.WORKER and spec.worker_gpu:
        gpus = {"nvidia.com/gpu": str(spec.worker_gpu)}
        return {"requests": {**requests, **gpus}, "limits": gpus}
    return {"requests": requests}


def job_container(spec: JobSpec, role: Role) -> dict[str, Any]:
    return {"name": "tensorflow", "image": "example.org/tf-train:2.16", "resources": resources_of(spec, role)}


def native_podgroup(api_version: str, name: str, min_count: int) -> dict[str, Any]:
    """Kubernetes' own PodGroup `name` (`api_version`: the served `scheduling.k8s.io` version) for a gang of
    `min_count` pods: kube-scheduler binds all of them or none."""
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def native_podgroups_path(api_version: str, namespace: str) -> str:
    return f"/apis/{api_version}/namespaces/{namespace}/podgroups"


def join_native_group(pod_spec: dict[str, Any], group: str) -> dict[str, Any]:
    """`pod_spec` (a pod's or a pod template's `spec`), joined to Kubernetes' own PodGroup `group`."""
    pod_spec["schedulingGroup"] = {"podGroupName": group}
    return pod_spec


def tfjob_object(
    spec: JobSpec, scheduler: str, native_group: str | None = None, declared_scale: float | None = None
) -> dict[str, Any]:
    """The TFJob of `spec` whose pods name `scheduler`; with `native_group`, every replica template joins that
    `scheduling.k8s.io` PodGroup; with `declared_scale` (the run's time scale), it declares what the
    simulator's job would (`declarations`)."""

    def replica(count: int, role: Role) -> dict[str, Any]:
        pod_spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [job_container(spec, role)]}
        if native_group is not None:
            join_native_group(pod_spec, native_group)
        return {"replicas": count, "restartPolicy": "Never", "template": {"spec": pod_spec}}

    job: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": spec.name},
        "spec": {"tfReplicaSpecs": {"PS": replica(spec.ps, Role.PS), "Worker": replica(spec.workers, Role.WORKER)}},
    }
    if declared_scale is not None:
        job["metadata"]["annotations"] = declarations(spec, declared_scale)
        if spec.elastic:
            job["spec"]["enableDynamicWorker"] = True
            job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": spec.ps + spec.min_workers}}
    return job


def declarations(spec: JobSpec, time_scale: float) -> dict[str, str]:
    """What the simulator's TFJob of `spec` declares (`extender/sim/cluster.py`), on the run's clock: it may be
    suspended, its checkpoint interval (if it checkpoints), its elastic bounds (if elastic, with its
    PodGroup's minimum at its PS and fewest workers)."""
    annotations = {SUSPENDABLE_ANNOTATION: "true"}
    if spec.checkpoint_s is not None:
        annotations[CHECKPOINT_INTERVAL_ANNOTATION] = f"{max(spec.checkpoint_s * time_scale, 1.0):g}"
    if spec.elastic:
        annotations[MIN_WORKERS_ANNOTATION] = str(spec.min_workers)
        annotations[MAX_WORKERS_ANNOTATION] = str(spec.max_workers)
    return annotations


def pod_roles(spec: JobSpec) -> dict[str, Role]:
    """Pod name → role, as training-operator names a TFJob's pods."""
    names = {f"{spec.name}-ps-{i}": Role.PS for i in range(spec.ps)}
    names.update({f"{spec.name}-worker-{i}": Role.WORKER for i in range(spec.workers)})
    return names


def prefixed(workload: Workload) -> Workload:
    nodes = tuple(NodeSpec(f"{workload.name}-{node.name}", node.cpu, node.memory, node.gpu) for node in workload.nodes)
    return Workload(workload.name, nodes, workload.jobs, workload.nic_gbps)
