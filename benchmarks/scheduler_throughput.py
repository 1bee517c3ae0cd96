"""Scheduling throughput of the real control plane: kube-scheduler with the extender against the same binary without.

Starts the local control plane of the end-to-end tests (etcd, kube-apiserver, kwok, the extender, and
kube-scheduler with profile `tfjob-scheduler` calling it), plus a second kube-scheduler from the same
binary with the default profile (`default-scheduler`, no extender) as the baseline. Both get the same
client rate limit (`--qps` / `--burst`, raised so that the default profile is not capped by it) and the
same `percentageOfNodesToScore`. Creates `--nodes` kwok nodes (32 CPU, 128 GiB, 250 pods each) and runs
these phases, each with `--pods` pods of 1 CPU, in a fresh namespace:

1. `default`: the default profile, plain pods;
2. `stub plain`: a third kube-scheduler from the same binary, profile `stub-scheduler`, configured as
   `tfjob-scheduler` is but calling a stub extender (`benchmarks/stub_extender`, Go, built on first use
   into `~/.cache/tfjob-extender/bench/`) whose filter keeps every node it is offered and whose
   prioritize has no preference: what the HTTP extender mechanism itself costs kube-scheduler, with no
   policy behind it — the floor for any extender on this machine. Only started when this phase is
   selected; it then watches every pod of every phase, like the idle scheduler;
3. `tfjob plain`: profile `tfjob-scheduler`, plain pods;
4. `tfjob gang8`: profile `tfjob-scheduler`, gangs of 8 (1 PS + 7 workers), shaped as training-operator
   makes them: a TFJob, a PodGroup `scheduling.x-k8s.io/v1alpha1` with `minMember: 8`, pods labelled
   with the pod group, job name, replica type and index and owned by the TFJob;
5. `tfjob gang64`: one gang of 64 pods (1 PS + 63 workers).

Each phase runs in two modes:
- `paced`: pods are created at a steady `--rate` while the scheduler runs; pods/s is bound pods over the
  time from the first create to the last bind (so it can never exceed the creation rate: when it is
  close to it, the scheduler kept up);
- `drain`: the kube-scheduler under test is stopped (SIGSTOP) while every pod is created, then resumed
  (SIGCONT); pods/s is bound pods over the time from SIGCONT to the last bind: the scheduler's own rate.

TFJobs and PodGroups are created before a phase's clock starts. Bind times come from a pod watch in this
process (the time the event with `spec.nodeName` arrived, monotonic clock), create times from the moment
each POST was sent; create→bind latency in `drain` counts from SIGCONT for pods created before it.
Between phases every pod is deleted with `gracePeriodSeconds=0` (no controller-manager runs, so nothing
cascades) and the processes are left to settle.

Reading the tables:
- `×default` is pods/s divided by the default profile's in the same mode and run.
- CPU ms/pod is each process's user+system CPU (from /proc/<pid>/stat) over the whole phase, from the
  first create to the last bind, divided by the pods bound: `sched` is the kube-scheduler under test,
  `other` the idle ones (they watch every pod too), `bench` this process (pod creation and the watch).
  The `default` phase's `ext` column is the extender following pods it is never asked about; the
  `stub` phase's is the stub extender.
- Extender RSS is VmRSS at the phase's end and VmHWM, the peak, reset at the phase's start.
- Extender filter / prioritize p50 / p99 come from the difference of its
  `tfjob_extender_verb_duration_seconds` histogram over the phase, interpolated linearly within a
  bucket: an estimate, only as fine as the buckets (0.1, 0.25, 0.5, 1, 1.5, 2, 5, 10, 25 ms ...).
- `partial s` (gang phases): the longest time any gang had some but not all members bound (first to last
  bind; to the phase's end for a gang never completed).
Absolute numbers depend on the machine and whatever else runs on it; compare ratios within one run.
With `--rounds N` every phase runs N times in turn (default, plain, ... then again) and a last table
gives each phase's median ratio to the default profile of its own round, with the smallest and largest:
a single drain of 2000 pods lasts seconds, and one round's ratio can be off by ±0.15 on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import http.client
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.devcluster import LocalControlPlane, build_control_plane, free_port, kwok_node
from tests.e2e.bulk import Api, clear_namespace, create_all

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SCHEDULER_UNDER_TEST = {"default": "default-scheduler", "stub": "stub-scheduler", "tfjob": "kube-scheduler"}
"""Process names in the control plane: the baseline scheduler is started here, the other by the harness."""
PROCESSES = ("sched", "kube-apiserver", "etcd", "kwok", "extender", "other", "bench")
VERB_HISTOGRAM = "tfjob_extender_verb_duration_seconds_bucket"
STUB_PROCESS = "stub-extender"
CLEAR_TIMEOUT_S = 300.0
"""Seconds a phase's namespace has to lose its pods (thousands of them) after the phase."""
STUB_SOURCE = Path(__file__).resolve().parent / "stub_extender" / "main.go"


