"""What gets simulated: nodes and jobs, from the KOD2 experiment, a PAI-shaped generator, a trace file or a
live `/debug/state` dump.

A trace file is JSON: `{"nodes": [NodeSpec...], "jobs": [JobSpec...]}` with the field names below
(resources as Kubernetes quantities), so a workload can be edited by hand or produced by another tool.
Generators take an explicit seed and use their own `random.Random`, so a seed always gives the same trace.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from extender.policy.core.resources import PODS, Resources
from extender.policy.core.views import Role
from extender.sim.throughput import MODELS, HardwareProfile, Task, job_rate
from extender.state import convert
from extender.state.manifests import read_documents

CIFAR10_TRAIN_SAMPLES = 50_000
SNAPSHOT_MODEL_ANNOTATION = "tfjob-extender.io/sim-model"
SNAPSHOT_BATCH_ANNOTATION = "tfjob-extender.io/sim-batch"
SNAPSHOT_EPOCHS_ANNOTATION = "tfjob-extender.io/sim-epochs"
KEEPING_OUT = (":NoSchedule", ":NoExecute")
"""Taint effects that keep out a pod not tolerating them (`PreferNoSchedule` only scores)."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    name: str
    cpu: str
    memory: str
    gpu: int = 0
    taints: tuple[str, ...] = ()
    """`key=value:Effect` (or `key:Effect`): with `NoSchedule` or `NoExecute`, only jobs that tolerate it
    (`JobSpec.tolerations`) may go there."""

    def admits(self, job: JobSpec) -> bool:
        """Whether the job's pods may go here: it tolerates every taint that keeps pods out."""
        return all(taint in job.tolerations for taint in self.taints if taint.endswith(KEEPING_OUT))

    @property
    def allocatable(self) -> Resources:
        return Resources.parse({"cpu": self.cpu, "memory": self.memory, "nvidia.com/gpu": self.gpu, "pods": 110})


@dataclass(frozen=True, slots=True)
class JobSpec:
    name: str
    arrival_s: float
    model: str
    batch: int
    epochs: float
    """Training work: passes over CIFAR-10's 50 000 training images."""
    ps: int
    workers: int
    """Worker replicas as submitted."""
    min_workers: int
    max_workers: int
    ps_cpu: str
    ps_memory: str
    worker_cpu: str
    worker_memory: str
    worker_gpu: int = 0
    elastic: bool = True
    """Submitted with `enableDynamicWorker` and min/max annotations (policies that resize may use them)."""
    checkpoint_s: float | None = 0.0
    """Seconds of training between two checkpoints: a restart (eviction, suspension) loses the progress
    made since the last one. None: it never checkpoints (a restart loses everything); 0: it keeps every
    step (no loss)."""
    tolerations: tuple[str, ...] = ()
    """Node taints its pods tolerate, as `NodeSpec.taints` spells them."""
    gang_asks_all: bool = False
    """An elastic job's PodGroup asks for every replica and follows `Worker.replicas` (training-operator's
    PodGroup when the TFJob sets no `schedulingPolicy.minAvailable`); else it asks for the PS and
    `min_workers` (a rigid job's always asks for every replica)."""

    @property
    def samples(self) -> float:
        return self.epochs * CIFAR10_TRAIN_SAMPLES

    def requests(self, role: Role) -> Resources:
        if role is Role.PS:
            return Resources.parse({"cpu": self.ps_cpu, "memory": self.ps_memory}) + Resources({PODS: 1})
        quantities: dict[str, str | int] = {"cpu": self.worker_cpu, "memory": self.worker_memory}
        if self.worker_gpu:
            quantities["nvidia.com/gpu"] = self.worker_gpu
        return Resources.parse(quantities) + Resources({PODS: 1})


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    nodes: tuple[NodeSpec, ...]
    jobs: tuple[JobSpec, ...]
    nic_gbps: float = 1.0
    """Node network bandwidth (Gb/s) for the throughput model."""

    @property
    def hardware(self) -> HardwareProfile:
        return HardwareProfile(nic_bytes_s=self.nic_gbps * 1e9 / 8)

    @property
    def tainted(self) -> bool:
        """Whether some node keeps some job out."""
        return any(not node.admits(job) for node in self.nodes for job in self.jobs)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nic_gbps": self.nic_gbps,
            "nodes": [asdict(n) for n in self.nodes],
            "jobs": [asdict(j) for j in self.jobs],
        }


