"""Native gangs, decided: which `scheduling.k8s.io` Workloads and PodGroups the TFJobs should have, and which
barrier holds each TFJob that names the scheduler. Pure functions over views; `native_gang_loop` acts on them.

A TFJob has a native gang when the extender's admission webhook named one in its replica templates as it
was created (`JobView.native_gang`, with every template's `spec.schedulingGroup.podGroupName` still that
name) and its templates name the scheduler. While it runs (not finished, failed or suspended) it should have
a Workload and a PodGroup of that name, each with `gang.minCount` equal to all the pods it should have now
(its replicas, as the scaler or its owner set them). A Workload the extender made (`KeptGang`, found by its
label) whose TFJob has ended, is suspended, is gone or was replaced (another uid) is deleted with its
PodGroup. Every other TFJob keeps the extender's own barrier: one created while the webhook was not
reached has no `podGroupName`, and its pods cannot get one (the field is immutable on pods), so it is never
given a native gang that could not form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from extender.policy.core.views import JobView

ActionKind = Literal["create", "resize", "delete"]
Barrier = Literal["kube-scheduler", "extender"]


@dataclass(frozen=True, slots=True)
class NativeModeStatus:
    """Whether native gangs are given in this cluster, and why (or why not)."""

    setting: str
    """`native_gangs`: off, on or auto."""
    active: bool
    """The setting asks for them and the API server serves `scheduling.k8s.io/v1beta1` PodGroups."""
    why: str


@dataclass(frozen=True, slots=True)
class KeptGang:
    """A Workload the extender made for a TFJob's native gang, as listed (its PodGroup has the same name)."""

    namespace: str
    name: str
    job_uid: str
    """The uid of the TFJob it was made for (its label)."""
    min_count: int
    """The minCount its PodGroup template was last written with."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NativeGangAction:
    """One write: create a TFJob's Workload and PodGroup, set their minCount, or delete both."""

    kind: ActionKind
    namespace: str
    name: str
    """The Workload's and the PodGroup's name."""
    job: str
    """`namespace/name` of the TFJob."""
    job_uid: str
    min_count: int
    reason: str
    priority_class: str = ""
    """The PriorityClass its replica templates name ("" for none): the gang's own priority. kube-scheduler
    refuses a PodGroup whose priority differs from its pods' (1.37's `validatePodGroup`), and the priority
    admission resolves a PodGroup's priority from its own `priorityClassName`, not from its pods'."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class JobBarrier:
    """Who holds a TFJob's all-or-nothing barrier, and why."""

    job: str
    barrier: Barrier
    why: str
    pod_group: str = ""
    """The `scheduling.k8s.io` PodGroup of its native gang ("" without one)."""


def pods_wanted(job: JobView) -> int:
    """Every pod the TFJob should have now: the replicas of all its roles."""
    return sum(job.replicas.values())


def has_native_gang(job: JobView, scheduler_name: str) -> bool:
    """The webhook named a native gang in its templates, they all still name it, and they name the scheduler."""
    return bool(job.native_gang) and job.scheduling_group == job.native_gang and scheduler_name in job.scheduler_names


def stopped_because(job: JobView) -> str:
    """Why the TFJob should hold no gang now ("" while it should)."""
    if job.succeeded:
        return "succeeded"
    if job.failed:
        return "failed"
    if job.suspended:
        return "suspended"
    if pods_wanted(job) == 0:
        return "has no replicas"
    return ""


def plan_native_gangs(
    jobs: Mapping[str, JobView],
    kept: Mapping[str, KeptGang],
    group_min_counts: Mapping[str, int],
    scheduler_name: str,
) -> list[NativeGangAction]:
    """The writes that make the native gangs what the TFJobs want: deletions first, then creations and resizes.

    `kept`: the Workloads the extender made, by `namespace/name`; `group_min_counts`: the minCount of each
    `scheduling.k8s.io` PodGroup the model holds, by `namespace/name` (a kept Workload without its PodGroup is
    created again)."""
    owners = {f"{job.namespace}/{job.native_gang}": job for job in jobs.values() if job.native_gang}
    actions: list[NativeGangAction] = []
    for key, gang in sorted(kept.items()):
        job = owners.get(key)
        reason = _deletion_reason(job, gang, scheduler_name)
        if reason:
            actions.append(
                NativeGangAction("delete", gang.namespace, gang.name, _job_key(job, gang), gang.job_uid, 0, reason)
            )
    for key, job in sorted(owners.items()):
        if stopped_because(job) or not has_native_gang(job, scheduler_name):
            continue
        wanted = pods_wanted(job)
        kept_gang = kept.get(key)
        action = NativeGangAction(
            "create", job.namespace, job.native_gang, job.key, job.uid, wanted, "", job.priority_class
        )
        if kept_gang is None:
            actions.append(_with(action, reason=f"TFJob {job.key} wants a gang of {wanted} pods"))
        elif kept_gang.job_uid != job.uid:
            continue
        elif key not in group_min_counts:
            actions.append(_with(action, reason=f"the PodGroup of TFJob {job.key} is missing"))
        elif group_min_counts[key] != wanted or kept_gang.min_count != wanted:
            had = group_min_counts[key] if group_min_counts[key] != wanted else kept_gang.min_count
            actions.append(_with(action, kind="resize", reason=f"TFJob {job.key} wants {wanted} pods, minCount {had}"))
    return actions


def _deletion_reason(job: JobView | None, gang: KeptGang, scheduler_name: str) -> str:
    if job is None:
        return "its TFJob is gone"
    if job.uid != gang.job_uid:
        return f"TFJob {job.key} was replaced (uid {job.uid}, made for {gang.job_uid})"
    if not has_native_gang(job, scheduler_name):
        return f"TFJob {job.key} no longer names it in every replica template, or no longer names {scheduler_name}"
    stopped = stopped_because(job)
    return f"TFJob {job.key} {stopped}" if stopped else ""


def _job_key(job: JobView | None, gang: KeptGang) -> str:
    return job.key if job is not None else f"{gang.namespace}/?"


def _with(action: NativeGangAction, *, kind: ActionKind | None = None, reason: str) -> NativeGangAction:
    return replace(action, kind=kind or action.kind, reason=reason)


def barrier_of(job: JobView, scheduler_name: str, mode: NativeModeStatus) -> JobBarrier:
    """Who holds the barrier of a TFJob naming the scheduler, and why, in words for `/debug`."""
    if has_native_gang(job, scheduler_name):
        return JobBarrier(
            job.key,
            "kube-scheduler",
            f"native gang: Workload and PodGroup {job.namespace}/{job.native_gang}, kept by the extender",
            job.native_gang,
        )
    if job.scheduling_group:
        return JobBarrier(
            job.key,
            "kube-scheduler",
            f"its templates name the scheduling.k8s.io PodGroup {job.scheduling_group} its owner declared",
            job.scheduling_group,
        )
    if job.native_gang:
        why = "its replica templates no longer all name the PodGroup the webhook gave it"
    elif mode.active:
        why = (
            "created without spec.schedulingGroup (the admission webhook was not reached, or not yet serving): "
            "its pods cannot join a native gang (the field is immutable on pods), so the extender's own barrier "
            "holds it (the PodGroup training-operator makes with --gang-scheduler-name)"
        )
    else:
        why = f"native gangs are not given here: {mode.why}"
    return JobBarrier(job.key, "extender", why)