# -- watching binds ----------------------------------------------------------------------------------------


class BindWatch:
    """A pod watch on one namespace recording when each pod was first seen and first seen bound."""

    def __init__(self, api: Api, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.seen: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.changed = threading.Condition()
        self._connection: http.client.HTTPSConnection | None = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{namespace}", daemon=True)
        self.error: BaseException | None = None
        self.restarts = 0
        self._stopped = threading.Event()

    def start(self) -> None:
        listed = self.api.call("GET", f"/api/v1/namespaces/{self.namespace}/pods?limit=1")
        self._version = listed["metadata"]["resourceVersion"]
        self._ready = threading.Event()
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError(f"the pod watch on {self.namespace} did not start")

    def _run(self) -> None:
        """Watch from the last resourceVersion seen; the API server may end a watch at any time (it does
        end slow ones), so a watch that ends is resumed, and one whose version is gone is relisted."""
        while not self._stopped.is_set():
            try:
                self._watch_once()
            except Exception as error:  # reported with the phase's results
                self.error = error
                if self._stopped.is_set():
                    return
                time.sleep(0.2)
            finally:
                self._ready.set()
            self.restarts += 1

    def _watch_once(self) -> None:
        query = urllib.parse.urlencode({"watch": "1", "resourceVersion": self._version, "timeoutSeconds": 3600})
        self._connection = connection = self.api.connect(timeout=None)
        try:
            connection.request("GET", f"/api/v1/namespaces/{self.namespace}/pods?{query}", headers=self.api.headers)
            response = connection.getresponse()
            self._ready.set()
            while line := response.readline():
                now = time.monotonic()
                event = orjson.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    self._relist()
                    return
                meta = obj.get("metadata") or {}
                self._version = meta.get("resourceVersion") or self._version
                if event.get("type") in ("ADDED", "MODIFIED") and meta.get("name"):
                    self.observe(meta["name"], obj, now)
                elif event.get("type") == "DELETED" and meta.get("name"):
                    self.forget(meta["name"], meta.get("uid"), now)
        finally:
            connection.close()

    def _relist(self) -> None:
        """Pods bound while no watch ran are recorded at the time of this list (rare: counted in restarts)."""
        listed = self.api.call("GET", f"/api/v1/namespaces/{self.namespace}/pods")
        now = time.monotonic()
        for pod in listed["items"]:
            self.observe(pod["metadata"]["name"], pod, now)
        self._version = listed["metadata"]["resourceVersion"]

    def observe(self, name: str, pod: dict[str, Any], now: float) -> None:
        """One pod as a watch event or a list delivered it at `now` (a subclass may record more of it)."""
        self._record(name, bool((pod.get("spec") or {}).get("nodeName")), now)

    def forget(self, name: str, uid: str | None, now: float) -> None:
        """Pod `name` (of `uid`) was deleted at `now`: what it was when bound stays recorded; a subclass that
        follows pods as they are may drop it."""

    def _record(self, name: str, bound: bool, now: float) -> None:
        with self.changed:
            self.seen.setdefault(name, now)
            if bound and name not in self.bound:
                self.bound[name] = now
            self.changed.notify_all()

    def wait(self, what: Callable[[], bool], stall_s: float, deadline_s: float) -> bool:
        """Wait until `what()` holds; False when nothing changed for `stall_s` or `deadline_s` passed."""
        deadline = time.monotonic() + deadline_s
        with self.changed:
            while not what():
                remaining = min(stall_s, deadline - time.monotonic())
                if remaining <= 0 or not self.changed.wait(remaining):
                    return what()
        return True

    def stop(self) -> None:
        self._stopped.set()
        if self._connection is not None and self._connection.sock is not None:
            with contextlib.suppress(OSError):
                self._connection.sock.shutdown(socket.SHUT_RDWR)
            self._connection.close()
        self._thread.join(10)


# -- process costs -----------------------------------------------------------------------------------------


def cpu_seconds(*pids: int) -> float:
    """User and system CPU seconds of the processes, together."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def memory_kib(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(value.split()[0])
    return values


def reset_peak_rss(pid: int) -> None:
    """Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def verb_buckets(port: int) -> dict[str, dict[float, float]]:
    """verb → upper bound → cumulative count, from the /metrics of the extender's observe listener on `port`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    buckets: dict[str, dict[float, float]] = {}
    for line in text.splitlines():
        if not line.startswith(VERB_HISTOGRAM + "{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line[line.index("{") : line.index("}")]))
        bound = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
        buckets.setdefault(labels["verb"], {})[bound] = float(line.rsplit(" ", 1)[1])
    return buckets


def bucket_quantile(cumulative: dict[float, float], q: float) -> float | None:
    """Quantile estimate (seconds) from cumulative bucket counts, linear within the bucket."""
    bounds = sorted(cumulative)
    total = cumulative[bounds[-1]] if bounds else 0
    if total <= 0:
        return None
    target = q * total
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= target:
            if bound == float("inf"):
                return lower
            share = (target - below) / (count - below) if count > below else 1.0
            return lower + (bound - lower) * share
        lower, below = bound, count
    return lower


# -- workloads ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    key: str
    title: str
    profile: str
    """`default` or `tfjob`: which kube-scheduler is under test."""
    gang_size: int
    """0 for plain pods."""


def phases(pods: int) -> list[Phase]:
    return [
        Phase("default", "default plain", "default", 0),
        Phase("stub", "stub plain", "stub", 0),
        Phase("plain", "tfjob plain", "tfjob", 0),
        Phase("gang8", "tfjob gang8", "tfjob", 8),
        Phase("gang64", "tfjob gang64", "tfjob", 64),
    ]


def phase_pod_count(phase: Phase, pods: int) -> int:
    if phase.gang_size == 64:
        return 64
    if phase.gang_size:
        return pods // phase.gang_size * phase.gang_size
    return pods


def container(cpu: str, memory: str) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    return {"name": "tensorflow", "image": "example.org/tf-train:2.16", "resources": {"requests": requests}}


def plain_pod(name: str, scheduler: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "throughput"}},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [container("1", "1Gi")],
        },
    }


def tfjob(name: str, workers: int) -> dict[str, Any]:
    replica = {"restartPolicy": "Never", "template": {"spec": {"containers": [container("1", "1Gi")]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"PS": {"replicas": 1, **replica}, "Worker": {"replicas": workers, **replica}}},
    }


def podgroup(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member},
    }


def gang_pod(job: str, uid: str, role: str, index: int, scheduler: str = "tfjob-scheduler") -> dict[str, Any]:
    labels = {
        "scheduling.x-k8s.io/pod-group": job,
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/replica-type": role,
        "training.kubeflow.org/replica-index": str(index),
    }
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": job, "uid": uid, "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-{role}-{index}", "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [container("1", "1Gi")],
        },
    }


# -- one phase ---------------------------------------------------------------------------------------------


@dataclass
class Result:
    phase: Phase
    mode: str
    pods: int
    bound: int
    seconds: float
    created_per_s: float
    latencies_ms: list[float]
    cpu_ms_per_pod: dict[str, float]
    extender_rss_mib: tuple[float, float]
    verb_ms: dict[str, tuple[float | None, float | None]]
    gang_partial_s: float | None
    gangs: int = 0
    """Gangs in the phase (0 for plain pods)."""
    gangs_whole: int = 0
    """Of those, the gangs every member of which was bound."""
    watch_restarts: int = 0
    baseline: float = field(default=0.0)
    released_cpu_ms_per_pod: dict[str, float] = field(default_factory=dict)
    """In `drain`: the CPU of `cpu_ms_per_pod` spent from SIGCONT on (what the creation before it cost is not
    counted: admission, the watch of the created pods, objects a controller made for them)."""

    @property
    def rate(self) -> float:
        return self.bound / self.seconds if self.seconds > 0 else 0.0

    @property
    def gangs_complete(self) -> str:
        """`whole/gangs`, or empty for plain pods."""
        return f"{self.gangs_whole}/{self.gangs}" if self.gangs else ""


class Bench:
    def __init__(self, plane: LocalControlPlane, args: argparse.Namespace) -> None:
        self.plane = plane
        self.args = args
        self.api = Api(plane.api_port, plane.token)
        self.runs = 0

    def scheduler_name(self, phase: Phase) -> str:
        """The `schedulerName` the phase's pods carry."""
        return {"default": "default-scheduler", "stub": "stub-scheduler"}.get(phase.profile, "tfjob-scheduler")

    def pids(self, phase: Phase) -> dict[str, tuple[int, ...]]:
        """Process column → the processes counted in it."""
        under_test = SCHEDULER_UNDER_TEST[phase.profile]
        running = [name for name in SCHEDULER_UNDER_TEST.values() if name in self.plane.processes]
        extender = STUB_PROCESS if phase.profile == "stub" else "extender"
        return {
            "sched": (self.plane.pid(under_test),),
            "other": tuple(self.plane.pid(name) for name in running if name != under_test),
            "bench": (os.getpid(),),
            "extender": (self.plane.pid(extender),),
            **{name: (self.plane.pid(name),) for name in ("kube-apiserver", "etcd", "kwok")},
        }

    def create_nodes(self) -> None:
        names = [f"node-{i:05d}" for i in range(self.args.nodes)]
        requests = [
            ("/api/v1/nodes", name, orjson.dumps(kwok_node(name, cpu="32", memory="128Gi", pods=250))) for name in names
        ]
        started = time.monotonic()
        create_all(self.api, requests, self.args.threads, None)

        def ready_count() -> int:
            count, token = 0, ""
            while True:
                query = f"?limit=1000&continue={urllib.parse.quote(token)}" if token else "?limit=1000"
                page = self.api.call("GET", f"/api/v1/nodes{query}")
                for node in page["items"]:
                    conditions = (node.get("status") or {}).get("conditions") or []
                    count += any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
                token = page["metadata"].get("continue") or ""
                if not token:
                    return count

        deadline = time.monotonic() + 600
        while (ready := ready_count()) < len(names):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {ready} of {len(names)} nodes turned Ready")
            time.sleep(2)
        print(f"# {len(names)} nodes created and Ready in {time.monotonic() - started:.1f}s", flush=True)

    def workload(self, phase: Phase, namespace: str) -> list[tuple[str, str, bytes]]:
        pods_path = f"/api/v1/namespaces/{namespace}/pods"
        count = phase_pod_count(phase, self.args.pods)
        scheduler = self.scheduler_name(phase)
        if not phase.gang_size:
            return [
                (pods_path, f"pod-{i:05d}", orjson.dumps(plain_pod(f"pod-{i:05d}", scheduler))) for i in range(count)
            ]
        requests = []
        for gang in range(count // phase.gang_size):
            job = f"job-{gang:04d}"
            created = self.api.call(
                "POST",
                f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs",
                orjson.dumps(self.job_object(job, phase.gang_size - 1, scheduler)),
            )
            self.create_group(namespace, job, phase.gang_size)
            uid = created["metadata"]["uid"]
            members = [gang_pod(job, uid, "ps", 0, scheduler)] + [
                gang_pod(job, uid, "worker", i, scheduler) for i in range(phase.gang_size - 1)
            ]
            requests += [(pods_path, pod["metadata"]["name"], orjson.dumps(self.member(pod, job))) for pod in members]
        return requests

    def create_group(self, namespace: str, job: str, size: int) -> None:
        """A gang's PodGroup, made before its pods: scheduler-plugins' `scheduling.x-k8s.io` one, as
        training-operator makes it."""
        self.api.call(
            "POST",
            f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups",
            orjson.dumps(podgroup(job, size)),
        )

    def job_object(self, name: str, workers: int, scheduler: str) -> dict[str, Any]:
        """A gang's TFJob (training-operator does not run here: the benchmark makes its pods)."""
        return tfjob(name, workers)

    def before_release(self, namespace: str, gangs: int) -> None:
        """Called in `drain` once every pod exists, before the scheduler under test is resumed."""

    def member(self, pod: dict[str, Any], job: str) -> dict[str, Any]:
        """A member of gang `job` as it is created (as `gang_pod` made it)."""
        return pod

    def run(self, phase: Phase, mode: str) -> Result:
        self.runs += 1
        namespace = f"{phase.key}-{mode}-{self.runs}"
        self.api.call("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": namespace}}))
        requests = self.workload(phase, namespace)
        pids = self.pids(phase)
        watch = BindWatch(self.api, namespace)
        watch.start()
        try:
            result = self._measure(phase, mode, namespace, requests, pids, watch)
        finally:
            watch.stop()
        print(
            f"# {phase.title} {mode}: {result.bound}/{result.pods} bound in {result.seconds:.1f}s "
            f"({result.rate:.1f} pods/s; the bind watch was resumed {result.watch_restarts} times)",
            flush=True,
        )
        clear_namespace(self.api, namespace, self.args.threads, CLEAR_TIMEOUT_S, self.plane.workload_api_version)
        time.sleep(self.args.settle_s)
        return result

    def _measure(
        self,
        phase: Phase,
        mode: str,
        namespace: str,
        requests: list[tuple[str, str, bytes]],
        pids: dict[str, tuple[int, ...]],
        watch: BindWatch,
    ) -> Result:
        count = len(requests)
        extender = pids.get("extender", ())
        if extender:
            reset_peak_rss(extender[0])
        before_verbs = verb_buckets(self.plane.observe_port) if extender else {}
        before_cpu = {name: cpu_seconds(*group) for name, group in pids.items()}
        resumed = 0.0
        released_cpu: dict[str, float] = {}
        if mode == "drain":
            os.kill(pids["sched"][0], signal.SIGSTOP)
            try:
                first = time.monotonic()
                sent = create_all(self.api, requests, self.args.threads, None)
                created_s = time.monotonic() - first
                watch.wait(lambda: len(watch.seen) >= count, 30, 120)
                self.before_release(namespace, count // phase.gang_size if phase.gang_size else 0)
                time.sleep(1.0)
            finally:
                released_cpu = {name: cpu_seconds(*group) for name, group in pids.items()}
                resumed = time.monotonic()
                os.kill(pids["sched"][0], signal.SIGCONT)
            start = resumed
        else:
            start = time.monotonic()
            sent = {}
            creator = threading.Thread(
                target=lambda: sent.update(create_all(self.api, requests, self.args.threads, self.args.rate)),
                daemon=True,
            )
            creator.start()
        complete = watch.wait(lambda: len(watch.bound) >= count, self.args.stall_s, self.args.phase_timeout_s)
        end_check = time.monotonic()
        if mode == "paced":
            creator.join()
            created_s = max(sent.values()) - start if sent else 0.0
        after_cpu = {name: cpu_seconds(*group) for name, group in pids.items()}
        after_verbs = verb_buckets(self.plane.observe_port) if extender else {}
        memory = memory_kib(extender[0]) if extender else {"VmRSS": 0, "VmHWM": 0}
        with watch.changed:
            bound = dict(watch.bound)
        last_bind = max(bound.values()) if bound else end_check
        latencies = sorted((at - max(sent.get(name, at), resumed)) * 1000 for name, at in bound.items())
        verbs: dict[str, tuple[float | None, float | None]] = {}
        for verb in ("filter", "prioritize"):
            delta = {b: c - before_verbs.get(verb, {}).get(b, 0.0) for b, c in (after_verbs.get(verb) or {}).items()}
            p50, p99 = bucket_quantile(delta, 0.5), bucket_quantile(delta, 0.99)
            verbs[verb] = (None if p50 is None else p50 * 1000, None if p99 is None else p99 * 1000)
        partial, gangs_whole, gangs = None, 0, 0
        if phase.gang_size:
            partial, gangs_whole, gangs = gang_partial(bound, requests, phase.gang_size, end_check)
        if not complete:
            pods = self.api.call("GET", f"/api/v1/namespaces/{watch.namespace}/pods")["items"]
            listed = sum(1 for pod in pods if pod["spec"].get("nodeName"))
            print(
                f"# {phase.title} {mode}: only {len(bound)} of {count} pods seen bound ({listed} bound in a list; "
                f"watch restarts: {watch.restarts}, last error: {watch.error!r})",
                flush=True,
            )
        return Result(
            phase=phase,
            mode=mode,
            pods=count,
            bound=len(bound),
            seconds=last_bind - start,
            created_per_s=count / created_s if created_s > 0 else 0.0,
            latencies_ms=latencies,
            cpu_ms_per_pod={name: (after_cpu[name] - before_cpu[name]) * 1000 / max(1, len(bound)) for name in pids},
            extender_rss_mib=(memory["VmRSS"] / 1024, memory["VmHWM"] / 1024),
            verb_ms=verbs,
            gang_partial_s=partial,
            gangs=gangs,
            gangs_whole=gangs_whole,
            watch_restarts=watch.restarts,
            released_cpu_ms_per_pod={
                name: (after_cpu[name] - released_cpu[name]) * 1000 / max(1, len(bound)) for name in released_cpu
            },
        )


def gang_partial(
    bound: dict[str, float], requests: list[tuple[str, str, bytes]], size: int, end: float
) -> tuple[float, int, int]:
    """The longest time a gang had some but not all members bound, how many gangs completed, and how many
    there were."""
    longest, complete, total = 0.0, 0, 0
    for start in range(0, len(requests), size):
        times = [bound[name] for _, name, _ in requests[start : start + size] if name in bound]
        total += 1
        if not times:
            continue
        if len(times) == size:
            complete += 1
            longest = max(longest, max(times) - min(times))
        else:
            longest = max(longest, end - min(times))
    return longest, complete, total


# -- report ------------------------------------------------------------------------------------------------


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted values."""
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(len(values) * q))]


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def default_rates(results: list[Result]) -> dict[str, float]:
    """The default profile's pods/s per mode in one round: what ×default divides by."""
    return {r.mode: r.rate for r in results if r.phase.profile == "default"}


def report(results: list[Result]) -> None:
    """The tables of one round: ×default is against the default profile's rate in the same round."""
    baseline = default_rates(results)
    print()
    print(
        f"{'phase':<14} {'mode':<6} {'pods':>6} {'bound':>6} {'created/s':>9} {'pods/s':>7} {'×default':>8} "
        f"{'c→b p50 ms':>10} {'p99 ms':>8} {'partial s':>9} {'gangs':>9}"
    )
    for r in results:
        ratio = r.rate / baseline[r.mode] if baseline.get(r.mode) else float("nan")
        partial = "-" if r.gang_partial_s is None else f"{r.gang_partial_s:.2f}"
        print(
            f"{r.phase.title:<14} {r.mode:<6} {r.pods:>6} {r.bound:>6} {r.created_per_s:>9.0f} {r.rate:>7.1f} "
            f"{ratio:>7.2f}× {quantile(r.latencies_ms, 0.5):>10.0f} {quantile(r.latencies_ms, 0.99):>8.0f} "
            f"{partial:>9} {r.gangs_complete or '-':>9}"
        )
    print()
    columns = " ".join(f"{name:>8}" for name in ("sched", "apiserver", "etcd", "kwok", "extender", "other", "bench"))
    print(
        f"{'phase':<14} {'mode':<6} | CPU ms/pod: {columns} | {'ext RSS':>7} {'peak':>6} MiB | "
        f"{'filter p50':>10} {'p99':>6} {'prio p50':>8} {'p99':>6} ms (bucketed)"
    )
    for r in results:
        cpu = " ".join(f"{r.cpu_ms_per_pod[name]:>8.2f}" for name in PROCESSES)
        filt, prio = r.verb_ms["filter"], r.verb_ms["prioritize"]
        print(
            f"{r.phase.title:<14} {r.mode:<6} |             {cpu} | {r.extender_rss_mib[0]:>7.0f} "
            f"{r.extender_rss_mib[1]:>6.0f}     | {ms(filt[0]):>10} {ms(filt[1]):>6} {ms(prio[0]):>8} {ms(prio[1]):>6}"
        )


def report_rounds(rounds: list[list[Result]]) -> None:
    """Across rounds: each phase's median pods/s and median ratio to the same round's default profile,
    with the smallest and largest ratio (on a shared 2-core machine one round can be off by ±0.15)."""
    print(f"\nacross {len(rounds)} rounds (ratios against the default profile of the same round)")
    print(f"{'phase':<14} {'mode':<6} {'pods/s med':>10} {'×default med':>12} {'min':>6} {'max':>6}")
    for index, first in enumerate(rounds[0]):
        rates, ratios = [], []
        for results in rounds:
            baseline = default_rates(results)
            rate = results[index].rate
            rates.append(rate)
            if baseline.get(first.mode):
                ratios.append(rate / baseline[first.mode])
        ratios.sort()
        low, high = (ratios[0], ratios[-1]) if ratios else (float("nan"), float("nan"))
        median = statistics.median(ratios) if ratios else float("nan")
        print(
            f"{first.phase.title:<14} {first.mode:<6} {statistics.median(rates):>10.1f} {median:>11.2f}× "
            f"{low:>5.2f}× {high:>5.2f}×"
        )


def start_stub(plane: LocalControlPlane, settings: dict[str, Any]) -> None:
    """The stub extender, and a kube-scheduler whose profile `stub-scheduler` calls it as the repo's
    configuration calls the extender."""
    port = free_port()
    plane.spawn(STUB_PROCESS, [str(stub_binary()), str(port)])
    stub = copy.deepcopy(settings)
    stub["profiles"] = [{**profile, "schedulerName": "stub-scheduler"} for profile in settings["profiles"][:1]]
    for extender in stub["extenders"]:
        extender["urlPrefix"] = f"http://127.0.0.1:{port}"
    plane.start_scheduler(SCHEDULER_UNDER_TEST["stub"], stub)


def stub_binary() -> Path:
    """The stub extender, built with the local Go toolchain once per version of its source."""
    digest = hashlib.sha256(STUB_SOURCE.read_bytes()).hexdigest()[:16]
    binary = Path.home() / ".cache" / "tfjob-extender" / "bench" / f"stub-extender-{digest}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": ""}
        partial = binary.with_suffix(".partial")
        subprocess.run(["go", "build", "-trimpath", "-o", str(partial), str(STUB_SOURCE)], check=True, env=env)
        partial.rename(binary)
    return binary


