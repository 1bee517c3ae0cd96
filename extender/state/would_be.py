"""A TFJob not submitted yet, as the cluster model would hold it once training-operator had made its pods and
PodGroup: what `POST /debug/what-if` asks about.

`would_be` reads the manifest as the model reads a TFJob (`crds.job_view`) and builds what training-operator
v1.9, started with `--gang-scheduler-name`, creates for it: a pod per replica, `<job>-<replica type>-<index>`,
from its replica's template, with the labels naming its job, role, index and PodGroup, the gang scheduler
unless the template names a scheduler, the priority of its PriorityClass and no `spec.schedulingGroup` (the
gang is training-operator's PodGroup); and a `scheduling.x-k8s.io` PodGroup named after the job whose
`minMember` is `schedulingPolicy.minAvailable`, else every replica. Each replica's first pod is converted
like a watched pod (`convert` checks every field) and the others are copies of it. `with_would_be` adds the
job, its pods and its PodGroup to a snapshot: a new snapshot that shares the old one's maps but for the
buckets it writes (`frozenmap.with_entries`), with the gang queue holding the one gang more. The model is
never touched. What the extender could not answer for is refused with `NotAskable`, saying why: not a
TFJob, a field the model cannot read, no pods or more than `max_pods`, a PriorityClass the cluster lacks, a
scheduler that is not the extender's, a suspended job, devices left to DRA, a job, PodGroup or pod the model
already knows. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from extender.policy.core.frozenmap import with_entries
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView, JobView, PodView
from extender.policy.rank.gang_summary import summarize
from extender.policy.rank.queue import queue_of
from extender.policy.rank.weights import cluster_capacity
from extender.state import convert, fields
from extender.state.fields import FieldError, Json
from extender.state.objects import NON_NEGATIVE, ConversionError, converted

TFJOB_API_GROUP = "kubeflow.org"
PODGROUP_API_GROUP = "scheduling.x-k8s.io"
"""The PodGroup dialect training-operator creates for a gang scheduler that is not Volcano."""
GENERATED_NAME_SUFFIX = "what-if"
"""Stands for the random suffix of a manifest that has only `metadata.generateName`."""


class NotAskable(ValueError):
    """A manifest what-if cannot answer for, and why; `known` when the model already holds the job (or its
    PodGroup or a pod of its name)."""

    def __init__(self, message: str, *, known: bool = False) -> None:
        super().__init__(message)
        self.known = known


@dataclass(frozen=True, slots=True)
class WouldBe:
    """The TFJob, its pods and its PodGroup as the model would hold them, the pods pending."""

    job: JobView
    group: GroupView
    pods: tuple[PodView, ...]


def would_be(manifest: Any, *, scheduler_name: str, priority_classes: Mapping[str, int], max_pods: int) -> WouldBe:
    """What `manifest` (a TFJob) would be in the model once submitted; `NotAskable` says why not."""
    if not isinstance(manifest, dict):
        raise NotAskable(f"the manifest is {fields.show(manifest)}, not a TFJob object")
    kind, api_version = manifest.get("kind"), manifest.get("apiVersion")
    if kind != "TFJob" or not isinstance(api_version, str) or api_version.split("/")[0] != TFJOB_API_GROUP:
        raise NotAskable(
            f"not a TFJob: kind {fields.show(kind)}, apiVersion {fields.show(api_version)} "
            f"(what-if answers for {TFJOB_API_GROUP}/v1 TFJobs)"
        )
    submitted = _as_submitted(manifest)
    try:
        job = convert.job_view(submitted)
        pods = converted(submitted, lambda obj: _pods(obj, job, scheduler_name, priority_classes, max_pods))
        group = convert.group_view(converted(submitted, lambda obj: _podgroup(obj, len(pods))), PODGROUP_API_GROUP)
    except ConversionError as error:
        raise NotAskable(str(error)) from None
    if job.suspended:
        raise NotAskable(f"TFJob {job.key} is suspended (spec.runPolicy.suspend): it would start only once resumed")
    foreign = sorted({pod.scheduler_name for pod in pods} - {scheduler_name})
    if foreign:
        raise NotAskable(
            f"TFJob {job.key} names the scheduler {', '.join(foreign)}: the extender places only the pods of "
            f"{scheduler_name}"
        )
    if any(pod.resource_claims for pod in pods):
        raise NotAskable(
            f"TFJob {job.key} claims devices (resourceClaims) that kube-scheduler's DRA plugin allocates: "
            "the extender cannot say where it would go"
        )
    return WouldBe(job, group, pods)


def with_would_be(snapshot: ClusterSnapshot, would: WouldBe, settings: PolicySettings) -> ClusterSnapshot:
    """`snapshot` with `would`'s job, pods and PodGroup added (its gang in the queue too), `snapshot` left as it
    was; `NotAskable` (`known`) when the model already holds any of them."""
    job, group = would.job, would.group
    known = [f"TFJob {job.key}"] if job.key in snapshot.jobs else []
    if group.key in snapshot.groups or group.key in snapshot.group_members:
        known.append(f"PodGroup {group.key}")
    known += [f"pod {pod.key}" for pod in would.pods if pod.key in snapshot.pods][:3]
    if known:
        raise NotAskable(
            f"the extender already knows {', '.join(known)}: ask `tfjob-extender explain {job.key}` about what "
            "was submitted, or give this TFJob a name of its own",
            known=True,
        )
    members = frozenset(pod.key for pod in would.pods)
    added = replace(
        snapshot,
        pods=with_entries(snapshot.pods, {pod.key: pod for pod in would.pods}),
        groups=with_entries(snapshot.groups, {group.key: group}),
        group_members=with_entries(snapshot.group_members, {group.key: members}),
        jobs=with_entries(snapshot.jobs, {job.key: job}),
        job_members=with_entries(snapshot.job_members, {job.key: members}),
        queue=None,
    )
    summary = summarize(added, group.key, cluster_capacity(added), settings)
    queue = queue_of(snapshot, settings)
    return replace(added, queue=queue if summary is None else queue.with_gang(summary))


def _as_submitted(manifest: Json) -> Json:
    """The manifest as the API server would store it at creation: in `default` when it names no namespace,
    named after `generateName` when it has no name, with no status, uid or creation time of its own."""
    meta = manifest.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta.setdefault("namespace", "default")
    if not meta.get("name") and isinstance(meta.get("generateName"), str):
        meta["name"] = meta["generateName"] + GENERATED_NAME_SUFFIX
    for field in ("uid", "creationTimestamp", "resourceVersion"):
        meta.pop(field, None)
    return {key: value for key, value in manifest.items() if key != "status"} | {"metadata": meta}


def _pods(
    submitted: Json, job: JobView, scheduler_name: str, priority_classes: Mapping[str, int], max_pods: int
) -> tuple[PodView, ...]:
    count = sum(job.replicas.values())
    if not count:
        raise FieldError("spec.tfReplicaSpecs asks for no pods")
    if count > max_pods:
        raise FieldError(f"spec.tfReplicaSpecs asks for {count} pods; what-if answers for at most {max_pods}")
    pods: list[PodView] = []
    specs = fields.mapping(fields.mapping(submitted, "spec", "spec"), "tfReplicaSpecs", "spec.tfReplicaSpecs")
    for replica_type, replica_spec in specs.items():
        path = f"spec.tfReplicaSpecs.{replica_type}"
        replicas = fields.integer(replica_spec or {}, "replicas", f"{path}.replicas", default=1, bounds=NON_NEGATIVE)
        if not replicas:
            continue
        template = fields.mapping(replica_spec, "template", f"{path}.template")
        first = convert.pod_view(
            _pod_object(submitted, replica_type, template, f"{path}.template", scheduler_name, priority_classes)
        )
        pods.append(first)
        pods += [
            replace(first, name=_pod_name(job.name, replica_type, index), index=index) for index in range(1, replicas)
        ]
    return tuple(pods)


def _pod_name(job_name: str, replica_type: str, index: int) -> str:
    """The name training-operator gives the replica's pod: `<job>-<replica type, lower case>-<index>`."""
    return f"{job_name}-{replica_type.lower()}-{index}"


