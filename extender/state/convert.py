"""Raw Kubernetes JSON → the policy's frozen views. The only module that knows label keys and field paths.

Conversion is total: whatever JSON it is given, it either returns a view whose every field has the type
and range the model expects, or raises `ConversionError` with the object's identity and the field at
fault. Every field read is checked (`fields`): names by Kubernetes' length and character rules, phases
and policies from their known sets, integers within int32, quantities bounded (`resources`), JSON
annotations parsed with their contents checked (`gang_annotations`). A bad object in a snapshot file is
reported precisely; a bad watch event or request pod is refused, never stored half-valid. Pods, nodes,
PodGroups and PriorityClasses are read here, TFJobs and ClusterNetworkTopologies in `crds`, on the
shared helpers of `objects`; this module is the one entry point for all of them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from extender.policy.core.node_fit import NODE_NAME_FIELD, TAINT_EFFECTS, Operator, Requirement, Taint, Term, Toleration
from extender.policy.core.views import GroupView, NodeView, PodView
from extender.state import fields, gang_annotations, workload_api
from extender.state.crds import job_view as job_view
from extender.state.crds import network_layers as network_layers
from extender.state.fields import FieldError, Json
from extender.state.gang_annotations import ANNOTATION_PREFIX as ANNOTATION_PREFIX
from extender.state.gang_annotations import CONSOLIDATED_AT_ANNOTATION as CONSOLIDATED_AT_ANNOTATION
from extender.state.gang_annotations import GANG_GROUPS_ANNOTATION as GANG_GROUPS_ANNOTATION
from extender.state.gang_annotations import GANG_PLAN_ANNOTATION as GANG_PLAN_ANNOTATION
from extender.state.gang_annotations import LAST_CHECKPOINT_ANNOTATION as LAST_CHECKPOINT_ANNOTATION
from extender.state.gang_annotations import MAX_WORKERS_ANNOTATION as MAX_WORKERS_ANNOTATION
from extender.state.gang_annotations import MIN_WORKERS_ANNOTATION as MIN_WORKERS_ANNOTATION
from extender.state.gang_annotations import NATIVE_GANG_ANNOTATION as NATIVE_GANG_ANNOTATION
from extender.state.gang_annotations import NETWORK_TOPOLOGY_SPEC_ANNOTATION as NETWORK_TOPOLOGY_SPEC_ANNOTATION
from extender.state.gang_annotations import PREEMPTION_ANNOTATION as PREEMPTION_ANNOTATION
from extender.state.gang_annotations import SCALED_AT_ANNOTATION as SCALED_AT_ANNOTATION
from extender.state.gang_annotations import WORKER_PLAN_ANNOTATION as WORKER_PLAN_ANNOTATION
from extender.state.gang_annotations import plan_annotation as plan_annotation
from extender.state.gang_annotations import preemption_annotation as preemption_annotation
from extender.state.objects import (
    NON_NEGATIVE,
    annotation_of,
    converted,
    created_at,
    intern,
    key_of,
    requests_of,
    resources_of,
    role_of,
    shared,
)
from extender.state.objects import ConversionError as ConversionError
from extender.state.objects import identity as identity
from extender.state.objects import object_key as object_key
from extender.state.objects import pod_key as pod_key

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""training-operator and scheduler-plugins (≥ v0.25) mark gang members with this label."""
LEGACY_POD_GROUP_LABELS = ("pod-group.scheduling.sigs.k8s.io", "pod-group.scheduling.sigs.k8s.io/name")
"""The `scheduling.sigs.k8s.io` dialect's labels, as Koordinator reads them."""
NETWORK_TOPOLOGY_INDEX_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-index"
"""On a gang member: its rank in the gang's collective operations (an integer)."""
NETWORK_TOPOLOGY_NAME = "default"
"""The one ClusterNetworkTopology object that configures the layers."""
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
TFJOB_KIND = "TFJob"
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def timestamp(value: str | datetime | None) -> float:
    """Seconds since the epoch from an RFC 3339 timestamp; 0 when absent."""
    return fields.timestamp(value, "time")


