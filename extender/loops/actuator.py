"""The one seam for side effects: resize a TFJob's workers, suspend or resume one, evict a pod, write an Event.

The service uses the Kubernetes implementation (`extender.k8s.actuator`); tests and the simulator use
`RecordingActuator`, which only remembers what it was asked to do. Pods are only ever removed through
the Eviction API, so PodDisruptionBudgets are respected: a refusal is `EvictionRefused`. A worker-count
change is always conditioned on the count the plan was made from, so a retry or a second instance acting
on a stale model never applies a step twice. The scaler needs a little more (`ScalingActuator`):
restarting a worker pod so its controller recreates it elsewhere, and stamping annotations on a TFJob.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from extender.policy.core.views import GroupView, PodView


class EvictionRefused(Exception):
    """The API server refused an eviction: a PodDisruptionBudget allows no disruption now (HTTP 429)."""


@dataclass(frozen=True, slots=True)
class Resize:
    """What a conditioned worker-count change did."""

    applied: bool
    observed: int
    """The Worker replicas found on the TFJob (before the change, if applied)."""
    conflicts: int = 0
    """Writes refused with 409 Conflict (someone else changed the TFJob) and retried."""


class Actuator(Protocol):
    def resize_workers(
        self, job: str, expected: int, replicas: int, annotations: Mapping[str, str], reason: str
    ) -> Resize:
        """Set `spec.tfReplicaSpecs.Worker.replicas` of the TFJob `namespace/name` to `replicas` and add
        `annotations`, only while its Worker replicas are still `expected` (otherwise leave it and report
        what was found)."""

    def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
        """Evict the pod through the Eviction API (graceful, only this UID; a pod already gone is fine),
        or with `dry_run` only ask whether it may be evicted now. Raises `EvictionRefused` when a
        PodDisruptionBudget forbids it."""

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        """Write an Event about the object `kind` `namespace/name`."""

    def annotate_group(self, group: GroupView, annotations: Mapping[str, str | None]) -> None:
        """Merge `annotations` into the PodGroup's (a None value removes that annotation)."""

    def annotate_job(self, job: str, annotations: Mapping[str, str]) -> None:
        """Add `annotations` to the TFJob `namespace/name`."""

    def annotate_kueue_workloads(self, job: str, job_uid: str, annotations: Mapping[str, str]) -> int:
        """Add `annotations` to the Kueue Workloads of the TFJob `namespace/name` (those labelled
        `kueue.x-k8s.io/job-uid` with its UID); how many there were."""

    def suspend_job(self, job: str, suspend: bool, annotations: Mapping[str, str | None]) -> None:
        """Set `spec.runPolicy.suspend` of the TFJob `namespace/name` and merge `annotations` into its own,
        in one write: training-operator deletes the pods of a suspended job (and its PodGroup) and recreates
        them when it resumes."""


class ScalingActuator(Actuator, Protocol):
    def restart_pod(self, pod: PodView, reason: str) -> bool:
        """Evict the pod (graceful, only this UID) so its controller recreates it; False if already gone.
        Raises `EvictionRefused` when a PodDisruptionBudget forbids it."""


@dataclass
class RecordingActuator:
    """Remembers every action, in order."""

    scaled: list[tuple[str, int, str]] = field(default_factory=list)
    evicted: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    restarted: list[tuple[str, str]] = field(default_factory=list)
    annotated: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    annotated_groups: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    suspended: list[tuple[str, bool, dict[str, str | None]]] = field(default_factory=list)
    workers: dict[str, int] = field(default_factory=dict)
    """Worker replicas per TFJob as resized here (a job not resized yet is taken to have `expected`)."""
    protected: set[str] = field(default_factory=set)
    """Pods (`namespace/name`) a PodDisruptionBudget protects: evicting them is refused."""
    dry_runs: list[str] = field(default_factory=list)
    annotated_workloads: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    """(TFJob, annotations) written on its Kueue Workloads."""

    def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
        if pod.key in self.protected:
            raise EvictionRefused(f"Cannot evict pod as it would violate the pod's disruption budget: {pod.key}")
        if dry_run:
            self.dry_runs.append(pod.key)
        else:
            self.evicted.append((pod.key, reason))

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        self.events.append((kind, key, reason, message))

    def annotate_group(self, group: GroupView, annotations: Mapping[str, str | None]) -> None:
        self.annotated_groups.append((f"{group.namespace}/{group.name}", dict(annotations)))

    def suspend_job(self, job: str, suspend: bool, annotations: Mapping[str, str | None]) -> None:
        self.suspended.append((job, suspend, dict(annotations)))

    def resize_workers(
        self, job: str, expected: int, replicas: int, annotations: Mapping[str, str], reason: str
    ) -> Resize:
        observed = self.workers.get(job, expected)
        if observed != expected:
            return Resize(False, observed)
        self.workers[job] = replicas
        self.scaled.append((job, replicas, reason))
        self.annotated.append((job, dict(annotations)))
        return Resize(True, observed)

    def restart_pod(self, pod: PodView, reason: str) -> bool:
        if pod.key in self.protected:
            raise EvictionRefused(f"Cannot evict pod as it would violate the pod's disruption budget: {pod.key}")
        self.restarted.append((pod.key, reason))
        return True

    def annotate_job(self, job: str, annotations: Mapping[str, str]) -> None:
        self.annotated.append((job, dict(annotations)))

    def annotate_kueue_workloads(self, job: str, job_uid: str, annotations: Mapping[str, str]) -> int:
        self.annotated_workloads.append((job, dict(annotations)))
        return 1