def _pod_object(
    submitted: Json,
    replica_type: str,
    template: Json,
    path: str,
    scheduler_name: str,
    priority_classes: Mapping[str, int],
) -> Json:
    """The first pod training-operator would create for the replica, from its `template`."""
    meta = submitted["metadata"]
    template_meta = fields.mapping(template, "metadata", f"{path}.metadata")
    spec = dict(fields.mapping(template, "spec", f"{path}.spec"))
    spec.pop("schedulingGroup", None)
    spec["schedulerName"] = spec.get("schedulerName") or scheduler_name
    spec["priority"] = _priority(spec.get("priorityClassName"), priority_classes, f"{path}.spec.priorityClassName")
    labels = {
        **fields.mapping(template_meta, "labels", f"{path}.metadata.labels"),
        convert.JOB_NAME_LABEL: meta["name"],
        convert.REPLICA_TYPE_LABEL: replica_type.lower(),
        convert.REPLICA_INDEX_LABEL: "0",
        convert.POD_GROUP_LABEL: meta["name"],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": _pod_name(meta["name"], replica_type, 0),
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": fields.mapping(template_meta, "annotations", f"{path}.metadata.annotations"),
            "ownerReferences": [_owner(meta["name"])],
        },
        "spec": spec,
    }


def _priority(name: Any, priority_classes: Mapping[str, int], path: str) -> int:
    """The value of the PriorityClass `name` (0 without one), as the API server's admission would set it."""
    if not name:
        return 0
    value = priority_classes.get(fields.dns_subdomain(name, path))
    if value is None:
        raise FieldError(f"{path}: the cluster has no PriorityClass {name} (the API server would refuse the pods)")
    return value


def _podgroup(submitted: Json, pods: int) -> Json:
    """The PodGroup training-operator would create for the job of `pods` pods."""
    meta = submitted["metadata"]
    run_policy = fields.mapping(fields.mapping(submitted, "spec", "spec"), "runPolicy", "spec.runPolicy")
    policy = fields.mapping(run_policy, "schedulingPolicy", "spec.runPolicy.schedulingPolicy")
    where = "spec.runPolicy.schedulingPolicy"
    spec: dict[str, Any] = {"minMember": fields.integer(policy, "minAvailable", f"{where}.minAvailable", default=pods)}
    timeout = fields.integer(policy, "scheduleTimeoutSeconds", f"{where}.scheduleTimeoutSeconds", bounds=NON_NEGATIVE)
    if timeout:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": f"{PODGROUP_API_GROUP}/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "ownerReferences": [_owner(meta["name"])]},
        "spec": spec,
    }


def _owner(job_name: str) -> Json:
    return {"apiVersion": f"{TFJOB_API_GROUP}/v1", "kind": "TFJob", "name": job_name, "controller": True}
