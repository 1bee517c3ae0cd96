"""Gang schedulers side by side on one local control plane: tfjob-extender against what a platform team would
run instead — scheduler-plugins Coscheduling and the default scheduler — each a real scheduler process.

One `LocalControlPlane` (etcd, kube-apiserver, kwok; training-operator only for the KOD2 workload) serves
every run. A run starts the scheduler under test alone — `ours` is the extender plus kube-scheduler with the
repo's `tfjob-scheduler` profile; `coscheduling` is kube-scheduler built with the Coscheduling plugin
(`--coscheduling-binary`, profile `scheduler-plugins-scheduler` as that project's Helm chart configures it,
`permitWaitingTimeSeconds: 10`); `default` is the control plane's kube-scheduler with the default profile —
submits the workload with that `schedulerName`, measures, stops the scheduler and deletes every pod, PodGroup
and TFJob before the next run. No other scheduler runs meanwhile, so none plans, watches or writes for
another's pods. Every scheduler gets the same client rate limit and `percentageOfNodesToScore`.
Volcano is not in the line-up: the Go module proxy serves no release of `volcano.sh/volcano`
(see `VOLCANO`).

Workloads (`--workloads`), each from `--seed` on for `--seeds` seeds:
- `drain` at each of `--drain-nodes` (32 CPU nodes): plain pods, gangs of 8 (TFJob + PodGroup
  `scheduling.x-k8s.io` with `minMember: 8`, as training-operator makes them) and one 64-pod gang, each
  created while the scheduler under test is stopped (SIGSTOP), then released: pods/s from SIGCONT to the last
  bind (`scheduler_throughput.Bench`, which also gives CPU per pod and the extender's verb latencies);
- `cpu-mix`: 8 nodes × 16 CPU, 24 TFJobs of 1 PS and 1–15 workers (1 or 2 CPU per pod), all submitted at
  once (`cpu_mix`);
- `gpu-gangs`: 8 nodes of 4 GPUs, 30 rigid TFJobs of one CPU PS and 1–8 one-GPU workers drawn as the
  simulator's `gpu-gangs` scenario draws them (`extender/sim/gpu_traces.py`), arriving three times as fast
  (`GPU_GANG_LOAD`), its times scaled by `--gpu-time-scale`;
- `kod2`: the KOD2 experiment's 3 nodes and 10 TFJobs (`extender/sim/workload.kod2`), times scaled by
  `--kod2-time-scale`, submitted to training-operator, which creates each job's PodGroup and pods. It runs
  with `--gang-scheduler-name=tfjob-scheduler` once for all three schedulers; the TFJob's pod templates name
  the scheduler under test, which training-operator keeps (it only fills an empty `schedulerName`), so every
  scheduler gets the same PodGroups (training-operator makes a `scheduling.x-k8s.io` one for any name but
  `volcano`) from one operator process, not one restart per scheduler.

Run times depend on placement: once every pod of a job is bound the benchmark computes its run time from
where its PS and workers landed with the simulator's throughput model (`extender/sim/throughput.py`: work in
samples over the job's rate in that placement) and writes the completion time (RFC 3339) on each of its pods
as `pod-complete.stage.kwok.x-k8s.io/delay`; kwok's `pod-complete-after-delay` stage
(`extender/devcluster/kwok-stages.yaml`) then completes the pod at that time, so co-location shows in JCT on
the real stack. Until then a pod runs without end: a job placed in part holds its pods and makes no progress.

Per scheduler and seed it prints makespan, average and p95 JCT, average wait to start, the longest partial
placement, the CPU- and GPU-seconds held by pods of gangs not yet whole, workers beside their PS, nodes per
job, deadlocked (placed in part at the end) and never-started jobs; then the medians over seeds. A run ends
when every job finished, or when nothing ran and nothing changed for `--stall-s` (its unfinished jobs are
censored: they count in JCT with their time up to the end, as in the simulator's report).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import random
import re
import signal
import statistics
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.scheduler_throughput import Bench, BindWatch, Phase, Result, gang_pod, podgroup
from extender.devcluster import COMPLETE_AFTER, UNVERIFIED_TLS, LocalControlPlane, build_control_plane, kwok_node
from extender.devcluster.operator import start_operator
from extender.policy.core.resources import CPU, GPU
from extender.policy.core.views import Role
from extender.sim.gpu_traces import gpu_gangs
from extender.sim.report import percentile
from extender.sim.throughput import MODELS, HardwareProfile, Task, job_rate
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
from tests.e2e.bulk import Api, clear_namespace, create_all, delete_all, list_all

VOLCANO = (
    "Volcano: left out — the Go module proxy answers 403 'This module version is not available' for "
    "volcano.sh/volcano v1.13.0 and v1.12.2, so its cmd/scheduler cannot be built here"
)
JOB_LABEL = "training.kubeflow.org/job-name"
MERGE_PATCH = "application/merge-patch+json"
CLEAR_TIMEOUT_S = 120.0
"""Seconds a run's namespace has to lose its pods after the run."""
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
METRICS_WITHOUT_AUTH = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
"""kube-scheduler's /metrics answers the benchmark without a token review (it listens on 127.0.0.1 only)."""
IN_TREE_POINTS = ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit")
"""kube-scheduler's extension points whose plugin time counts as its own work in a scheduling attempt."""
DRAIN_NODE_CPU, DRAIN_NODE_MEMORY, DRAIN_NODE_PODS = "32", "128Gi", 250
"""Each drain node: as the throughput benchmark's."""


