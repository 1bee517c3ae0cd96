"""The simulated API server and training-operator: TFJob, PodGroup and pod objects, and what changes them.

`SimCluster` keeps every pod as a small record plus the Kubernetes-shaped object the extender's cluster
model reads; when a policy needs that model (`ClusterState`), each change is fed to it as the watch event
the API server would send. Training-operator's reconcile is reproduced where the policies depend on it:
a TFJob's pods are created at submission (names `<job>-<role>-<index>`), lowering `Worker.replicas`
deletes the highest-index workers, raising it creates the missing ones, and a deleted pod whose index is
still below `replicas` is recreated pending, and a finished job's pods are cleaned up (`cleanPodPolicy: All`).
Pods are deleted with a zero grace period.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.views import Role
from extender.sim.throughput import HardwareProfile
from extender.sim.workload import JobSpec, NodeSpec
from extender.state import convert
from extender.state.gang_annotations import (
    CHECKPOINT_INTERVAL_ANNOTATION,
    LAST_CHECKPOINT_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
)
from extender.state.kinds import BY_KIND, Kind
from extender.state.store import ClusterState

EPOCH = 1_800_000_000.0
"""Wall-clock seconds of virtual time 0 (timestamps in objects the model reads)."""
NAMESPACE = "sim"
SCHEDULER_NAME = "tfjob-scheduler"


def stamp(now: float) -> str:
    return datetime.fromtimestamp(EPOCH + now, UTC).isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class SimPod:
    key: str
    job: str
    role: Role
    index: int
    requests: Resources
    created: float
    uid: str
    node: str = ""
    phase: str = "Pending"
    bound_at: float = 0.0
    """Virtual time it was bound (0: not bound, or bound by a policy that does not say when)."""
    last_checkpoint: float = 0.0
    """Virtual time of its job's last checkpoint in this pod's run, as the pod reports it (0: none)."""

    @property
    def bound(self) -> bool:
        return bool(self.node) and self.phase == "Running"


@dataclass(slots=True)
class SimJob:
    spec: JobSpec
    elastic: bool
    """Runs with any worker count down to `min_workers` (enableDynamicWorker); else needs all replicas."""
    workers: int
    """Current `Worker.replicas`."""
    pods: dict[str, SimPod] = field(default_factory=dict)
    finished: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    """Annotations written on the TFJob after submission (the scaler's cooldown stamps and worker plan)."""

    def bound(self, role: Role) -> list[SimPod]:
        return [p for p in self.pods.values() if p.role is role and p.bound]

    def pending(self) -> list[SimPod]:
        return [p for p in self.pods.values() if not p.node]


class SimCluster:
    """Nodes, jobs and pods of one simulation run; every mutation bumps `version`."""

    def __init__(
        self,
        nodes: tuple[NodeSpec, ...],
        *,
        feed_model: bool,
        hardware: HardwareProfile | None = None,
        scheduler_name: str = SCHEDULER_NAME,
        tells_checkpoints: bool = True,
    ) -> None:
        self.hardware = hardware or HardwareProfile()
        """The throughput model's hardware (policies that estimate speed read it)."""
        self.nodes = {node.name: node.allocatable for node in nodes}
        self.specs = {node.name: node for node in nodes}
        self.used: dict[str, Resources] = dict.fromkeys(self.nodes, EMPTY)
        self.jobs: dict[str, SimJob] = {}
        self.pods: dict[str, SimPod] = {}
        self.gangs: set[str] = set()
        """The jobs submitted with a PodGroup."""
        self.version = 0
        """Bumped by every change to a node, job, PodGroup or pod."""
        self.pods_version = 0
        """Bumped by every pod change only: the cluster events kube-scheduler moves unschedulable pods back
        to its queue on (it watches pods and nodes, which do not change here, not TFJobs or PodGroups)."""
        self.scheduler_name = scheduler_name
        self.tells_checkpoints = tells_checkpoints
        """Jobs that checkpoint declare their interval on the TFJob and their pods report each checkpoint
        (False: no job tells anything, and the policy's assumptions stand)."""
        self._uids = 0
        self.model: ClusterState | None = ClusterState() if feed_model else None
        if self.model is not None:
            for kind in BY_KIND:
                self.model.mark_synced(kind)
            for node in nodes:
                self.model.apply(Kind.NODE, "ADDED", _node_object(node))

    # -- reads ------------------------------------------------------------------------------------------

    def free(self, node: str) -> Resources:
        return self.nodes[node] - self.used[node]

    def admits(self, node: str, job: str) -> bool:
        """Whether the job's pods may go to the node (its taints: `NodeSpec.admits`)."""
        return self.specs[node].admits(self.jobs[job].spec)

    def pending_pods(self) -> Iterator[SimPod]:
        for job in self.jobs.values():
            if not job.finished:
                yield from job.pending()

    def capacity(self) -> Resources:
        total = EMPTY
        for allocatable in self.nodes.values():
            total = total + allocatable
        return total

    # -- writes -----------------------------------------------------------------------------------------

    def submit(self, spec: JobSpec, now: float, *, gang: bool) -> SimJob:
        """Create the TFJob (elastic exactly when the spec says so, whatever the policy), its PodGroup when
        `gang`, and its pods, pending."""
        job = SimJob(spec, spec.elastic, spec.workers)
        self.jobs[spec.name] = job
        self._feed(Kind.TFJOB, "ADDED", self._tfjob_object(job, now))
        if gang:
            self.gangs.add(spec.name)
            self._feed(Kind.PODGROUP, "ADDED", _podgroup_object(job, now))
        for index in range(spec.ps):
            self._create(job, Role.PS, index, now)
        for index in range(job.workers):
            self._create(job, Role.WORKER, index, now)
        return job

    def bind(self, key: str, node: str, *, at: float = 0.0) -> None:
        """Bind the pod to `node` at virtual time `at` (its PodScheduled condition, when given)."""
        pod = self.pods[key]
        if pod.node:
            raise ValueError(f"{key} is already bound to {pod.node}")
        pod.node = node
        pod.phase = "Running"
        pod.bound_at = at
        self.used[node] = self.used[node] + pod.requests
        self._touch(pod, "MODIFIED")

    def delete_pod(self, key: str, now: float) -> None:
        """Delete a pod; training-operator recreates it when its index is still below the replicas."""
        pod = self.pods.pop(key)
        job = self.jobs[pod.job]
        del job.pods[key]
        if pod.bound:
            self.used[pod.node] = self.used[pod.node] - pod.requests
        self._touch(pod, "DELETED")
        replicas = job.workers if pod.role is Role.WORKER else job.spec.ps
        present = sum(1 for p in job.pods.values() if p.role is pod.role)
        if not job.finished and pod.index < replicas and present < replicas:
            self._create(job, pod.role, pod.index, now)

    def set_workers(self, name: str, replicas: int, now: float) -> None:
        """Patch `Worker.replicas`: the highest indices go, missing indices come back pending."""
        job = self.jobs[name]
        job.workers = replicas
        self._feed(Kind.TFJOB, "MODIFIED", self._tfjob_object(job, now))
        if job.spec.gang_asks_all and name in self.gangs:
            self._feed(Kind.PODGROUP, "MODIFIED", _podgroup_object(job, now))
        for pod in sorted(job.pods.values(), key=lambda p: -p.index):
            if pod.role is Role.WORKER and pod.index >= replicas:
                self.delete_pod(pod.key, now)
        present = {p.index for p in job.pods.values() if p.role is Role.WORKER}
        for index in range(replicas):
            if index not in present:
                self._create(job, Role.WORKER, index, now)

    def annotate(self, name: str, annotations: dict[str, str], now: float) -> None:
        """Add annotations to the TFJob (a merge patch of `metadata.annotations`)."""
        job = self.jobs[name]
        job.annotations.update(annotations)
        self._feed(Kind.TFJOB, "MODIFIED", self._tfjob_object(job, now))

    def shrink(self, keys: list[str]) -> None:
        """Remove these workers and lower the replicas to match (a job-level operator picks any worker)."""
        for key in keys:
            pod = self.pods[key]
            job = self.jobs[pod.job]
            job.workers -= 1
            self.delete_pod(key, 0.0)

    def grow(self, name: str, count: int, now: float) -> list[SimPod]:
        """Add `count` workers with fresh indices (pending)."""
        job = self.jobs[name]
        top = max((p.index for p in job.pods.values() if p.role is Role.WORKER), default=-1)
        job.workers += count
        return [self._create(job, Role.WORKER, top + 1 + offset, now) for offset in range(count)]

    def restart_job(self, name: str, now: float) -> None:
        """Delete every pod of a job (a checkpoint-restart); they come back pending."""
        for key in list(self.jobs[name].pods):
            if key in self.pods:
                self.delete_pod(key, now)

    def report_checkpoint(self, name: str, at: float) -> None:
        """The job checkpointed at virtual time `at`: its bound pods say so (an annotation each, as its
        training code would write). Not a cluster event to kube-scheduler: nothing it schedules changed."""
        if not self.tells_checkpoints:
            return
        for pod in self.jobs[name].pods.values():
            if pod.bound:
                pod.last_checkpoint = at
                self._feed(Kind.POD, "MODIFIED", self.pod_object(pod))

    def finish_job(self, name: str) -> None:
        job = self.jobs[name]
        job.finished = True
        for pod in job.pods.values():
            if pod.bound:
                self.used[pod.node] = self.used[pod.node] - pod.requests
            pod.phase = "Succeeded"
            self._touch(pod, "DELETED")
        self._feed(Kind.TFJOB, "MODIFIED", self._tfjob_object(job, 0.0))

    # -- internals --------------------------------------------------------------------------------------

    def _create(self, job: SimJob, role: Role, index: int, now: float) -> SimPod:
        self._uids += 1
        name = f"{job.spec.name}-{role.value}-{index}"
        pod = SimPod(
            f"{NAMESPACE}/{name}", job.spec.name, role, index, job.spec.requests(role), now, f"uid-{self._uids}"
        )
        self.pods[pod.key] = pod
        job.pods[pod.key] = pod
        self._touch(pod, "ADDED")
        return pod

    def _touch(self, pod: SimPod, event: str) -> None:
        self.version += 1
        self.pods_version += 1
        if self.model is not None:
            self.model.apply(Kind.POD, event, self.pod_object(pod))  # type: ignore[arg-type]

    def _feed(self, kind: Kind, event: str, obj: dict[str, Any]) -> None:
        self.version += 1
        if self.model is not None:
            self.model.apply(kind, event, obj)  # type: ignore[arg-type]

    def pod_object(self, pod: SimPod) -> dict[str, Any]:
        name = pod.key.split("/", 1)[1]
        requests = (pod.requests - Resources({"pods": 1})).to_quantities()
        spec: dict[str, Any] = {
            "containers": [{"name": "tensorflow", "resources": {"requests": requests}}],
            "schedulerName": self.scheduler_name,
            "priority": 0,
        }
        if pod.node:
            spec["nodeName"] = pod.node
        spec |= _tolerating(self.jobs[pod.job].spec)
        annotations = {}
        if pod.last_checkpoint:
            annotations[LAST_CHECKPOINT_ANNOTATION] = f"{EPOCH + pod.last_checkpoint:.3f}"
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "uid": pod.uid,
                "creationTimestamp": stamp(pod.created),
                "annotations": annotations,
                "labels": {
                    convert.POD_GROUP_LABEL: pod.job,
                    convert.JOB_NAME_LABEL: pod.job,
                    convert.REPLICA_TYPE_LABEL: pod.role.value,
                    convert.REPLICA_INDEX_LABEL: str(pod.index),
                },
                "ownerReferences": [
                    {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": pod.job, "controller": True}
                ],
            },
            "spec": spec,
            "status": {"phase": pod.phase} | _scheduled(pod),
        }

    def _tfjob_object(self, job: SimJob, now: float) -> dict[str, Any]:
        """The TFJob as the model reads it, marked suspendable (every policy may restart any job; what a
        restart loses is the engine's to count). A job that checkpoints declares its interval when jobs
        tell (`tells_checkpoints`; one that keeps every step declares 1 s)."""
        spec = job.spec
        annotations = {SUSPENDABLE_ANNOTATION: "true", **job.annotations}
        if self.tells_checkpoints and spec.checkpoint_s is not None:
            annotations[CHECKPOINT_INTERVAL_ANNOTATION] = f"{max(spec.checkpoint_s, 1.0):g}"
        if job.elastic:
            annotations[convert.MIN_WORKERS_ANNOTATION] = str(spec.min_workers)
            annotations[convert.MAX_WORKERS_ANNOTATION] = str(spec.max_workers)
        replica_specs = {
            "PS": {"replicas": spec.ps, "template": _template(spec, Role.PS)},
            "Worker": {"replicas": job.workers, "template": _template(spec, Role.WORKER)},
        }
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "TFJob",
            "metadata": {
                "name": spec.name,
                "namespace": NAMESPACE,
                "uid": f"uid-job-{spec.name}",
                "creationTimestamp": stamp(spec.arrival_s),
                "annotations": annotations,
            },
            "spec": {"enableDynamicWorker": job.elastic, "tfReplicaSpecs": replica_specs},
            "status": {"conditions": [{"type": "Succeeded", "status": "True"}] if job.finished else []},
        }


