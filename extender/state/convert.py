"""Raw Kubernetes JSON → the policy's frozen views. The only module that knows label keys and field paths.

Conversion is total: whatever JSON it is given, it either returns a view whose every field has the type
and range the model expects, or raises `ConversionError` with the object's identity and the field at
fault. Every field read is checked (`fields`): names by Kubernetes' length and character rules, phases
and policies from their known sets, integers within int32, quantities bounded (`resources`), JSON
annotations parsed with their contents checked (`gang_annotations`). A bad object in a snapshot file is
reported precisely; a bad watch event or request pod is refused, never stored half-valid.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from extender.policy.model import (
    CLUSTER_LAYER,
    NODE_LAYER,
    GroupView,
    JobView,
    NetworkLayer,
    NodeView,
    PodView,
    Role,
)
from extender.policy.resources import PODS, QuantityError, Resources
from extender.state import fields, gang_annotations, workload_api
from extender.state.fields import FieldError, Json
from extender.state.gang_annotations import ANNOTATION_PREFIX as ANNOTATION_PREFIX
from extender.state.gang_annotations import GANG_GROUPS_ANNOTATION as GANG_GROUPS_ANNOTATION
from extender.state.gang_annotations import GANG_PLAN_ANNOTATION as GANG_PLAN_ANNOTATION
from extender.state.gang_annotations import NETWORK_TOPOLOGY_SPEC_ANNOTATION as NETWORK_TOPOLOGY_SPEC_ANNOTATION
from extender.state.gang_annotations import WORKER_PLAN_ANNOTATION as WORKER_PLAN_ANNOTATION
from extender.state.gang_annotations import plan_annotation as plan_annotation

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""training-operator and scheduler-plugins (≥ v0.25) mark gang members with this label."""
LEGACY_POD_GROUP_LABELS = ("pod-group.scheduling.sigs.k8s.io", "pod-group.scheduling.sigs.k8s.io/name")
"""The `scheduling.sigs.k8s.io` dialect's labels, as Koordinator reads them."""
NETWORK_TOPOLOGY_INDEX_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-index"
"""On a gang member: its rank in the gang's collective operations (an integer)."""
NETWORK_TOPOLOGY_NAME = "default"
"""The one ClusterNetworkTopology object that configures the layers."""
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
MIN_WORKERS_ANNOTATION = ANNOTATION_PREFIX + "min-workers"
"""On a TFJob: the fewest workers it may be scaled in to (default: its Worker replicas)."""
MAX_WORKERS_ANNOTATION = ANNOTATION_PREFIX + "max-workers"
"""On a TFJob: the most workers it may be scaled out to (default: its Worker replicas)."""
SCALED_AT_ANNOTATION = ANNOTATION_PREFIX + "scaled-at"
"""Written by the scaler with each worker-count change: seconds since the epoch."""
CONSOLIDATED_AT_ANNOTATION = ANNOTATION_PREFIX + "consolidated-at"
"""Written by the scaler with each worker migration: seconds since the epoch."""
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
TFJOB_KIND = "TFJob"
RESOURCE_NAMES_MAX = 128
"""Distinct resources one requests / allocatable map may name (each becomes a column of the capacity table)."""
NON_NEGATIVE = (0, fields.INT32[1])
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")

V = TypeVar("V")


class ConversionError(ValueError):
    """An object the model cannot read; the message names the object and the field."""


def identity(obj: Any) -> str:
    """`Kind namespace/name` for messages, from whatever the object holds (never raises)."""
    if not isinstance(obj, dict):
        return f"a {type(obj).__name__}, not an object"
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind, namespace, name = obj.get("kind"), meta.get("namespace"), meta.get("name", "<unnamed>")
    kind = kind if isinstance(kind, str) and kind.isidentifier() and len(kind) <= 63 else "object"
    name = name if isinstance(name, str) and name.isprintable() and len(name) <= 253 else fields.show(name)
    if namespace:
        namespace = namespace if isinstance(namespace, str) and namespace.isprintable() else fields.show(namespace)
        return f"{kind} {namespace[:63]}/{name}"
    return f"{kind} {name}"


def _converted(obj: Any, read: Callable[[Json], V]) -> V:
    """`read(obj)`, any field error becoming a `ConversionError` that names the object."""
    if not isinstance(obj, dict):
        raise ConversionError(f"{identity(obj)}: not an object")
    try:
        return read(obj)
    except FieldError as error:
        raise ConversionError(f"{identity(obj)}: {error}") from None


def object_key(obj: Any, *, namespaced: bool = False) -> str:
    """`namespace/name`, or the plain name; a namespaced object without a namespace is in `default`."""
    return _converted(obj, lambda o: _key(o, namespaced))