# -- schedulers --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scheduler:
    key: str
    pod_scheduler: str
    """The `schedulerName` its pods carry."""
    process: str
    """Its kube-scheduler's process name in the control plane."""


SCHEDULERS = {
    "ours": Scheduler("ours", "tfjob-scheduler", "kube-scheduler"),
    "coscheduling": Scheduler("coscheduling", "scheduler-plugins-scheduler", "cosched-scheduler"),
    "default": Scheduler("default", "default-scheduler", "default-scheduler"),
}
COSCHEDULING_PROFILE: dict[str, Any] = {
    "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}},
    "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}],
}
"""As scheduler-plugins' Helm chart (`as-a-second-scheduler`) configures the plugin."""


class Lineup:
    """Starts one scheduler under test at a time on the control plane, and stops it."""

    def __init__(self, plane: LocalControlPlane, coscheduling_binary: Path | None) -> None:
        self.plane = plane
        self.coscheduling_binary = coscheduling_binary
        self.port = 0
        """The secure port of the kube-scheduler under test (its /metrics), while one runs."""

    def settings(self, scheduler: Scheduler) -> dict[str, Any]:
        settings = self.plane.scheduler_settings()
        if scheduler.key == "ours":
            return settings
        profile = {**settings["profiles"][0], "schedulerName": scheduler.pod_scheduler}
        if scheduler.key == "coscheduling":
            profile.update(COSCHEDULING_PROFILE)
        return {**{key: value for key, value in settings.items() if key != "extenders"}, "profiles": [profile]}

    @contextlib.contextmanager
    def running(self, scheduler: Scheduler) -> Iterator[None]:
        binary = self.coscheduling_binary if scheduler.key == "coscheduling" else None
        if scheduler.key == "ours":
            self.plane.start_extender()
        try:
            self.port = self.plane.start_scheduler(
                scheduler.process, self.settings(scheduler), binary=binary, extra_args=(METRICS_WITHOUT_AUTH,)
            )
            try:
                yield
            finally:
                self.plane.stop_process(scheduler.process)
        finally:
            if scheduler.key == "ours":
                self.plane.stop_extender()


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
        return Contended(key, scaled_arrivals(kod2(seed), args.kod2_time_scale), args.kod2_time_scale, True)
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


def tfjob_object(spec: JobSpec, scheduler: str) -> dict[str, Any]:
    def replica(count: int, role: Role) -> dict[str, Any]:
        template = {"spec": {"schedulerName": scheduler, "containers": [job_container(spec, role)]}}
        return {"replicas": count, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": spec.name},
        "spec": {"tfReplicaSpecs": {"PS": replica(spec.ps, Role.PS), "Worker": replica(spec.workers, Role.WORKER)}},
    }


def pod_roles(spec: JobSpec) -> dict[str, Role]:
    """Pod name → role, as training-operator names a TFJob's pods."""
    names = {f"{spec.name}-ps-{i}": Role.PS for i in range(spec.ps)}
    names.update({f"{spec.name}-worker-{i}": Role.WORKER for i in range(spec.workers)})
    return names


# -- one contended run -------------------------------------------------------------------------------------


class PlacementWatch(BindWatch):
    """The bind watch, also recording each pod's node, its phase, and when it was first seen Succeeded."""

    def __init__(self, api: Api, namespace: str) -> None:
        super().__init__(api, namespace)
        self.nodes: dict[str, str] = {}
        self.done: dict[str, float] = {}
        self.phases: dict[str, str] = {}

    def observe(self, name: str, pod: dict[str, Any], now: float) -> None:
        with self.changed:
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                self.nodes.setdefault(name, node)
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            self.phases[name] = phase
            if phase == "Succeeded":
                self.done.setdefault(name, now)
            super().observe(name, pod, now)