def node_view(obj: Any) -> NodeView:
    return converted(obj, _node)


def _node(obj: Json) -> NodeView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    status = fields.mapping(obj, "status", "status")
    ready = True
    for index, condition in enumerate(fields.objects(status, "conditions", "status.conditions")):
        if fields.text(condition, "type", f"status.conditions[{index}].type") == "Ready":
            ready = fields.text(condition, "status", f"status.conditions[{index}].status") == "True"
    allocatable = fields.mapping(status, "allocatable", "status.allocatable") or fields.mapping(
        status, "capacity", "status.capacity"
    )
    return NodeView(
        name=intern(fields.dns_subdomain(key_of(obj, namespaced=False), "metadata.name")),
        allocatable=resources_of(allocatable, "status.allocatable"),
        labels=fields.labels(meta, "labels", "metadata.labels"),
        schedulable=ready and not fields.flag(spec, "unschedulable", "spec.unschedulable"),
        taints=tuple(
            _taint(taint, f"spec.taints[{i}]") for i, taint in enumerate(fields.objects(spec, "taints", "spec.taints"))
        ),
    )


def _taint(taint: Json, path: str) -> Taint:
    return Taint(
        key=fields.qualified_name(taint.get("key"), f"{path}.key"),
        value=fields.label_value(taint.get("value") or "", f"{path}.value"),
        effect=fields.one_of(taint, "effect", f"{path}.effect", TAINT_EFFECTS),
    )


def _tolerations(spec: Json) -> tuple[Toleration, ...]:
    read = []
    for index, toleration in enumerate(fields.objects(spec, "tolerations", "spec.tolerations")):
        path = f"spec.tolerations[{index}]"
        key = toleration.get("key") or ""
        effect = toleration.get("effect") or ""
        if effect and effect not in TAINT_EFFECTS:
            raise FieldError(f"{path}.effect={fields.show(effect)} is not one of {', '.join(TAINT_EFFECTS)}")
        read.append(
            Toleration(
                key=fields.qualified_name(key, f"{path}.key") if key else "",
                operator=fields.one_of(toleration, "operator", f"{path}.operator", ("Equal", "Exists")),
                value=fields.label_value(toleration.get("value") or "", f"{path}.value"),
                effect=effect,
            )
        )
    return tuple(read)


def _required_affinity(spec: Json) -> tuple[Term, ...] | None:
    """The terms of `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`, None when
    the pod has none."""
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    node_affinity = fields.mapping(fields.mapping(spec, "affinity", "spec.affinity"), "nodeAffinity", path)
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    if not isinstance(required, dict):
        raise FieldError(f"{path}={fields.show(required)} is not an object")
    terms = fields.objects(required, "nodeSelectorTerms", f"{path}.nodeSelectorTerms")
    return tuple(_term(term, f"{path}.nodeSelectorTerms[{index}]") for index, term in enumerate(terms))


def _term(term: Json, path: str) -> Term:
    requirements: list[Requirement] = []
    for kind, on_field in (("matchExpressions", False), ("matchFields", True)):
        for index, entry in enumerate(fields.objects(term, kind, f"{path}.{kind}")):
            where = f"{path}.{kind}[{index}]"
            key = fields.qualified_name(entry.get("key"), f"{where}.key")
            if on_field and key != NODE_NAME_FIELD:
                raise FieldError(f"{where}.key={fields.show(key)}: only {NODE_NAME_FIELD} may be matched as a field")
            operator = Operator(fields.one_of(entry, "operator", f"{where}.operator", tuple(o.value for o in Operator)))
            values = tuple(
                fields.checked_text(value, f"{where}.values")
                for value in fields.sequence(entry, "values", f"{where}.values")
            )
            if operator in (Operator.GT, Operator.LT) and (len(values) != 1 or not values[0].lstrip("-").isdecimal()):
                raise FieldError(f"{where}.values must hold one integer for {operator.value}")
            requirements.append(Requirement(key, operator, values, on_field))
    return Term(tuple(requirements))