def _key(obj: Json, namespaced: bool) -> str:
    meta = fields.mapping(obj, "metadata", "metadata")
    name = meta.get("name")
    if not name:
        raise FieldError("metadata.name is missing")
    fields.path_segment(name, "metadata.name")
    if not namespaced:
        return str(name)
    return f"{fields.dns_label(meta.get('namespace') or 'default', 'metadata.namespace')}/{name}"


def pod_key(obj: Any) -> str:
    """`namespace/name` of a pod, as `PodView.key` spells it; "" for anything that is not a named pod."""
    try:
        return object_key(obj, namespaced=True)
    except ConversionError:
        return ""


def timestamp(value: str | datetime | None) -> float:
    """Seconds since the epoch from an RFC 3339 timestamp; 0 when absent."""
    return fields.timestamp(value, "time")


def _created(meta: Json) -> float:
    return fields.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp")


def _resources(quantities: Json, path: str) -> Resources:
    if len(quantities) > RESOURCE_NAMES_MAX:
        raise FieldError(f"{path} names {len(quantities)} resources (at most {RESOURCE_NAMES_MAX})")
    try:
        return Resources.parse({fields.qualified_name(name, path): value for name, value in quantities.items()})
    except QuantityError as error:
        raise FieldError(f"{path}: {error}") from None


def node_view(obj: Any) -> NodeView:
    return _converted(obj, _node)


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
        name=intern(fields.dns_subdomain(_key(obj, namespaced=False), "metadata.name")),
        allocatable=_resources(allocatable, "status.allocatable"),
        labels=fields.labels(meta, "labels", "metadata.labels"),
        schedulable=ready and not fields.flag(spec, "unschedulable", "spec.unschedulable"),
    )


_SHARED_REQUESTS: dict[Resources, Resources] = {}
_SHARED_REQUESTS_LIMIT = 4096
"""Distinct request bags shared across pods before the memo starts afresh (a cluster has a few hundred
shapes; a bound this low keeps what odd requests can leave behind to a few hundred KiB)."""


def shared(requests: Resources) -> Resources:
    """One object per distinct request bag: the pods of a cluster come in a few shapes, and a model of
    100 000 pods keeps a few hundred bags instead of 100 000 (Resources are immutable)."""
    known = _SHARED_REQUESTS.get(requests)
    if known is not None:
        return known
    if len(_SHARED_REQUESTS) >= _SHARED_REQUESTS_LIMIT:
        _SHARED_REQUESTS.clear()
    _SHARED_REQUESTS[requests] = requests
    return requests


def intern(text: str) -> str:
    """Names many objects repeat (namespaces, node names, phases, group and job keys) kept once."""
    return sys.intern(text)


def _requests(spec: Json, path: str) -> Resources:
    """Effective requests: containers summed (limits standing in for absent requests), at least the
    largest init container, plus the pod overhead and one `pods` slot."""
    summed: dict[str, int] = {PODS: 1}
    for index, container in enumerate(fields.objects(spec, "containers", f"{path}containers")):
        for name, value in _container_requests(container, f"{path}containers[{index}]").items():
            summed[name] = summed.get(name, 0) + value
    for index, container in enumerate(fields.objects(spec, "initContainers", f"{path}initContainers")):
        for name, value in _container_requests(container, f"{path}initContainers[{index}]").items():
            summed[name] = max(summed.get(name, 0), value)
    if len(summed) > RESOURCE_NAMES_MAX:
        raise FieldError(f"{path}containers name {len(summed)} resources (at most {RESOURCE_NAMES_MAX})")
    return Resources(summed) + _resources(fields.mapping(spec, "overhead", f"{path}overhead"), f"{path}overhead")


def _container_requests(container: Json, path: str) -> Resources:
    resources = fields.mapping(container, "resources", f"{path}.resources")
    merged = dict(fields.mapping(resources, "limits", f"{path}.resources.limits"))
    merged.update(fields.mapping(resources, "requests", f"{path}.resources.requests"))
    return _resources(merged, f"{path}.resources")


def pod_view(obj: Any) -> PodView:
    return _converted(obj, _pod)