@dataclass
class JobOutcome:
    spec: JobSpec
    submitted: float
    started: float | None = None
    """When its last pod was bound (monotonic)."""
    finished: float | None = None
    run_s: float = 0.0
    first_bind: float | None = None
    nodes: int = 0
    workers: int = 0
    workers_beside_ps: int = 0
    held: dict[str, float] = field(default_factory=dict)
    """Resource → resource-seconds its pods held while the gang was not whole."""
    bound_at_end: int = 0


@dataclass
class RunSummary:
    workload: str
    scheduler: str
    seed: int
    jobs: list[JobOutcome]
    end: float
    stalled: bool

    def values(self) -> dict[str, float]:
        first = min(job.submitted for job in self.jobs)
        jct = [(job.finished if job.finished is not None else self.end) - job.submitted for job in self.jobs]
        waits = [(job.started if job.started is not None else self.end) - job.submitted for job in self.jobs]
        started = [job for job in self.jobs if job.started is not None]
        partial = [
            (job.started if job.started is not None else self.end) - job.first_bind
            for job in self.jobs
            if job.first_bind is not None
        ]
        workers = sum(job.workers for job in started)
        finished = [job.finished for job in self.jobs if job.finished is not None]
        complete = len(finished) == len(self.jobs)
        return {
            "makespan_s": (max(finished) - first) if complete else math.nan,
            "avg_jct_s": statistics.fmean(jct),
            "p95_jct_s": percentile(jct, 0.95),
            "avg_wait_s": statistics.fmean(waits),
            "longest_partial_s": max(partial, default=0.0),
            "cpu_s_held": sum(job.held.get(CPU, 0.0) for job in self.jobs) / 1000,
            "gpu_s_held": sum(job.held.get(GPU, 0.0) for job in self.jobs),
            "beside_ps": sum(job.workers_beside_ps for job in started) / workers if workers else math.nan,
            "nodes_per_job": statistics.fmean(job.nodes for job in started) if started else math.nan,
            "deadlocked": sum(1 for job in self.jobs if job.started is None and job.bound_at_end > 0),
            "never_started": sum(1 for job in self.jobs if job.started is None and job.bound_at_end == 0),
        }


