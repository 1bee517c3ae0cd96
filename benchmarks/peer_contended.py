"""One contended run of the peer benchmark: submit a workload to one scheduler and follow its jobs to the end.

`ContendedRun` submits each job at its arrival time (as a TFJob through training-operator, or as TFJob,
PodGroup and pods made here), follows placements with a `PlacementWatch`, and once a job's gang is whole writes
its completion time — the simulator's throughput model's run time for that placement — on its pods for kwok to
complete them. Under Coscheduling it also writes each PodGroup's status as scheduler-plugins' controller would.
For a scheduler with Kubernetes' own gangs each job gets a `scheduling.k8s.io` PodGroup of all its pods, made
before the job (before the TFJob training-operator makes pods from, whose replica templates name the group),
and the watch checks that every pod joined its job's group.
A run ends when every job finished, or stalls; `run_contended` runs one workload for every seed and scheduler,
recording the extender's start-time forecasts on the way where it runs (`peer_forecasts`).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import threading
import time
from typing import Any

import orjson

from benchmarks.peer_forecasts import ForecastRecorder, forecast_scores
from benchmarks.peer_lineup import Lineup, Scheduler
from benchmarks.peer_outcomes import CONTENDED_COLUMNS, JobOutcome, RunSummary, fmt
from benchmarks.peer_training import BoundPod, Training
from benchmarks.peer_workloads import (
    Contended,
    contended,
    job_container,
    join_native_group,
    native_podgroup,
    native_podgroups_path,
    node_objects,
    pod_roles,
    prefixed,
    set_nodes,
    tfjob_object,
)
from benchmarks.scheduler_throughput import BindWatch, gang_pod, podgroup
from extender.devcluster import COMPLETE_AFTER, LocalControlPlane
from extender.devcluster.operator import start_operator
from extender.policy.core.resources import CPU, GPU
from extender.policy.core.views import Role
from extender.sim.workload import JobSpec
from extender.state.crds import job_view
from extender.state.gang_annotations import LAST_CHECKPOINT_ANNOTATION
from tests.e2e.bulk import Api, clear_namespace, create_all

MERGE_PATCH = "application/merge-patch+json"
CLEAR_TIMEOUT_S = 120.0
"""Seconds a run's namespace has to lose its pods after the run."""


class PlacementWatch(BindWatch):
    """The bind watch, also recording each pod's first node, where each pod is bound now (its uid and node,
    until it fails or is deleted), its phase, when it was first seen Succeeded, and the `scheduling.k8s.io`
    PodGroup it joined, if any."""

    def __init__(self, api: Api, namespace: str) -> None:
        super().__init__(api, namespace)
        self.nodes: dict[str, str] = {}
        self.placed: dict[str, tuple[str, str]] = {}
        self.done: dict[str, float] = {}
        self.phases: dict[str, str] = {}
        self.native_groups: dict[str, str | None] = {}

    def observe(self, name: str, pod: dict[str, Any], now: float) -> None:
        with self.changed:
            spec = pod.get("spec") or {}
            self.native_groups[name] = (spec.get("schedulingGroup") or {}).get("podGroupName")
            node = spec.get("nodeName")
            phase = (pod.get("status") or {}).get("phase") or "Pending"
            uid = (pod.get("metadata") or {}).get("uid") or ""
            if node:
                self.nodes.setdefault(name, node)
            if node and phase != "Failed" and not (pod.get("metadata") or {}).get("deletionTimestamp"):
                self.placed[name] = (uid, node)
            elif self.placed.get(name, ("", ""))[0] == uid:
                self.placed.pop(name, None)
            self.phases[name] = phase
            if phase == "Succeeded":
                self.done.setdefault(name, now)
            super().observe(name, pod, now)

    def forget(self, name: str, uid: str | None, now: float) -> None:
        with self.changed:
            if self.placed.get(name, ("", ""))[0] == uid:
                self.placed.pop(name, None)
            self.changed.notify_all()