def pod_view(obj: Any) -> PodView:
    return converted(obj, _pod)


def _pod(obj: Json) -> PodView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    status = fields.mapping(obj, "status", "status")
    key = key_of(obj, namespaced=True)
    namespace, name = key.split("/", 1)
    fields.dns_subdomain(name, "metadata.name")
    labels = fields.mapping(meta, "labels", "metadata.labels")
    node_name = spec.get("nodeName")
    scheduler_name = spec.get("schedulerName")
    return PodView(
        namespace=intern(namespace),
        name=name,
        uid=fields.text(meta, "uid", "metadata.uid"),
        requests=shared(requests_of(spec, "spec.")),
        scheduler_name=intern(fields.dns_subdomain(scheduler_name, "spec.schedulerName"))
        if scheduler_name
        else "default-scheduler",
        node_name=intern(fields.dns_subdomain(node_name, "spec.nodeName")) if node_name else "",
        phase=intern(fields.phase(status, "phase", "status.phase")),
        terminating=bool(fields.timestamp(meta.get("deletionTimestamp"), "metadata.deletionTimestamp")),
        priority=fields.integer(spec, "priority", "spec.priority"),
        preemption_policy=fields.one_of(spec, "preemptionPolicy", "spec.preemptionPolicy", PREEMPTION_POLICIES),
        group=intern(_group_of(namespace, labels, spec)),
        group_in_spec=bool(fields.mapping(spec, "schedulingGroup", "spec.schedulingGroup").get("podGroupName")),
        job=intern(_job_of(namespace, meta, labels)),
        role=role_of(_label(labels, REPLICA_TYPE_LABEL)),
        index=_integer_label(labels, REPLICA_INDEX_LABEL, f"label {REPLICA_INDEX_LABEL}"),
        created=created_at(meta),
        node_selector=tuple(sorted(fields.labels(spec, "nodeSelector", "spec.nodeSelector").items())),
        node_affinity=_required_affinity(spec),
        tolerations=_tolerations(spec),
        scheduling_gated=bool(fields.objects(spec, "schedulingGates", "spec.schedulingGates")),
        topology_index=_topology_index(meta),
        scheduled_at=_scheduled_at(status),
        last_checkpoint=_last_checkpoint(meta),
        resource_claims=bool(fields.objects(spec, "resourceClaims", "spec.resourceClaims")),
    )


def _last_checkpoint(meta: Json) -> float:
    """The pod's `tfjob-extender.io/last-checkpoint` (RFC 3339 or seconds since the epoch); 0 when absent or
    not a time: the pod's training code writes it, and a value it got wrong must not hide the pod."""
    value = annotation_of(meta, LAST_CHECKPOINT_ANNOTATION)
    if value is None:
        return 0.0
    for read in (fields.timestamp, fields.seconds_text):
        try:
            return float(read(value, f"annotation {LAST_CHECKPOINT_ANNOTATION}"))
        except FieldError:
            continue
    return 0.0


def _scheduled_at(status: Json) -> float:
    """When the pod was bound: its `PodScheduled` condition's transition time (0 when not scheduled)."""
    for index, condition in enumerate(fields.objects(status, "conditions", "status.conditions")):
        path = f"status.conditions[{index}]"
        if fields.text(condition, "type", f"{path}.type") == "PodScheduled" and (
            fields.text(condition, "status", f"{path}.status") == "True"
        ):
            return fields.timestamp(condition.get("lastTransitionTime"), f"{path}.lastTransitionTime")
    return 0.0


def _label(labels: Json, key: str) -> str:
    return fields.label_value(labels.get(key) or "", f"label {key}")


def _integer_label(labels: Json, key: str, path: str) -> int:
    value = labels.get(key)
    return 0 if value is None else fields.integer_text(value, path, bounds=NON_NEGATIVE)