class ContendedRun:
    """Submits a contended workload to one scheduler, completes each job when the throughput model says its
    placement lets it finish, and records what happened to every job."""

    def __init__(
        self,
        plane: LocalControlPlane,
        api: Api,
        case: Contended,
        scheduler: Scheduler,
        seed: int,
        args: argparse.Namespace,
    ) -> None:
        self.plane = plane
        self.api = api
        self.case = case
        self.scheduler = scheduler
        self.seed = seed
        self.args = args
        self.namespace = f"{case.key}-{scheduler.key}-s{seed}"
        self.node_prefix = f"{case.workload.name}-"
        self.roles = {spec.name: pod_roles(spec) for spec in case.workload.jobs}
        self.specs = {spec.name: spec for spec in case.workload.jobs}
        self.outcomes: dict[str, JobOutcome] = {}
        self.group_status: dict[str, dict[str, Any]] = {}
        """PodGroup → the status last written for it (Coscheduling runs only, see `_write_group_status`)."""
        self.lock = threading.Lock()
        self.hardware = case.workload.hardware

    def run(self) -> RunSummary:
        self.api.call("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": self.namespace}}))
        watch = PlacementWatch(self.api, self.namespace)
        watch.start()
        try:
            summary = self._drive(watch)
        finally:
            watch.stop()
            self.clean()
        return summary

    def _submit_all(self, started: float) -> None:
        for spec in sorted(self.case.workload.jobs, key=lambda job: (job.arrival_s, job.name)):
            delay = started + spec.arrival_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._submit(spec)

    def _submit(self, spec: JobSpec) -> None:
        body = tfjob_object(spec, self.scheduler.pod_scheduler)
        submitted = time.monotonic()
        if self.case.through_operator:
            self.plane.create_tfjob(self.namespace, body)
        else:
            base = f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/tfjobs"
            uid = self.api.call("POST", base, orjson.dumps(body))["metadata"]["uid"]
            group = podgroup(spec.name, spec.ps + spec.workers)
            self.api.call(
                "POST",
                f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{self.namespace}/podgroups",
                orjson.dumps(group),
            )
            pods = []
            for name, role in self.roles[spec.name].items():
                index = int(name.rsplit("-", 1)[1])
                pod = gang_pod(spec.name, uid, role.name.lower(), index, self.scheduler.pod_scheduler)
                pod["spec"]["containers"] = [job_container(spec, role)]
                pods.append((f"/api/v1/namespaces/{self.namespace}/pods", name, orjson.dumps(pod)))
            create_all(self.api, pods, min(4, self.args.threads), None)
        with self.lock:
            self.outcomes[spec.name] = JobOutcome(spec, submitted)

    def _drive(self, watch: PlacementWatch) -> RunSummary:
        started = time.monotonic()
        submitter = threading.Thread(target=self._submit_all, args=(started,), name="submit", daemon=True)
        submitter.start()
        last_change, last_counts = time.monotonic(), (-1, -1, -1)
        total = len(self.case.workload.jobs)
        stalled = False
        while True:
            with watch.changed:
                watch.changed.wait(0.5)
                bound, nodes, done = dict(watch.bound), dict(watch.nodes), dict(watch.done)
                phases = dict(watch.phases)
            with self.lock:
                outcomes = dict(self.outcomes)
            for outcome in outcomes.values():
                self._advance(outcome, bound, nodes, done)
                if self.scheduler.key == "coscheduling":
                    self._write_group_status(outcome.spec, phases)
            now = time.monotonic()
            counts = (len(outcomes), len(bound), len(done))
            if counts != last_counts:
                last_counts, last_change = counts, now
            finished = sum(1 for outcome in outcomes.values() if outcome.finished is not None)
            running = sum(1 for o in outcomes.values() if o.started is not None and o.finished is None)
            if finished == total:
                break
            if len(outcomes) == total and not running and now - last_change > self.args.stall_s:
                stalled = True
                break
            if now - started > self.args.run_timeout_s:
                stalled = True
                break
        end = last_change if stalled else time.monotonic()
        submitter.join(5)
        with self.lock:
            outcomes = dict(self.outcomes)
        for outcome in outcomes.values():
            pods = self.roles[outcome.spec.name]
            outcome.bound_at_end = sum(1 for name in pods if name in bound)
            self._count_held(outcome, bound, end)
        return RunSummary(self.case.key, self.scheduler.key, self.seed, list(outcomes.values()), end, stalled)

    def _advance(
        self, outcome: JobOutcome, bound: dict[str, float], nodes: dict[str, str], done: dict[str, float]
    ) -> None:
        pods = self.roles[outcome.spec.name]
        times = [bound[name] for name in pods if name in bound]
        if times and outcome.first_bind is None:
            outcome.first_bind = min(times)
        if outcome.started is None and len(times) == len(pods) and all(name in nodes for name in pods):
            outcome.started = max(times)
            self._start(outcome, {name: nodes[name] for name in pods})
        if outcome.started is not None and outcome.finished is None and all(name in done for name in pods):
            outcome.finished = max(done[name] for name in pods)

    def _write_group_status(self, spec: JobSpec, phases: dict[str, str]) -> None:
        """Write the PodGroup's status as scheduler-plugins' PodGroup controller, which runs beside the
        Coscheduling scheduler, does on every change of its pods (`pkg/controllers/podgroup_controller.go`):
        counts of running, succeeded and failed pods and a phase. Coscheduling registers PodGroup updates as
        what moves the pods it rejected back to its queue: without them, a gang turned away is retried only
        when a new pod is added or after kube-scheduler's 5-minute flush of unschedulable pods."""
        pods = [phases[name] for name in self.roles[spec.name] if name in phases]
        minimum = spec.ps + spec.workers
        running, succeeded = pods.count("Running"), pods.count("Succeeded")
        failed = pods.count("Failed")
        if len(pods) < minimum:
            phase = "Pending"
        elif succeeded >= minimum:
            phase = "Finished"
        elif running + succeeded >= minimum:
            phase = "Running"
        else:
            phase = "Scheduling"
        status = {"phase": phase, "running": running, "succeeded": succeeded, "failed": failed}
        if self.group_status.get(spec.name) == status:
            return
        self.group_status[spec.name] = status
        path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{self.namespace}/podgroups/{spec.name}/status"
        self.api.call("PATCH", path, orjson.dumps({"status": status}), ok=(200, 404), content_type=MERGE_PATCH)

    def _start(self, outcome: JobOutcome, placement: dict[str, str]) -> None:
        """The job's gang is whole: its run time in this placement, written on its pods as the time kwok
        completes them."""
        spec = outcome.spec
        roles = self.roles[spec.name]
        ps = [Task(placement[name], spec.requests(Role.PS)) for name, role in roles.items() if role is Role.PS]
        workers = [
            Task(placement[name], spec.requests(Role.WORKER)) for name, role in roles.items() if role is Role.WORKER
        ]
        rate = job_rate(MODELS[spec.model], spec.batch, ps, workers, self.hardware).samples_s
        outcome.run_s = spec.samples / rate * self.case.time_scale
        ps_nodes = {task.node for task in ps}
        outcome.nodes = len(set(placement.values()))
        outcome.workers = len(workers)
        outcome.workers_beside_ps = sum(1 for task in workers if task.node in ps_nodes)
        assert outcome.started is not None
        wall = time.time() - (time.monotonic() - outcome.started) + outcome.run_s
        stamp = datetime.datetime.fromtimestamp(wall, datetime.UTC).isoformat().replace("+00:00", "Z")
        patch = orjson.dumps({"metadata": {"annotations": {COMPLETE_AFTER: stamp}}})
        for name in roles:
            self.api.call("PATCH", f"/api/v1/namespaces/{self.namespace}/pods/{name}", patch, content_type=MERGE_PATCH)

    def _count_held(self, outcome: JobOutcome, bound: dict[str, float], end: float) -> None:
        """Resource-seconds held by the job's pods bound before its gang was whole (to the end if never)."""
        whole = outcome.started if outcome.started is not None else end
        spec = outcome.spec
        held: dict[str, float] = {}
        for name, role in self.roles[spec.name].items():
            if name in bound and bound[name] < whole:
                requests = spec.requests(role)
                for resource in (CPU, GPU):
                    held[resource] = held.get(resource, 0.0) + requests.get(resource) * (whole - bound[name])
        outcome.held = held

    def clean(self) -> None:
        clear_namespace(self.api, self.namespace, self.args.threads, CLEAR_TIMEOUT_S)
        time.sleep(self.args.settle_s)