def _pod(obj: Json) -> PodView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    status = fields.mapping(obj, "status", "status")
    key = _key(obj, namespaced=True)
    namespace, name = key.split("/", 1)
    fields.dns_subdomain(name, "metadata.name")
    labels = fields.mapping(meta, "labels", "metadata.labels")
    node_name = spec.get("nodeName")
    scheduler_name = spec.get("schedulerName")
    return PodView(
        namespace=intern(namespace),
        name=name,
        uid=fields.text(meta, "uid", "metadata.uid"),
        requests=shared(_requests(spec, "spec.")),
        scheduler_name=intern(fields.dns_subdomain(scheduler_name, "spec.schedulerName"))
        if scheduler_name
        else "default-scheduler",
        node_name=intern(fields.dns_subdomain(node_name, "spec.nodeName")) if node_name else "",
        phase=intern(fields.phase(status, "phase", "status.phase")),
        terminating=bool(fields.timestamp(meta.get("deletionTimestamp"), "metadata.deletionTimestamp")),
        priority=fields.integer(spec, "priority", "spec.priority"),
        preemption_policy=fields.one_of(spec, "preemptionPolicy", "spec.preemptionPolicy", PREEMPTION_POLICIES),
        group=intern(_group_of(namespace, labels, spec)),
        job=intern(_job_of(namespace, meta, labels)),
        role=_role(_label(labels, REPLICA_TYPE_LABEL)),
        index=_integer_label(labels, REPLICA_INDEX_LABEL, f"label {REPLICA_INDEX_LABEL}"),
        created=_created(meta),
        node_selector=tuple(sorted(fields.labels(spec, "nodeSelector", "spec.nodeSelector").items())),
        topology_index=_topology_index(meta),
        scheduled_at=_scheduled_at(status),
    )


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


def _annotation(meta: Json, key: str) -> Any:
    return fields.mapping(meta, "annotations", "metadata.annotations").get(key)


def _topology_index(meta: Json) -> int | None:
    value = _annotation(meta, NETWORK_TOPOLOGY_INDEX_ANNOTATION)
    if value is None:
        return None
    return fields.integer_text(value, f"annotation {NETWORK_TOPOLOGY_INDEX_ANNOTATION}")


def _role(value: str) -> Role:
    if not value:
        return Role.NONE
    try:
        return Role(value.lower())
    except ValueError:
        return Role.NONE


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


def _job_of(namespace: str, meta: Json, labels: Json) -> str:
    for index, owner in enumerate(fields.objects(meta, "ownerReferences", "metadata.ownerReferences")):
        path = f"metadata.ownerReferences[{index}]"
        if fields.text(owner, "kind", f"{path}.kind") == TFJOB_KIND and fields.flag(owner, "controller", path):
            return f"{namespace}/{fields.path_segment(owner.get('name'), f'{path}.name')}"
    job = _label(labels, JOB_NAME_LABEL)
    return f"{namespace}/{job}" if job else ""


def group_view(obj: Any, api_group: str) -> GroupView:
    return _converted(obj, lambda o: _group(o, api_group))