def selected(args: argparse.Namespace) -> Iterator[tuple[Phase, str]]:
    wanted = set(args.phases.split(","))
    modes = args.modes.split(",")
    for phase in phases(args.pods):
        if phase.key in wanted:
            for mode in modes:
                yield phase, mode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000, help="pods per phase (gang64: always 64)")
    parser.add_argument("--qps", type=float, default=5000, help="both kube-schedulers' client QPS")
    parser.add_argument("--burst", type=int, default=5000, help="both kube-schedulers' client burst")
    parser.add_argument("--rate", type=float, default=200, help="pods created per second in paced mode")
    parser.add_argument("--threads", type=int, default=16, help="concurrent create requests")
    parser.add_argument("--phases", default="default,stub,plain,gang8,gang64", help="comma-separated subset")
    parser.add_argument("--modes", default="paced,drain", help="comma-separated subset")
    parser.add_argument("--stall-s", type=float, default=60, help="end a phase after this long with no progress")
    parser.add_argument("--phase-timeout-s", type=float, default=1800)
    parser.add_argument("--settle-s", type=float, default=5, help="idle time after cleaning up a phase")
    parser.add_argument("--rounds", type=int, default=1, help="run every phase this many times, then the medians")
    args = parser.parse_args()
    if "default" not in args.phases.split(","):
        print("# no default phase: the ×default column stays empty", flush=True)

    plane = LocalControlPlane(
        build_control_plane(), with_operator=False, scheduler_qps=args.qps, scheduler_burst=args.burst
    )
    with plane:
        settings = plane.scheduler_settings()
        baseline = {key: value for key, value in settings.items() if key != "extenders"}
        baseline["profiles"] = [
            {**{key: value for key, value in profile.items() if key != "plugins"}, "schedulerName": "default-scheduler"}
            for profile in settings["profiles"][:1]
        ]
        plane.start_scheduler(SCHEDULER_UNDER_TEST["default"], baseline)
        if "stub" in args.phases.split(","):
            start_stub(plane, settings)
        score = settings["profiles"][0].get("percentageOfNodesToScore")
        print(
            f"# kube-scheduler client qps={args.qps:g} burst={args.burst} (both), percentageOfNodesToScore={score} "
            f"(both); {args.nodes} nodes × 32 CPU / 128 GiB / 250 pods; {args.pods} pods of 1 CPU; "
            f"paced at {args.rate:g}/s from {args.threads} connections; run dir {plane.run_dir}",
            flush=True,
        )
        bench = Bench(plane, args)
        bench.create_nodes()
        time.sleep(args.settle_s)
        rounds = []
        for round_number in range(1, args.rounds + 1):
            if args.rounds > 1:
                print(f"\n# round {round_number} of {args.rounds}", flush=True)
            results = [bench.run(phase, mode) for phase, mode in selected(args)]
            report(results)
            rounds.append(results)
        if args.rounds > 1:
            report_rounds(rounds)
        bench.api.close()


if __name__ == "__main__":
    main()