# -- drains ------------------------------------------------------------------------------------------------


DRAIN_PHASES = (("plain", 0), ("gang8", 8), ("gang64", 64))


class PeerBench(Bench):
    """The throughput benchmark's drain, against whichever scheduler of the line-up runs now."""

    scheduler: Scheduler = SCHEDULERS["ours"]

    def scheduler_name(self, phase: Phase) -> str:
        return self.scheduler.pod_scheduler

    def pids(self, phase: Phase) -> dict[str, tuple[int, ...]]:
        extender = {"extender": (self.plane.pid("extender"),)} if self.scheduler.key == "ours" else {}
        return {
            "sched": (self.plane.pid(self.scheduler.process),),
            "bench": (os.getpid(),),
            **extender,
            **{name: (self.plane.pid(name),) for name in ("kube-apiserver", "etcd", "kwok")},
        }


SCHEDULER_SUMS = {
    "algorithm": ("scheduler_scheduling_algorithm_duration_seconds_sum", {}),
    **{
        point: ("scheduler_framework_extension_point_duration_seconds_sum", {"extension_point": point})
        for point in IN_TREE_POINTS
    },
}
"""What is read from the kube-scheduler under test: the time its scheduling algorithm took (in-tree plugins and
extender calls), and the time of each extension point its plugins ran (the extender is none of them)."""
EXTENDER_SUMS = {
    "filter_s": ("tfjob_extender_verb_duration_seconds_sum", {"verb": "filter"}),
    "prioritize_s": ("tfjob_extender_verb_duration_seconds_sum", {"verb": "prioritize"}),
    "filter_calls": ("tfjob_extender_verb_duration_seconds_count", {"verb": "filter"}),
    "prioritize_calls": ("tfjob_extender_verb_duration_seconds_count", {"verb": "prioritize"}),
}


def metric_sums(text: str, wanted: dict[str, tuple[str, dict[str, str]]]) -> dict[str, float]:
    """Key → the sum over the series of `text` (Prometheus text format) with that name and those labels."""
    sums = dict.fromkeys(wanted, 0.0)
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, _, rest = line.partition("{")
        labels = dict(re.findall(r'(\w+)="([^"]*)"', rest[: rest.rfind("}")])) if rest else {}
        if not rest:
            name = line.split(" ", 1)[0]
        for key, (metric, selector) in wanted.items():
            if name == metric and all(labels.get(k) == v for k, v in selector.items()):
                sums[key] += float(line.rsplit(" ", 1)[1])
    return sums


def read_metrics(url: str, token: str = "") -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=10, context=UNVERIFIED_TLS if token else None) as response:
        return str(response.read().decode())


@dataclass
class DrainRow:
    nodes: int
    scheduler: str
    phase: str
    seed: int
    result: Result
    costs: dict[str, float] = field(default_factory=dict)
    """Per pod bound: kube-scheduler's algorithm and in-tree plugin milliseconds, the extender's verb
    milliseconds and calls (`metric_sums` over the phase)."""


# -- reports -----------------------------------------------------------------------------------------------


CONTENDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("makespan_s", "makespan s", "{:.1f}"),
    ("avg_jct_s", "avg JCT s", "{:.1f}"),
    ("p95_jct_s", "p95 JCT s", "{:.1f}"),
    ("avg_wait_s", "avg wait s", "{:.1f}"),
    ("longest_partial_s", "longest partial s", "{:.1f}"),
    ("cpu_s_held", "CPU-s held partial", "{:.0f}"),
    ("gpu_s_held", "GPU-s held partial", "{:.0f}"),
    ("beside_ps", "workers beside PS", "{:.0%}"),
    ("nodes_per_job", "nodes/job", "{:.2f}"),
    ("deadlocked", "deadlocked", "{:.0f}"),
    ("never_started", "never started", "{:.0f}"),
)


def fmt(template: str, value: float) -> str:
    return "-" if isinstance(value, float) and math.isnan(value) else template.format(value)


def print_contended(runs: list[RunSummary]) -> None:
    header = "| workload | scheduler | seed | " + " | ".join(title for _, title, _ in CONTENDED_COLUMNS) + " |"
    print("\n" + header)
    print("|" + "---|" * (3 + len(CONTENDED_COLUMNS)))
    for run in runs:
        values = run.values()
        cells = " | ".join(fmt(template, values[key]) for key, _, template in CONTENDED_COLUMNS)
        print(f"| {run.workload} | {run.scheduler} | {run.seed} | {cells} |")
    groups: dict[tuple[str, str], list[dict[str, float]]] = {}
    for run in runs:
        groups.setdefault((run.workload, run.scheduler), []).append(run.values())
    print(
        f"\nmedians over seeds (a makespan of '-': some seed left jobs unfinished)\n{header.replace('seed', 'seeds')}"
    )
    print("|" + "---|" * (3 + len(CONTENDED_COLUMNS)))
    for (workload, scheduler), rows in groups.items():
        cells = " | ".join(fmt(template, median([row[key] for row in rows])) for key, _, template in CONTENDED_COLUMNS)
        print(f"| {workload} | {scheduler} | {len(rows)} | {cells} |")


def median(values: list[float]) -> float:
    return math.nan if any(math.isnan(value) for value in values) else statistics.median(values)


def print_drains(rows: list[DrainRow]) -> None:
    print(
        "\n| nodes | phase | scheduler | seed | pods | bound | pods/s | × default | partial s | sched CPU ms/pod | "
        "extender CPU ms/pod | filter p50 / p99 ms |"
    )
    print("|" + "---|" * 12)
    baseline = {(r.nodes, r.phase, r.seed): r.result.rate for r in rows if r.scheduler == "default"}
    for r in rows:
        base = baseline.get((r.nodes, r.phase, r.seed))
        ratio = f"{r.result.rate / base:.2f}" if base else "-"
        partial = "-" if r.result.gang_partial_s is None else f"{r.result.gang_partial_s:.2f}"
        extender = r.result.cpu_ms_per_pod.get("extender")
        filt = r.result.verb_ms.get("filter", (None, None))
        verb = "-" if filt[0] is None else f"{filt[0]:.2f} / {filt[1]:.2f}"
        print(
            f"| {r.nodes} | {r.phase} | {r.scheduler} | {r.seed} | {r.result.pods} | {r.result.bound} | "
            f"{r.result.rate:.1f} | {ratio} | {partial} | {r.result.cpu_ms_per_pod['sched']:.2f} | "
            f"{'-' if extender is None else f'{extender:.2f}'} | {verb} |"
        )
    print(
        "\nper pod bound: kube-scheduler's scheduling algorithm and its in-tree plugins (ms), the extender's "
        "filter and prioritize time as it measures them (ms) and calls"
    )
    print(
        "| nodes | phase | scheduler | seed | algorithm ms | in-tree ms | ext filter ms | ext prioritize ms | "
        "filter calls | prioritize calls |"
    )
    print("|" + "---|" * 10)
    for r in rows:
        c = r.costs
        cells = " | ".join(
            "-" if key not in c else f"{c[key]:.3f}"
            for key in (
                "sched_algorithm_ms",
                "sched_in_tree_ms",
                "extender_filter_ms",
                "extender_prioritize_ms",
                "filter_calls",
                "prioritize_calls",
            )
        )
        print(f"| {r.nodes} | {r.phase} | {r.scheduler} | {r.seed} | {cells} |")
    print("\nmedians over seeds\n| nodes | phase | scheduler | seeds | pods/s | × default | × coscheduling |")
    print("|" + "---|" * 7)
    groups: dict[tuple[int, str, str], list[DrainRow]] = {}
    for r in rows:
        groups.setdefault((r.nodes, r.phase, r.scheduler), []).append(r)
    for (nodes, phase, scheduler), members in groups.items():
        rates = [m.result.rate for m in members]
        ratios = {}
        for peer in ("default", "coscheduling"):
            peer_rates = {(m.nodes, m.phase, m.seed): m.result.rate for m in rows if m.scheduler == peer}
            values = [
                m.result.rate / peer_rates[(m.nodes, m.phase, m.seed)]
                for m in members
                if peer_rates.get((m.nodes, m.phase, m.seed))
            ]
            ratios[peer] = f"{statistics.median(values):.2f}" if values else "-"
        print(
            f"| {nodes} | {phase} | {scheduler} | {len(members)} | {statistics.median(rates):.1f} | "
            f"{ratios['default']} | {ratios['coscheduling']} |"
        )