COMPLETE_HORIZON_S = 1.0
"""A job's completion time is written on its pods once it is this near (seconds): kwok reads it when a pod
changes, so a time written long before would stand after the job's placement changed."""
FORECAST_EVERY_S = 5.0
"""Seconds between two readings of the extender's start-time forecasts during a run (its refresh period: the
CPU mix's jobs run for 15–45 s)."""


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
        self.training = {
            spec.name: Training(spec, case.time_scale, self.hardware, elastic=case.declared and spec.elastic)
            for spec in case.workload.jobs
        }
        self.stamped: dict[str, dict[str, str]] = {spec.name: {} for spec in case.workload.jobs}
        """Job → its pods (name → uid) whose completion time is written."""

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
            self.submit(spec)

    def submit(self, spec: JobSpec) -> None:
        native = self.scheduler.native_gangs
        ours_to_make = self.scheduler.gangs_by_extender
        joined = spec.name if native and not ours_to_make else None
        declared = self.case.time_scale if self.case.declared else None
        body = tfjob_object(spec, self.scheduler.pod_scheduler, native_group=joined, declared_scale=declared)
        submitted = time.monotonic()
        if joined is not None:
            group = native_podgroup(self.plane.workload_api_version, spec.name, spec.ps + spec.workers)
            path = native_podgroups_path(self.plane.workload_api_version, self.namespace)
            self.api.call("POST", path, orjson.dumps(group))
        if self.case.through_operator:
            self.plane.create_tfjob(self.namespace, body)
        else:
            base = f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/tfjobs"
            created = self.api.call("POST", base, orjson.dumps(body))
            uid = created["metadata"]["uid"]
            if ours_to_make:
                joined = job_view(created).scheduling_group or None
            if joined is None:
                self.api.call(
                    "POST",
                    f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{self.namespace}/podgroups",
                    orjson.dumps(podgroup(spec.name, spec.ps + spec.workers)),
                )
            pods = []
            for name, role in self.roles[spec.name].items():
                index = int(name.rsplit("-", 1)[1])
                pod = gang_pod(spec.name, uid, role.name.lower(), index, self.scheduler.pod_scheduler)
                pod["spec"]["containers"] = [job_container(spec, role)]
                if joined is not None:
                    join_native_group(pod["spec"], joined)
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
                bound, placed, done = dict(watch.bound), dict(watch.placed), dict(watch.done)
                phases = dict(watch.phases)
            with self.lock:
                outcomes = dict(self.outcomes)
            now = time.monotonic()
            for outcome in outcomes.values():
                self._advance(outcome, bound, placed, done, now)
                if self.scheduler.key == "coscheduling":
                    self._write_group_status(outcome.spec, phases)
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
            training = self.training[outcome.spec.name]
            outcome.restarts, outcome.takings = training.restarts, list(training.takings)
            outcome.lost_work_s = training.lost_work_s
        if self.scheduler.native_gangs:
            with watch.changed:
                groups = dict(watch.native_groups)
            self.check_joined(groups)
        return RunSummary(self.case.key, self.scheduler.key, self.seed, list(outcomes.values()), end, stalled)

    def _advance(
        self,
        outcome: JobOutcome,
        bound: dict[str, float],
        placed: dict[str, tuple[str, str]],
        done: dict[str, float],
        now: float,
    ) -> None:
        """Bring the job's training up to `now` from where its pods are bound: record its start, write the
        checkpoints it made, and its completion time on its pods once it is near."""
        spec = outcome.spec
        times = [bound[name] for name in self.roles[spec.name] if name in bound]
        if times and outcome.first_bind is None:
            outcome.first_bind = min(times)
        if outcome.finished is not None:
            return
        training = self.training[spec.name]
        training.place(now, self._bound_pods(spec.name, placed))
        if outcome.started is None and training.training:
            outcome.started = max(bound.get(name, now) for name in training.placed)
            self._record_placement(outcome, training)
        for at in training.checkpoints():
            if self.case.declared:
                self._annotate(list(training.placed), {LAST_CHECKPOINT_ANNOTATION: wall_stamp(at)})
        stamped = self.stamped[spec.name]
        for name in [name for name, uid in stamped.items() if name not in placed or placed[name][0] != uid]:
            del stamped[name]
        eta = training.eta(now)
        if eta is not None and eta - now <= COMPLETE_HORIZON_S:
            fresh = [name for name, pod in training.placed.items() if stamped.get(name) != pod.uid]
            self._annotate(fresh, {COMPLETE_AFTER: wall_stamp(eta)})
            stamped.update((name, training.placed[name].uid) for name in fresh)
        if stamped and all(name in done for name in stamped):
            outcome.finished = max(done[name] for name in stamped)

    def _bound_pods(self, job: str, placed: dict[str, tuple[str, str]]) -> dict[str, BoundPod]:
        """The job's pods bound now, by training-operator's names (`<job>-ps-<i>`, `<job>-worker-<i>`)."""
        pods = {}
        for role, infix in ((Role.PS, "-ps-"), (Role.WORKER, "-worker-")):
            prefix = job + infix
            for name, (uid, node) in placed.items():
                if name.startswith(prefix) and name[len(prefix) :].isdigit():
                    pods[name] = BoundPod(uid, role, node)
        return pods

    def check_joined(self, groups: dict[str, str | None]) -> None:
        """Every pod seen must have joined its job's `scheduling.k8s.io` PodGroup (training-operator copies
        the field from the replica templates): a pod outside it would be scheduled alone, not as a gang."""
        strays = sorted(
            name for job, roles in self.roles.items() for name in roles if name in groups and groups[name] != job
        )
        if strays:
            raise RuntimeError(f"{len(strays)} pods did not join their job's PodGroup, e.g. {strays[:3]}")

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

    def _record_placement(self, outcome: JobOutcome, training: Training) -> None:
        """Where the job's pods were when it first trained, and how long it would run there."""
        pods = training.placed.values()
        ps_nodes = {pod.node for pod in pods if pod.role is Role.PS}
        workers = [pod for pod in pods if pod.role is Role.WORKER]
        outcome.nodes = len({pod.node for pod in pods})
        outcome.workers = len(workers)
        outcome.workers_beside_ps = sum(1 for pod in workers if pod.node in ps_nodes)
        outcome.run_s = outcome.spec.samples / training.samples_s

    def _annotate(self, pods: list[str], annotations: dict[str, str]) -> None:
        patch = orjson.dumps({"metadata": {"annotations": annotations}})
        for name in pods:
            path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
            self.api.call("PATCH", path, patch, ok=(200, 404), content_type=MERGE_PATCH)

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
        clear_namespace(self.api, self.namespace, self.args.threads, CLEAR_TIMEOUT_S, self.plane.workload_api_version)
        time.sleep(self.args.settle_s)