def _topology_index(meta: Json) -> int | None:
    value = annotation_of(meta, NETWORK_TOPOLOGY_INDEX_ANNOTATION)
    if value is None:
        return None
    return fields.integer_text(value, f"annotation {NETWORK_TOPOLOGY_INDEX_ANNOTATION}")


def _group_of(namespace: str, labels: Json, spec: Json) -> str:
    """The pod's PodGroup: the one its `spec.schedulingGroup` names (kube-scheduler gates the pod by that
    one), else the one a PodGroup label names."""
    scheduling_group = fields.mapping(spec, "schedulingGroup", "spec.schedulingGroup").get("podGroupName")
    if scheduling_group:
        return f"{namespace}/{fields.path_segment(scheduling_group, 'spec.schedulingGroup.podGroupName')}"
    for label in (POD_GROUP_LABEL, *LEGACY_POD_GROUP_LABELS):
        if labels.get(label):
            return f"{namespace}/{_label(labels, label)}"
    return ""


def _owner_job(namespace: str, meta: Json) -> str:
    """The TFJob among the object's owner references (`namespace/name`), or empty."""
    for index, owner in enumerate(fields.objects(meta, "ownerReferences", "metadata.ownerReferences")):
        path = f"metadata.ownerReferences[{index}]"
        if fields.text(owner, "kind", f"{path}.kind") == TFJOB_KIND:
            return f"{namespace}/{fields.path_segment(owner.get('name'), f'{path}.name')}"
    return ""


def _job_of(namespace: str, meta: Json, labels: Json) -> str:
    for index, owner in enumerate(fields.objects(meta, "ownerReferences", "metadata.ownerReferences")):
        path = f"metadata.ownerReferences[{index}]"
        if fields.text(owner, "kind", f"{path}.kind") == TFJOB_KIND and fields.flag(owner, "controller", path):
            return f"{namespace}/{fields.path_segment(owner.get('name'), f'{path}.name')}"
    job = _label(labels, JOB_NAME_LABEL)
    return f"{namespace}/{job}" if job else ""


def group_view(obj: Any, api_group: str) -> GroupView:
    return converted(obj, lambda o: _group(o, api_group))


def _group(obj: Json, api_group: str) -> GroupView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    key = key_of(obj, namespaced=True)
    namespace, name = key.split("/", 1)
    timeout = fields.integer(spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", bounds=NON_NEGATIVE)
    view = GroupView(
        namespace=namespace,
        name=name,
        min_member=max(1, fields.integer(spec, "minMember", "spec.minMember", default=1, bounds=NON_NEGATIVE)),
        api_group=api_group,
        schedule_timeout_s=float(timeout) if timeout else None,
        gang_group=gang_annotations.gang_group(key, annotation_of(meta, GANG_GROUPS_ANNOTATION)),
        min_resources=resources_of(fields.mapping(spec, "minResources", "spec.minResources"), "spec.minResources"),
        created=created_at(meta),
        owner_job=_owner_job(namespace, meta),
        gather=gang_annotations.gather_rules(annotation_of(meta, NETWORK_TOPOLOGY_SPEC_ANNOTATION)),
        **gang_annotations.gang_plan(annotation_of(meta, GANG_PLAN_ANNOTATION)),
        **gang_annotations.announced_preemption(annotation_of(meta, PREEMPTION_ANNOTATION), key),
    )
    if api_group != workload_api.API_GROUP:
        return view
    policy = fields.mapping(spec, "schedulingPolicy", "spec.schedulingPolicy")
    if policy.get("gang") is not None:
        gang = fields.mapping(policy, "gang", "spec.schedulingPolicy.gang")
        fields.integer(gang, "minCount", "spec.schedulingPolicy.gang.minCount", default=1, bounds=NON_NEGATIVE)
    try:
        return workload_api.group_view(obj, view)
    except ValueError as error:
        raise FieldError(str(error)) from None


def priority_class_value(obj: Any) -> int:
    return converted(obj, lambda o: fields.integer(o, "value", "value"))