# -- main --------------------------------------------------------------------------------------------------


def run_drains(
    plane: LocalControlPlane,
    lineup: Lineup,
    schedulers: list[Scheduler],
    args: argparse.Namespace,
    seeds: list[int],
    rows: list[DrainRow],
) -> None:
    """Every drain of the line-up, appended to `rows` as it ends (an interrupted run still reports them)."""
    api = Api(plane.api_port, plane.token)
    bench = PeerBench(plane, args)
    for count in args.drain_nodes:
        nodes = [
            kwok_node(f"drain-{i:05d}", cpu=DRAIN_NODE_CPU, memory=DRAIN_NODE_MEMORY, pods=DRAIN_NODE_PODS)
            for i in range(count)
        ]
        set_nodes(api, nodes, args.threads)
        time.sleep(args.settle_s)
        for seed in seeds:
            for scheduler in schedulers:
                bench.scheduler = scheduler
                with lineup.running(scheduler):
                    time.sleep(args.settle_s)
                    for phase_key, size in DRAIN_PHASES:
                        if phase_key not in args.drain_phases:
                            continue
                        phase = Phase(
                            f"{scheduler.key}-{phase_key}", f"{count}n {scheduler.key} {phase_key}", scheduler.key, size
                        )
                        before = drain_costs(plane, lineup, scheduler)
                        result = bench.run(phase, "drain")
                        after = drain_costs(plane, lineup, scheduler)
                        costs = {
                            key: (after[key] - before[key]) / max(1, result.bound) * (1 if "calls" in key else 1000)
                            for key in after
                        }
                        rows.append(DrainRow(count, scheduler.key, phase_key, seed, result, costs))


def drain_costs(plane: LocalControlPlane, lineup: Lineup, scheduler: Scheduler) -> dict[str, float]:
    """The running totals `DrainRow.costs` is the difference of (the clean-up between phases calls no verb
    and schedules nothing)."""
    sums = metric_sums(read_metrics(f"https://127.0.0.1:{lineup.port}/metrics", plane.token), SCHEDULER_SUMS)
    totals = {"sched_algorithm_ms": sums["algorithm"], "sched_in_tree_ms": sum(sums[p] for p in IN_TREE_POINTS)}
    if scheduler.key == "ours":
        extender = metric_sums(read_metrics(f"http://127.0.0.1:{plane.extender_port}/metrics"), EXTENDER_SUMS)
        totals.update(
            {
                "extender_filter_ms": extender["filter_s"],
                "extender_prioritize_ms": extender["prioritize_s"],
                "filter_calls": extender["filter_calls"],
                "prioritize_calls": extender["prioritize_calls"],
            }
        )
    return totals


def run_contended(
    plane: LocalControlPlane,
    lineup: Lineup,
    schedulers: list[Scheduler],
    key: str,
    args: argparse.Namespace,
    seeds: list[int],
    runs: list[RunSummary],
) -> None:
    """Every run of one contended workload, appended to `runs` as it ends."""
    api = Api(plane.api_port, plane.token)
    if key == "kod2" and "training-operator" not in plane.processes:
        start_operator(plane)
    try:
        for seed in seeds:
            case = contended(key, seed, args)
            set_nodes(api, node_objects(case.workload), args.threads)
            case = Contended(case.key, prefixed(case.workload), case.time_scale, case.through_operator)
            for scheduler in schedulers:
                with lineup.running(scheduler):
                    time.sleep(args.settle_s)
                    summary = ContendedRun(plane, api, case, scheduler, seed, args).run()
                values = summary.values()
                print(
                    f"# {key} seed {seed} {scheduler.key}: "
                    + ", ".join(f"{title} {fmt(t, values[k])}" for k, title, t in CONTENDED_COLUMNS)
                    + (" (stalled)" if summary.stalled else ""),
                    flush=True,
                )
                runs.append(summary)
    finally:
        if key == "kod2":
            plane.stop_process("training-operator")