def load_trace(path: Path) -> Workload:
    """A trace file; its jobs' `checkpoint_s` where given, else drawn as the built-in scenarios draw it."""
    document = json.loads(path.read_text())
    nodes = tuple(NodeSpec(**(node | {"taints": tuple(node.get("taints", ()))})) for node in document["nodes"])
    specs = (JobSpec(**(job | {"tolerations": tuple(job.get("tolerations", ()))})) for job in document["jobs"])
    jobs = tuple(sorted(specs, key=lambda j: (j.arrival_s, j.name)))
    declared = frozenset(str(job["name"]) for job in document["jobs"] if "checkpoint_s" in job)
    name = str(document.get("name") or path.stem)
    return with_checkpoints(Workload(name, nodes, jobs, float(document.get("nic_gbps", 1.0))), 0, keep=declared)


CHECKPOINT_RANGE_S = (300.0, 3600.0)
"""Seconds between checkpoints in the built-in scenarios: log-uniform over 5 to 60 minutes."""
NEVER_CHECKPOINTS_SHARE = 0.2
"""Share of jobs in the built-in scenarios that never checkpoint (a restart loses all their progress)."""


def with_checkpoints(workload: Workload, seed: int, keep: frozenset[str] = frozenset()) -> Workload:
    """`workload` with each job's checkpoint interval drawn (`CHECKPOINT_RANGE_S`, `NEVER_CHECKPOINTS_SHARE`)
    from a generator of its own, so the rest of the workload is the same as without; the jobs named in `keep`
    keep theirs (their draws are made all the same, so the others' do not depend on which are kept)."""
    rng = random.Random(f"{workload.name}/{seed}/checkpoints")
    low, high = (math.log(bound) for bound in CHECKPOINT_RANGE_S)
    jobs = []
    for job in workload.jobs:
        never = rng.random() < NEVER_CHECKPOINTS_SHARE
        interval = math.exp(rng.uniform(low, high))
        jobs.append(job if job.name in keep else replace(job, checkpoint_s=None if never else round(interval, 1)))
    return replace(workload, jobs=tuple(jobs))


def asking_all(workload: Workload) -> Workload:
    """`workload` with each elastic job's PodGroup asking for all its replicas (`JobSpec.gang_asks_all`), as
    training-operator makes it by default: such a job starts with every worker it was submitted with, and
    only a smaller submission (the forecast's what-if) starts with fewer."""
    jobs = tuple(replace(job, gang_asks_all=True) if job.elastic else job for job in workload.jobs)
    return replace(workload, name=f"{workload.name}-asking-all", jobs=jobs)


def resubmitted(workload: Workload, job: str, workers: int) -> Workload:
    """`workload` with `job` submitted with `workers` workers instead (its training work, elastic bounds and
    PodGroup rule unchanged)."""
    return replace(workload, jobs=tuple(replace(s, workers=workers) if s.name == job else s for s in workload.jobs))


KOD2_WORKER_SHAPES: Mapping[str, tuple[str, str]] = {
    "cnn-rand": ("1", "2Gi"),
    "vgg16": ("2", "4Gi"),
    "resnet50": ("3", "6Gi"),
    "resnext110": ("2", "4Gi"),
}
"""Worker CPU and memory per model in the KOD2 scenario (the paper gives none; heavier models ask more)."""
KOD2_EPOCHS: Mapping[str, float] = {"cnn-rand": 5.0, "vgg16": 1.0, "resnet50": 0.5, "resnext110": 1.0}
"""Training work per model, chosen so one job at its submitted size runs 3–15 minutes alone, consistent with
the paper's 30–60+ minutes for ten jobs under tf-operator."""
KOD2_BATCHES = (8, 16, 32, 64, 128)
PAI_NIC_GBPS = 25.0


def kod2_cell(model: str, batch: int, seed: int = 1) -> Workload:
    """One cell of the paper's Fig. 7 sweep: the KOD2 cluster and ten jobs of one model at one batch size."""
    mixed = kod2(seed)
    cpu, memory = KOD2_WORKER_SHAPES[model]
    jobs = tuple(
        replace_spec(
            job,
            name=f"{model}-{index}",
            model=model,
            batch=batch,
            epochs=KOD2_EPOCHS[model],
            worker_cpu=cpu,
            worker_memory=memory,
        )
        for index, job in enumerate(mixed.jobs)
    )
    return with_checkpoints(Workload(f"kod2-{model}-b{batch}", mixed.nodes, jobs), seed)