def _group(obj: Json, api_group: str) -> GroupView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    key = _key(obj, namespaced=True)
    namespace, name = key.split("/", 1)
    timeout = fields.integer(spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", bounds=NON_NEGATIVE)
    view = GroupView(
        namespace=namespace,
        name=name,
        min_member=max(1, fields.integer(spec, "minMember", "spec.minMember", default=1, bounds=NON_NEGATIVE)),
        api_group=api_group,
        schedule_timeout_s=float(timeout) if timeout else None,
        gang_group=gang_annotations.gang_group(key, _annotation(meta, GANG_GROUPS_ANNOTATION)),
        min_resources=_resources(fields.mapping(spec, "minResources", "spec.minResources"), "spec.minResources"),
        created=_created(meta),
        gather=gang_annotations.gather_rules(_annotation(meta, NETWORK_TOPOLOGY_SPEC_ANNOTATION)),
        **gang_annotations.gang_plan(_annotation(meta, GANG_PLAN_ANNOTATION)),
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


def job_view(obj: Any) -> JobView:
    return _converted(obj, _job)


def _job(obj: Json) -> JobView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    key = _key(obj, namespaced=True)
    namespace, name = key.split("/", 1)
    replicas: dict[Role, int] = {}
    role_requests: dict[Role, Resources] = {}
    policy = fields.mapping(fields.mapping(spec, "runPolicy", "spec.runPolicy"), "schedulingPolicy", "spec.runPolicy")
    priority_class = _priority_class_name(policy, "priorityClass", "spec.runPolicy.schedulingPolicy.priorityClass")
    for replica_type, replica_spec in fields.mapping(spec, "tfReplicaSpecs", "spec.tfReplicaSpecs").items():
        path = f"spec.tfReplicaSpecs.{fields.checked_text(replica_type, 'spec.tfReplicaSpecs', max_chars=63)}"
        replica_spec = replica_spec if replica_spec is not None else {}
        if not isinstance(replica_spec, dict):
            raise FieldError(f"{path}={fields.show(replica_spec)} is not an object")
        role = _role(replica_type)
        count = fields.integer(replica_spec, "replicas", f"{path}.replicas", default=1, bounds=NON_NEGATIVE)
        replicas[role] = replicas.get(role, 0) + count
        template = fields.mapping(fields.mapping(replica_spec, "template", f"{path}.template"), "spec", path)
        priority_class = priority_class or _priority_class_name(
            template, "priorityClassName", f"{path}.template.spec.priorityClassName"
        )
        role_requests[role] = _requests(template, f"{path}.template.spec.")
    workers = replicas.get(Role.WORKER, 0)
    min_workers = _workers(meta, MIN_WORKERS_ANNOTATION, workers)
    max_workers = max(min_workers, _workers(meta, MAX_WORKERS_ANNOTATION, workers))
    return JobView(
        namespace=namespace,
        name=name,
        uid=fields.text(meta, "uid", "metadata.uid"),
        replicas=replicas,
        enable_dynamic_worker=fields.flag(spec, "enableDynamicWorker", "spec.enableDynamicWorker"),
        priority_class=priority_class,
        created=_created(meta),
        role_requests=role_requests,
        min_workers=min_workers,
        max_workers=max_workers,
        scaled_at=_seconds(meta, SCALED_AT_ANNOTATION),
        consolidated_at=_seconds(meta, CONSOLIDATED_AT_ANNOTATION),
        **gang_annotations.worker_plan(_annotation(meta, WORKER_PLAN_ANNOTATION), "worker_plan", "worker_plan_expires"),
    )


def _priority_class_name(parent: Json, key: str, path: str) -> str:
    value = parent.get(key)
    return fields.dns_subdomain(value, path) if value else ""


def _seconds(meta: Json, annotation: str) -> float:
    value = _annotation(meta, annotation)
    return 0.0 if value is None else fields.seconds_text(value, f"annotation {annotation}")


def _workers(meta: Json, annotation: str, default: int) -> int:
    value = _annotation(meta, annotation)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().startswith("-") and value.strip().lstrip("-").isdecimal():
        raise FieldError(f"annotation {annotation} must not be negative")
    return fields.integer_text(value, f"annotation {annotation}", bounds=NON_NEGATIVE)


def priority_class_value(obj: Any) -> int:
    return _converted(obj, lambda o: fields.integer(o, "value", "value"))


def network_layers(obj: Any) -> tuple[NetworkLayer, ...]:
    """The layers of a ClusterNetworkTopology, top first, without the built-in cluster and node layers.

    `spec.networkTopologySpec` lists layers with their parent; the chain is followed from the node layer
    (or, when that is not listed, the one layer no other names as parent) up to the top.
    """
    return _converted(obj, _layers)


def _layers(obj: Json) -> tuple[NetworkLayer, ...]:
    where = "spec.networkTopologySpec"
    entries = fields.mapping(obj, "spec", "spec").get("networkTopologySpec")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get("topologyLayer") for e in entries):
        raise FieldError(f"{where} must be a list of entries with a topologyLayer")
    parents: dict[str, str] = {}
    keys: dict[str, tuple[str, ...]] = {}
    for index, entry in enumerate(entries):
        path = f"{where}[{index}]"
        layer = fields.text(
            entry, "topologyLayer", f"{path}.topologyLayer", max_chars=gang_annotations.LAYER_NAME_MAX_CHARS
        )
        parents[layer] = fields.text(
            entry, "parentTopologyLayer", f"{path}.parentTopologyLayer", max_chars=gang_annotations.LAYER_NAME_MAX_CHARS
        )
        label_keys = fields.sequence(entry, "labelKey", f"{path}.labelKey")
        keys[layer] = tuple(fields.qualified_name(key, f"{path}.labelKey") for key in label_keys)
    if len(parents) != len(entries):
        raise FieldError(f"{where} lists a layer twice")
    bottoms = [NODE_LAYER] if NODE_LAYER in parents else sorted(set(parents) - set(parents.values()))
    if len(bottoms) != 1:
        raise FieldError(f"{where} must form one chain of layers down to {NODE_LAYER}")
    chain: list[str] = []
    layer = parents[bottoms[0]] if bottoms[0] == NODE_LAYER else bottoms[0]
    while layer and layer != CLUSTER_LAYER:
        if layer in chain or layer not in parents:
            raise FieldError(f"{where}: layer {layer!r} is {'in a cycle' if layer in chain else 'not defined'}")
        if not keys[layer]:
            raise FieldError(f"{where}: layer {layer!r} has no labelKey")
        chain.append(layer)
        layer = parents[layer]
    stray = set(parents) - set(chain) - {NODE_LAYER}
    if stray:
        raise FieldError(f"{where}: layers {sorted(stray)} are not on the chain down to {NODE_LAYER}")
    return tuple(NetworkLayer(name, keys[name]) for name in reversed(chain))


def requests_of(quantities: Mapping[str, Any], path: str) -> Resources:
    """A requests map read like a pod's (`path` names it in errors); raises `ConversionError`."""
    try:
        return _resources(quantities, path)
    except FieldError as error:
        raise ConversionError(str(error)) from None