def _scheduled(pod: SimPod) -> dict[str, Any]:
    """The PodScheduled condition of a pod bound at a known time (what the minimum run is counted from)."""
    if not pod.node or not pod.bound_at:
        return {}
    return {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(pod.bound_at)}]}


def _template(spec: JobSpec, role: Role) -> dict[str, Any]:
    quantities = (spec.requests(role) - Resources({"pods": 1})).to_quantities()
    return {"spec": {"containers": [{"name": "tensorflow", "resources": {"requests": quantities}}]} | _tolerating(spec)}


def _tolerating(spec: JobSpec) -> dict[str, Any]:
    """The pod spec's `tolerations` of the job's (none when it tolerates nothing)."""
    if not spec.tolerations:
        return {}
    return {"tolerations": [_toleration(taint) for taint in spec.tolerations]}


def _toleration(taint: str) -> dict[str, str]:
    """The toleration of exactly `taint` (`key` alone: of any value)."""
    fields = _taint(taint)
    return fields | {"operator": "Equal" if "value" in fields else "Exists"}


def _taint(taint: str) -> dict[str, str]:
    """`key=value:Effect` (or `key:Effect`) as a Node's taint."""
    key_value, effect = taint.rsplit(":", 1)
    key, _, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}


def _podgroup_object(job: SimJob, now: float) -> dict[str, Any]:
    spec = job.spec
    minimum = spec.ps + (spec.min_workers if job.elastic and not spec.gang_asks_all else job.workers)
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": spec.name, "namespace": NAMESPACE, "creationTimestamp": stamp(now)},
        "spec": {"minMember": minimum},
    }


def _node_object(node: NodeSpec) -> dict[str, Any]:
    allocatable = node.allocatable.to_quantities()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": {"kubernetes.io/hostname": node.name}},
        "spec": {"taints": [_taint(taint) for taint in node.taints]} if node.taints else {},
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
    }