def kod2(seed: int = 1) -> Workload:
    """Table 2–3 of the KOD2 paper: 3 nodes (10 cores, 32 GB, 1 GPU), 10 TFJobs one every 30 s, each 1 PS and
    2–4 workers, models and batch sizes drawn round-robin / by seed."""
    rng = random.Random(seed)
    nodes = tuple(NodeSpec(f"node-{i}", "10", "32Gi", 1) for i in range(3))
    models = list(MODELS)
    jobs = []
    for index in range(10):
        model = models[index % len(models)]
        cpu, memory = KOD2_WORKER_SHAPES[model]
        workers = rng.randint(2, 4)
        jobs.append(
            JobSpec(
                name=f"{model}-{index}",
                arrival_s=30.0 * index,
                model=model,
                batch=rng.choice(KOD2_BATCHES),
                epochs=KOD2_EPOCHS[model],
                ps=1,
                workers=workers,
                min_workers=1,
                max_workers=4,
                ps_cpu="1",
                ps_memory="2Gi",
                worker_cpu=cpu,
                worker_memory=memory,
            )
        )
    return with_checkpoints(Workload("kod2", nodes, tuple(jobs)), seed)


def pai_like(seed: int = 1, jobs: int = 200, nodes: int = 32, mean_interarrival_s: float = 15.0) -> Workload:
    """A trace shaped like Alibaba PAI 2020's PS/worker TensorFlow jobs (cluster-trace-gpu-v2020,
    `pai_task_table`): one or two PS with CPU only (4–8 cores, 8–32 GB), workers with 1 GPU or a
    half-node CPU share, worker counts heavy-tailed (mostly 1–4, some up to 16), Poisson arrivals.
    Work is set from a log-normal run time at the submitted size on one node (median 30 minutes for GPU
    jobs, 20 for CPU jobs, capped at 3× the median), as traces record durations rather than work; the
    offered load over the arrival window is ≈ 0.9 of the GPUs. Machines are 8-GPU, 64-core, 512 GB on
    a 25 Gb/s network."""
    rng = random.Random(seed)
    node_specs = tuple(NodeSpec(f"node-{i:02d}", "64", "512Gi", 8) for i in range(nodes))
    hardware = HardwareProfile(nic_bytes_s=PAI_NIC_GBPS * 1e9 / 8)
    models = list(MODELS)
    specs = []
    clock = 0.0
    for index in range(jobs):
        clock += rng.expovariate(1.0 / mean_interarrival_s)
        model = rng.choice(models)
        workers = min(16, max(1, round(math.exp(rng.gauss(0.8, 0.8)))))
        gpu = 1 if rng.random() < 0.75 else 0
        spec = JobSpec(
            name=f"job-{index:03d}",
            arrival_s=round(clock, 1),
            model=model,
            batch=rng.choice((32, 64, 128, 256)),
            epochs=1.0,
            ps=1 if workers <= 8 else 2,
            workers=workers,
            min_workers=max(1, workers // 2),
            max_workers=min(32, workers * 2),
            ps_cpu=str(rng.choice((4, 6, 8))),
            ps_memory=f"{rng.choice((8, 16, 32))}Gi",
            worker_cpu=str(rng.choice((4, 6, 8)) if gpu else rng.choice((8, 12, 16))),
            worker_memory=f"{rng.choice((16, 24, 32))}Gi",
            worker_gpu=gpu,
        )
        run_s = min(3.0, math.exp(rng.gauss(0.0, 0.6))) * (1800.0 if gpu else 1200.0)
        rate = job_rate(
            MODELS[model],
            spec.batch,
            [Task("n", spec.requests(Role.PS))] * spec.ps,
            [Task("n", spec.requests(Role.WORKER))] * workers,
            hardware,
        ).samples_s
        specs.append(replace_spec(spec, epochs=round(run_s * rate / CIFAR10_TRAIN_SAMPLES, 3)))
    return with_checkpoints(Workload(f"pai-{jobs}x{nodes}", node_specs, tuple(specs), nic_gbps=PAI_NIC_GBPS), seed)


GPU_NODE_TAINT = "nvidia.com/gpu=present:NoSchedule"
"""The taint GPU node pools commonly carry so that only GPU jobs go there."""
CPU_POOL_SHARE = 4
"""`pai_pools` adds one CPU-only node per this many GPU nodes."""


def pai_pools(seed: int = 1, jobs: int = 100, nodes: int = 16) -> Workload:
    """`pai_like` on a cluster of two pools: its GPU nodes tainted (`GPU_NODE_TAINT`) and tolerated by the GPU
    jobs only, and one CPU-only node (64 cores, 512 GB) per `CPU_POOL_SHARE` of them for the CPU jobs, which
    may not use the GPU nodes' idle cores."""
    base = pai_like(seed, jobs, nodes)
    gpu_nodes = tuple(replace(node, taints=(GPU_NODE_TAINT,)) for node in base.nodes)
    cpu_nodes = tuple(NodeSpec(f"cpu-{i:02d}", "64", "512Gi") for i in range(max(1, nodes // CPU_POOL_SHARE)))
    specs = tuple(replace_spec(job, tolerations=(GPU_NODE_TAINT,)) if job.worker_gpu else job for job in base.jobs)
    return Workload(f"pai-pools-{jobs}x{nodes}", gpu_nodes + cpu_nodes, specs, nic_gbps=base.nic_gbps)


def with_load(workload: Workload, load: float) -> Workload:
    """The same jobs arriving `load` times as fast (arrival times divided by `load`; 1 leaves them as they are)."""
    if load <= 0:
        raise ValueError(f"load must be positive, not {load}")
    if load == 1:
        return workload
    jobs = tuple(replace_spec(job, arrival_s=round(job.arrival_s / load, 1)) for job in workload.jobs)
    return Workload(f"{workload.name}-load{load:g}", workload.nodes, jobs, workload.nic_gbps)


def with_run_time(spec: JobSpec, run_s: float, hardware: HardwareProfile, digits: int = 3) -> JobSpec:
    """`spec` with the work it trains in `run_s` seconds at its submitted size on one node (traces record
    durations, not work), in epochs rounded to `digits` decimals."""
    rate = job_rate(
        MODELS[spec.model],
        spec.batch,
        [Task("n", spec.requests(Role.PS))] * spec.ps,
        [Task("n", spec.requests(Role.WORKER))] * spec.workers,
        hardware,
    ).samples_s
    return replace_spec(spec, epochs=round(run_s * rate / CIFAR10_TRAIN_SAMPLES, digits))


def from_snapshot(path: Path, default_model: str = "resnet50", default_batch: int = 64) -> Workload:
    """Nodes and TFJobs of a `/debug/state` dump (or any manifest file), replayed from time 0 in creation order.

    A TFJob may name its model, batch and epochs with the `tfjob-extender.io/sim-*` annotations; the
    defaults stand in otherwise. Bound pods are not kept: every job is submitted afresh.
    """
    documents = read_documents(path)
    nodes: list[NodeSpec] = []
    jobs: list[tuple[float, JobSpec]] = []
    for document in documents:
        if document.get("kind") == "Node":
            view = convert.node_view(document)
            allocatable = view.allocatable
            nodes.append(
                NodeSpec(
                    view.name,
                    f"{allocatable.get('cpu')}m",
                    str(allocatable.get("memory")),
                    allocatable.get("nvidia.com/gpu"),
                )
            )
        elif document.get("kind") == "TFJob":
            view_job = convert.job_view(document)
            annotations = (document.get("metadata") or {}).get("annotations") or {}
            jobs.append((view_job.created, _job_from_view(view_job, annotations, default_model, default_batch)))
    if not nodes:
        raise ValueError(f"{path}: no Node objects to simulate on")
    first = min((created for created, _ in jobs), default=0.0)
    specs = tuple(
        _with_arrival(spec, created - first) for created, spec in sorted(jobs, key=lambda item: (item[0], item[1].name))
    )
    return with_checkpoints(Workload(path.stem, tuple(nodes), specs), 0)


def _with_arrival(spec: JobSpec, arrival: float) -> JobSpec:
    return replace_spec(spec, arrival_s=arrival)


def replace_spec(spec: JobSpec, **changes: Any) -> JobSpec:
    return JobSpec(**{**asdict(spec), **changes})


def _job_from_view(job: Any, annotations: Mapping[str, str], default_model: str, default_batch: int) -> JobSpec:
    ps_requests: Resources = job.role_requests.get(Role.PS, Resources())
    worker_requests: Resources = job.role_requests.get(Role.WORKER, Resources())
    workers = job.replicas.get(Role.WORKER, 1)
    return JobSpec(
        name=job.name,
        arrival_s=0.0,
        model=annotations.get(SNAPSHOT_MODEL_ANNOTATION, default_model),
        batch=int(annotations.get(SNAPSHOT_BATCH_ANNOTATION, default_batch)),
        epochs=float(annotations.get(SNAPSHOT_EPOCHS_ANNOTATION, 1.0)),
        ps=job.replicas.get(Role.PS, 1),
        workers=workers,
        min_workers=job.min_workers or workers,
        max_workers=job.max_workers or workers,
        ps_cpu=f"{ps_requests.get('cpu')}m",
        ps_memory=str(ps_requests.get("memory")),
        worker_cpu=f"{worker_requests.get('cpu')}m",
        worker_memory=str(worker_requests.get("memory")),
        worker_gpu=worker_requests.get("nvidia.com/gpu"),
        elastic=job.enable_dynamic_worker,
    )


def save_trace(workload: Workload, path: Path) -> None:
    path.write_text(json.dumps(workload.to_json(), indent=1))