def prefixed(workload: Workload) -> Workload:
    nodes = tuple(NodeSpec(f"{workload.name}-{node.name}", node.cpu, node.memory, node.gpu) for node in workload.nodes)
    return Workload(workload.name, nodes, workload.jobs, workload.nic_gbps)


def parse_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    chosen = [item for item in text.split(",") if item]
    unknown = [item for item in chosen if item not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return chosen


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="drain,cpu-mix,gpu-gangs,kod2")
    parser.add_argument("--schedulers", default="ours,coscheduling,default")
    parser.add_argument("--coscheduling-binary", type=Path, help="kube-scheduler built with the Coscheduling plugin")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    parser.add_argument("--drain-nodes", default="500,5000", help="comma-separated node counts of the drains")
    parser.add_argument("--drain-phases", default="plain,gang8,gang64", help="comma-separated subset")
    parser.add_argument("--pods", type=int, default=2000, help="pods per drain phase (the 64-pod gang: 64)")
    parser.add_argument("--gpu-time-scale", type=float, default=0.1, help="gpu-gangs arrivals and run times ×")
    parser.add_argument("--kod2-time-scale", type=float, default=0.1, help="kod2 arrivals and run times ×")
    parser.add_argument("--qps", type=float, default=5000, help="every scheduler's client QPS")
    parser.add_argument("--burst", type=int, default=5000, help="every scheduler's client burst")
    parser.add_argument("--threads", type=int, default=16, help="concurrent API requests when creating")
    parser.add_argument(
        "--stall-s",
        type=float,
        default=330,
        help="end a run after this long with nothing running and nothing changing (default: past kube-scheduler's "
        "5-minute retry of pods no event moved)",
    )
    parser.add_argument("--phase-timeout-s", type=float, default=1800, help="longest drain phase")
    parser.add_argument("--run-timeout-s", type=float, default=1800, help="longest contended run")
    parser.add_argument("--settle-s", type=float, default=3, help="idle time after a start or a clean-up")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args.drain_nodes = [int(n) for n in args.drain_nodes.split(",") if n]
    args.drain_phases = parse_list(args.drain_phases, [key for key, _ in DRAIN_PHASES], "drain phases")
    workloads = parse_list(args.workloads, ("drain", "cpu-mix", "gpu-gangs", "kod2"), "workloads")
    keys = parse_list(args.schedulers, tuple(SCHEDULERS), "schedulers")
    if "coscheduling" in keys and args.coscheduling_binary is None:
        print("# coscheduling: skipped, no --coscheduling-binary given", flush=True)
        keys.remove("coscheduling")
    elif "coscheduling" in keys and not args.coscheduling_binary.is_file():
        raise SystemExit(f"--coscheduling-binary {args.coscheduling_binary}: no such file")
    print(f"# {VOLCANO}", flush=True)
    schedulers = [SCHEDULERS[key] for key in keys]
    seeds = list(range(args.seed, args.seed + args.seeds))
    plane = LocalControlPlane(
        build_control_plane(),
        with_operator=False,
        with_extender=False,
        with_scheduler=False,
        scheduler_qps=args.qps,
        scheduler_burst=args.burst,
    )
    with plane:
        print(
            f"# {plane.kubernetes_version()}; schedulers {', '.join(keys)}; seeds {seeds}; client qps={args.qps:g} "
            f"burst={args.burst}; load average at start {os.getloadavg()[0]:.2f}; run dir {plane.run_dir}",
            flush=True,
        )
        lineup = Lineup(plane, args.coscheduling_binary)
        drains: list[DrainRow] = []
        runs: list[RunSummary] = []
        loads: list[float] = []
        sampler = LoadSampler(loads)
        sampler.start()
        try:
            for key in workloads:
                if key == "drain":
                    run_drains(plane, lineup, schedulers, args, seeds, drains)
                else:
                    run_contended(plane, lineup, schedulers, key, args, seeds, runs)
        finally:
            sampler.stop()
            if drains:
                print_drains(drains)
            if runs:
                print_contended(runs)
            if loads:
                mean, peak = statistics.fmean(loads), max(loads)
                print(f"\n# load average (1 min) during the run: mean {mean:.2f}, max {peak:.2f}")


class LoadSampler:
    """The 1-minute load average every 10 s, so a report says how busy the machine was."""

    def __init__(self, into: list[float], every_s: float = 10.0) -> None:
        self.into = into
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.into.append(os.getloadavg()[0])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


if __name__ == "__main__":
    main()
