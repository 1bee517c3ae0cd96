"""One minimal Kubernetes manifest per model view: a node, a pod, a PodGroup (either API group), a TFJob, a
PriorityClass and the ClusterNetworkTopology, each holding only the fields the model reads, so that reading
the manifest back through `extender.state.convert` gives the same view. `extender.state.state_dump` puts
them together into a dump of the whole model.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from extender.policy.core.node_fit import Taint, Term, Toleration
from extender.policy.core.resources import EMPTY, PODS, Resources
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import NODE_LAYER, GroupView, JobView, NetworkLayer, NodeView, PodView, Role
from extender.state import convert, workload_api
from extender.state.gang_annotations import (
    ATTAINED_ANNOTATION,
    CHECKPOINT_INTERVAL_ANNOTATION,
    MIN_RUN_ANNOTATION,
    RESUMED_AT_ANNOTATION,
    RUN_TIME_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
    SUSPENDED_AT_ANNOTATION,
    TAKEN_ANNOTATION,
)
from extender.state.kinds import BY_KIND, Kind
from extender.state.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL

GATE_NAME = "tfjob-extender.io/gated"
"""The scheduling gate a dumped gated pod carries: the model keeps that it is gated, not by which gates."""
DUMPED_QUEUE_NAME = "admitted-by-kueue"
"""The queue-name label a dumped TFJob Kueue admits carries: the model keeps that Kueue admits it, not
through which LocalQueue."""


def _time(seconds: float) -> str | None:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if seconds else None


def _meta(name: str, namespace: str | None, created: float, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if created:
        meta["creationTimestamp"] = _time(created)
    meta.update({key: value for key, value in extra.items() if value})
    return meta


def node_manifest(node: NodeView) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(node.name, None, 0.0, labels=dict(node.labels)),
        "spec": {"unschedulable": True}
        if not node.schedulable
        else {} | ({"taints": [_taint(taint) for taint in node.taints]} if node.taints else {}),
        "status": {"allocatable": node.allocatable.to_quantities()},
    }


def pod_manifest(pod: PodView, snapshot: ClusterSnapshot) -> dict[str, Any]:
    labels: dict[str, str] = {}
    scheduling_group: dict[str, str] = {}
    if pod.group:
        group = snapshot.groups.get(pod.group)
        api_group = group.api_group if group is not None else ""
        if api_group == workload_api.API_GROUP:
            scheduling_group["podGroupName"] = pod.group.split("/")[1]
        else:
            legacy = api_group == "scheduling.sigs.k8s.io"
            labels[convert.LEGACY_POD_GROUP_LABELS[0] if legacy else convert.POD_GROUP_LABEL] = pod.group.split("/")[1]
    owners = []
    if pod.job:
        job_name = pod.job.split("/", 1)[1]
        labels[convert.JOB_NAME_LABEL] = job_name
        job = snapshot.jobs.get(pod.job)
        owners.append(
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": job_name,
                "uid": job.uid if job else "",
                "controller": True,
            }
        )
    if pod.role is not Role.NONE:
        labels[convert.REPLICA_TYPE_LABEL] = pod.role.value
    if pod.role is not Role.NONE or pod.index:
        labels[convert.REPLICA_INDEX_LABEL] = str(pod.index)
    index = pod.topology_index
    annotations = {convert.NETWORK_TOPOLOGY_INDEX_ANNOTATION: str(index)} if index is not None else {}
    if pod.last_checkpoint:
        annotations[convert.LAST_CHECKPOINT_ANNOTATION] = f"{pod.last_checkpoint:.3f}"
    meta = _meta(
        pod.name,
        pod.namespace,
        pod.created,
        uid=pod.uid,
        labels=labels,
        annotations=annotations,
        ownerReferences=owners,
        deletionTimestamp=_time(pod.created or 1.0) if pod.terminating else None,
    )
    requests = (pod.requests - Resources({PODS: 1})).to_quantities()
    spec: dict[str, Any] = {
        "schedulerName": pod.scheduler_name,
        "priority": pod.priority,
        "preemptionPolicy": pod.preemption_policy,
        "containers": [{"name": "main", "resources": {"requests": requests}}],
    }
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.scheduling_gated:
        spec["schedulingGates"] = [{"name": GATE_NAME}]
    if pod.tolerations:
        spec["tolerations"] = [_toleration(toleration) for toleration in pod.tolerations]
    if pod.node_affinity is not None:
        terms = [_term(term) for term in pod.node_affinity]
        required = {"nodeSelectorTerms": terms}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    if scheduling_group:
        spec["schedulingGroup"] = scheduling_group
    if pod.resource_claims:
        spec["resourceClaims"] = [{"name": "claim", "resourceClaimName": f"{pod.name}-claim"}]
    status: dict[str, Any] = {"phase": pod.phase}
    if pod.scheduled_at:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": _time(pod.scheduled_at)}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _taint(taint: Taint) -> dict[str, str]:
    return {"key": taint.key, "value": taint.value, "effect": taint.effect}


def _toleration(toleration: Toleration) -> dict[str, str]:
    written = {"key": toleration.key, "operator": toleration.operator, "value": toleration.value}
    return written | ({"effect": toleration.effect} if toleration.effect else {})


def _term(term: Term) -> dict[str, Any]:
    written: dict[str, Any] = {}
    for requirement in term.requirements:
        kind = "matchFields" if requirement.on_field else "matchExpressions"
        entry = {"key": requirement.key, "operator": requirement.operator.value, "values": list(requirement.values)}
        written.setdefault(kind, []).append(entry)
    return written


def group_manifest(group: GroupView) -> dict[str, Any]:
    annotations = {convert.GANG_GROUPS_ANNOTATION: json.dumps(list(group.gang_group))} if group.gang_group else {}
    if group.gather:
        rules = [{"layer": rule.layer, "strategy": rule.strategy.value} for rule in group.gather]
        annotations[convert.NETWORK_TOPOLOGY_SPEC_ANNOTATION] = json.dumps({"gatherStrategy": rules})
    if group.plan:
        nodes = {name: node for name, node, _ in group.plan}
        uids = {name: uid for name, _, uid in group.plan}
        annotations[convert.GANG_PLAN_ANNOTATION] = convert.plan_annotation(nodes, group.plan_expires, uids)
    metadata = _meta(group.name, group.namespace, group.created, annotations=annotations)
    if group.owner_job:
        owner = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": group.owner_job.split("/", 1)[1]}
        metadata["ownerReferences"] = [owner | {"uid": "", "controller": True}]
    if group.api_group == workload_api.API_GROUP:
        return workload_api.podgroup_manifest(group, metadata)
    spec: dict[str, Any] = {"minMember": group.min_member}
    if group.schedule_timeout_s:
        spec["scheduleTimeoutSeconds"] = int(group.schedule_timeout_s)
    if group.min_resources:
        spec["minResources"] = group.min_resources.to_quantities()
    return {
        "apiVersion": f"{group.api_group}/v1alpha1",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def job_manifest(job: JobView) -> dict[str, Any]:
    template_extras: dict[str, Any] = {}
    if len(job.scheduler_names) == 1:
        template_extras["schedulerName"] = job.scheduler_names[0]
    if job.scheduling_group:
        template_extras["schedulingGroup"] = {"podGroupName": job.scheduling_group}
    replica_specs = {
        role.value.capitalize() if role is not Role.PS else "PS": {
            "replicas": count,
            "template": {
                "spec": {
                    **template_extras,
                    "containers": [
                        {
                            "name": "tensorflow",
                            "resources": {
                                "requests": (job.role_requests.get(role, EMPTY) - Resources({PODS: 1})).to_quantities()
                            },
                        }
                    ],
                }
            },
        }
        for role, count in job.replicas.items()
    }
    spec: dict[str, Any] = {"tfReplicaSpecs": replica_specs, "enableDynamicWorker": job.enable_dynamic_worker}
    run_policy: dict[str, Any] = {}
    if job.priority_class:
        run_policy["schedulingPolicy"] = {"priorityClass": job.priority_class}
    if job.suspended:
        run_policy["suspend"] = True
    if run_policy:
        spec["runPolicy"] = run_policy
    workers = job.replicas.get(Role.WORKER, 0)
    annotations = (
        {
            convert.MIN_WORKERS_ANNOTATION: str(job.min_workers),
            convert.MAX_WORKERS_ANNOTATION: str(job.max_workers),
        }
        if (job.min_workers, job.max_workers) != (workers, workers)
        else {}
    )
    if job.scaled_at:
        annotations[convert.SCALED_AT_ANNOTATION] = f"{job.scaled_at:.3f}"
    if job.consolidated_at:
        annotations[convert.CONSOLIDATED_AT_ANNOTATION] = f"{job.consolidated_at:.3f}"
    if job.worker_plan:
        annotations[convert.WORKER_PLAN_ANNOTATION] = convert.plan_annotation(
            dict(job.worker_plan), job.worker_plan_expires
        )
    annotations |= _suspension_annotations(job)
    if job.native_gang:
        annotations[convert.NATIVE_GANG_ANNOTATION] = job.native_gang
    manifest = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": _meta(
            job.name,
            job.namespace,
            job.created,
            uid=job.uid,
            annotations=annotations,
            labels=_kueue_labels(job),
        ),
        "spec": spec,
    }
    conditions = [
        {"type": kind, "status": "True"}
        for kind, held in (("Succeeded", job.succeeded), ("Failed", job.failed))
        if held
    ]
    if conditions:
        manifest["status"] = {"conditions": conditions}
    return manifest


def _suspension_annotations(job: JobView) -> dict[str, str]:
    """Whether the job may be suspended, and what the preemption loop wrote on it about its runs."""
    annotations = {SUSPENDABLE_ANNOTATION: "true"} if job.suspendable else {}
    for name, seconds in (
        (SUSPENDED_AT_ANNOTATION, job.suspended_at),
        (RESUMED_AT_ANNOTATION, job.resumed_at),
        (ATTAINED_ANNOTATION, job.attained_s),
        (RUN_TIME_ANNOTATION, job.run_s),
    ):
        if seconds:
            annotations[name] = f"{seconds:.3f}"
    if job.taken:
        annotations[TAKEN_ANNOTATION] = ",".join(f"{at:.3f}" for at in job.taken)
    if job.min_run_before_preemption_s is not None:
        annotations[MIN_RUN_ANNOTATION] = f"{job.min_run_before_preemption_s:g}"
    if job.checkpoint_interval_s is not None:
        annotations[CHECKPOINT_INTERVAL_ANNOTATION] = f"{job.checkpoint_interval_s:g}"
    return annotations


def network_topology_manifest(layers: tuple[NetworkLayer, ...]) -> dict[str, Any]:
    """The ClusterNetworkTopology `default` declaring `layers` (top first) above the node layer."""
    spec: list[dict[str, Any]] = []
    parent = ""
    for layer in (*layers, NetworkLayer(NODE_LAYER, ())):
        entry: dict[str, Any] = {"topologyLayer": layer.name}
        if parent:
            entry["parentTopologyLayer"] = parent
        if layer.label_keys:
            entry["labelKey"] = list(layer.label_keys)
        spec.append(entry)
        parent = layer.name
    return {
        "apiVersion": BY_KIND[Kind.NETWORK_TOPOLOGY].api_version,
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": convert.NETWORK_TOPOLOGY_NAME},
        "spec": {"networkTopologySpec": spec},
    }


def _kueue_labels(job: JobView) -> dict[str, str]:
    """Kueue's labels as the model reads them back: a queue for a job Kueue admits, its WorkloadPriorityClass."""
    labels = {QUEUE_NAME_LABEL: DUMPED_QUEUE_NAME} if job.kueue_managed else {}
    if job.kueue_priority_class:
        labels[PRIORITY_CLASS_LABEL] = job.kueue_priority_class
    return labels


def priority_class_manifest(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def workload_priority_class_manifest(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