def wall_stamp(moment: float) -> str:
    """`moment` of the monotonic clock as an RFC 3339 wall-clock time."""
    wall = time.time() - (time.monotonic() - moment)
    return datetime.datetime.fromtimestamp(wall, datetime.UTC).isoformat().replace("+00:00", "Z")


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
            case = dataclasses.replace(case, workload=prefixed(case.workload))
            for scheduler in schedulers:
                forecasts = None
                with lineup.running(scheduler):
                    time.sleep(args.settle_s)
                    run = ContendedRun(plane, api, case, scheduler, seed, args)
                    if scheduler.with_extender:
                        with ForecastRecorder(plane.observe_url, run.namespace, FORECAST_EVERY_S) as recorder:
                            summary = run.run()
                        forecasts = forecast_scores(recorder, summary)
                        summary.start_forecast = forecasts
                    else:
                        summary = run.run()
                values = summary.values()
                print(
                    f"# {key} seed {seed} {scheduler.key}: "
                    + ", ".join(f"{title} {fmt(t, values[k])}" for k, title, t in CONTENDED_COLUMNS)
                    + (" (stalled)" if summary.stalled else ""),
                    flush=True,
                )
                if forecasts is not None:
                    print(
                        f"# {key} seed {seed} {scheduler.key} start forecast: "
                        + ", ".join(f"{name} {value:.3g}" for name, value in forecasts.items()),
                        flush=True,
                    )
                runs.append(summary)
    finally:
        api.close()
        if key == "kod2":
            plane.stop_process("training-operator")
