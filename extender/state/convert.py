"""Raw Kubernetes JSON → the policy's frozen views. The only module that knows label keys and field paths.

Conversion is total over what the API server validates: quantities, names and timestamps it accepts are
read exactly; anything else raises `ConversionError` with the object's identity and the field at fault,
so a bad object in a snapshot file is reported precisely and a bad watch event is skipped, not fatal.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from extender.policy.model import (
    CLUSTER_LAYER,
    NODE_LAYER,
    Gather,
    GatherRule,
    GroupView,
    JobView,
    NetworkLayer,
    NodeView,
    PodView,
    Role,
)
from extender.policy.resources import PODS, QuantityError, Resources
from extender.state import workload_api

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""training-operator and scheduler-plugins (≥ v0.25) mark gang members with this label."""
LEGACY_POD_GROUP_LABELS = ("pod-group.scheduling.sigs.k8s.io", "pod-group.scheduling.sigs.k8s.io/name")
"""The `scheduling.sigs.k8s.io` dialect's labels, as Koordinator reads them."""
GANG_GROUPS_ANNOTATION = "gang.scheduling.koordinator.sh/groups"
NETWORK_TOPOLOGY_SPEC_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-spec"
"""On a PodGroup: `{"gatherStrategy": [{"layer": ..., "strategy": "PreferGather" | "MustGather"}]}`."""
NETWORK_TOPOLOGY_INDEX_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-index"
"""On a gang member: its rank in the gang's collective operations (an integer)."""
NETWORK_TOPOLOGY_NAME = "default"
"""The one ClusterNetworkTopology object that configures the layers."""
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
ANNOTATION_PREFIX = "tfjob-extender.io/"
MIN_WORKERS_ANNOTATION = ANNOTATION_PREFIX + "min-workers"
"""On a TFJob: the fewest workers it may be scaled in to (default: its Worker replicas)."""
MAX_WORKERS_ANNOTATION = ANNOTATION_PREFIX + "max-workers"
"""On a TFJob: the most workers it may be scaled out to (default: its Worker replicas)."""
SCALED_AT_ANNOTATION = ANNOTATION_PREFIX + "scaled-at"
"""Written by the scaler with each worker-count change: seconds since the epoch."""
CONSOLIDATED_AT_ANNOTATION = ANNOTATION_PREFIX + "consolidated-at"
"""Written by the scaler with each worker migration: seconds since the epoch."""
WORKER_PLAN_ANNOTATION = ANNOTATION_PREFIX + "worker-plan"
GANG_PLAN_ANNOTATION = ANNOTATION_PREFIX + "plan"
"""Written on a PodGroup by whichever process reserved its gang's plan:
`{"expiresAt": <epoch s>, "pods": {"<pod name>": "<node>", ...}}`. Every extender imports it into its
ledger, so a plan survives a restart and the preemption loop may run in a process of its own."""
"""Written by the scaler: `{"expiresAt": <epoch s>, "pods": {"<pod name>": "<node>", ...}}`."""
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
TFJOB_KIND = "TFJob"

Json = Mapping[str, Any]
N = TypeVar("N", int, float)


class ConversionError(ValueError):
    """An object the model cannot read; the message names the object and the field."""


def identity(obj: Json) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = meta.get("name", "<unnamed>")
    return f"{obj.get('kind', 'object')} {namespace}/{name}" if namespace else f"{obj.get('kind', 'object')} {name}"


def object_key(obj: Json, *, namespaced: bool = False) -> str:
    """`namespace/name`, or the plain name; a namespaced object without a namespace is in `default`."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ConversionError(f"{identity(obj)}: metadata.name is missing")
    namespace = meta.get("namespace") or ("default" if namespaced else None)
    return f"{namespace}/{name}" if namespace else str(name)


def pod_key(obj: Json) -> str:
    """`namespace/name` of a pod, as `PodView.key` spells it."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def timestamp(value: str | datetime | None) -> float:
    """Seconds since the epoch from an RFC 3339 timestamp; 0 when absent."""
    if not value:
        return 0.0
    if isinstance(value, datetime):  # YAML reads an unquoted timestamp as a datetime
        return value.timestamp()
    return datetime.fromisoformat(value).timestamp()


def _created(obj: Json) -> float:
    value = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return timestamp(value)
    except (TypeError, ValueError) as error:
        raise ConversionError(f"{identity(obj)}: metadata.creationTimestamp={value!r} is not a timestamp") from error


def _number(obj: Json, value: Any, field: str, parse: Callable[[Any], N]) -> N:
    try:
        return parse(value)
    except (TypeError, ValueError) as error:
        raise ConversionError(f"{identity(obj)}: {field}={value!r} is not a number") from error


def _resources(obj: Json, quantities: Mapping[str, Any] | None, field: str) -> Resources:
    try:
        return Resources.parse(quantities)
    except QuantityError as error:
        raise ConversionError(f"{identity(obj)}: {field}: {error}") from error


def node_view(obj: Json) -> NodeView:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ready = next((c.get("status") == "True" for c in status.get("conditions") or [] if c.get("type") == "Ready"), True)
    return NodeView(
        name=object_key(obj),
        allocatable=_resources(obj, status.get("allocatable") or status.get("capacity"), "status.allocatable"),
        labels=dict(meta.get("labels") or {}),
        schedulable=ready and not spec.get("unschedulable", False),
    )


_SHARED_REQUESTS: dict[Resources, Resources] = {}
_SHARED_REQUESTS_LIMIT = 65536
"""Distinct request bags shared across pods before the memo starts afresh."""


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
    return sys.intern(text) if isinstance(text, str) else text


def pod_requests(obj: Json) -> Resources:
    """Effective requests: containers summed (limits standing in for absent requests), at least the
    largest init container, plus the pod overhead and one `pods` slot."""
    spec = obj.get("spec") or {}
    containers = Resources({PODS: 1})
    for index, container in enumerate(spec.get("containers") or []):
        containers = containers + _container_requests(obj, container, f"spec.containers[{index}]")
    for index, container in enumerate(spec.get("initContainers") or []):
        init = _container_requests(obj, container, f"spec.initContainers[{index}]")
        names = containers.names() | init.names()
        containers = Resources({name: max(containers.get(name), init.get(name)) for name in names})
    return containers + _resources(obj, spec.get("overhead"), "spec.overhead")


def _container_requests(obj: Json, container: Json, field: str) -> Resources:
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    return _resources(obj, merged, f"{field}.resources")


def pod_view(obj: Json) -> PodView:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels: Mapping[str, str] = meta.get("labels") or {}
    namespace = meta.get("namespace") or "default"
    role = _role(obj, labels.get(REPLICA_TYPE_LABEL, ""))
    return PodView(
        namespace=intern(namespace),
        name=str(meta.get("name") or object_key(obj)),
        uid=str(meta.get("uid") or ""),
        requests=shared(pod_requests(obj)),
        scheduler_name=intern(spec.get("schedulerName") or "default-scheduler"),
        node_name=intern(spec.get("nodeName") or ""),
        phase=intern(status.get("phase") or "Pending"),
        terminating=bool(meta.get("deletionTimestamp")),
        priority=_number(obj, spec.get("priority") or 0, "spec.priority", int),
        preemption_policy=intern(spec.get("preemptionPolicy") or "PreemptLowerPriority"),
        group=intern(_group_of(namespace, labels, spec)),
        job=intern(_job_of(namespace, meta, labels)),
        role=role,
        index=_index(obj, labels.get(REPLICA_INDEX_LABEL)),
        created=_created(obj),
        node_selector=tuple(sorted((spec.get("nodeSelector") or {}).items())),
        topology_index=_topology_index(obj, (meta.get("annotations") or {}).get(NETWORK_TOPOLOGY_INDEX_ANNOTATION)),
        scheduled_at=_scheduled_at(obj, status),
    )


def _scheduled_at(obj: Json, status: Json) -> float:
    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            value = condition.get("lastTransitionTime")
            try:
                return timestamp(value)
            except (TypeError, ValueError) as error:
                raise ConversionError(
                    f"{identity(obj)}: PodScheduled lastTransitionTime={value!r} is not a timestamp"
                ) from error
    return 0.0


def _topology_index(obj: Json, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError as error:
        raise ConversionError(
            f"{identity(obj)}: annotation {NETWORK_TOPOLOGY_INDEX_ANNOTATION}={value!r} is not an integer"
        ) from error


def _role(obj: Json, value: str) -> Role:
    if not value:
        return Role.NONE
    try:
        return Role(value.lower())
    except ValueError:
        return Role.NONE


def _index(obj: Json, value: str | None) -> int:
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError as error:
        raise ConversionError(f"{identity(obj)}: label {REPLICA_INDEX_LABEL}={value!r} is not an integer") from error


def _group_of(namespace: str, labels: Mapping[str, str], spec: Json) -> str:
    """The pod's PodGroup: the one its `spec.schedulingGroup` names (kube-scheduler gates the pod by that
    one), else the one a PodGroup label names."""
    scheduling_group = workload_api.scheduling_group_of(spec)
    if scheduling_group:
        return f"{namespace}/{scheduling_group}"
    for label in (POD_GROUP_LABEL, *LEGACY_POD_GROUP_LABELS):
        if labels.get(label):
            return f"{namespace}/{labels[label]}"
    return ""


def _job_of(namespace: str, meta: Json, labels: Mapping[str, str]) -> str:
    for owner in meta.get("ownerReferences") or []:
        if owner.get("kind") == TFJOB_KIND and owner.get("controller"):
            return f"{namespace}/{owner.get('name')}"
    job = labels.get(JOB_NAME_LABEL)
    return f"{namespace}/{job}" if job else ""


def group_view(obj: Json, api_group: str) -> GroupView:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    namespace = meta.get("namespace") or "default"
    key = f"{namespace}/{meta.get('name')}"
    timeout = spec.get("scheduleTimeoutSeconds")
    annotations = meta.get("annotations") or {}
    view = GroupView(
        namespace=namespace,
        name=str(meta.get("name") or object_key(obj)),
        min_member=max(1, _number(obj, spec.get("minMember") or 1, "spec.minMember", int)),
        api_group=api_group,
        schedule_timeout_s=_number(obj, timeout, "spec.scheduleTimeoutSeconds", float) if timeout else None,
        gang_group=_gang_group(obj, key, annotations.get(GANG_GROUPS_ANNOTATION)),
        min_resources=_resources(obj, spec.get("minResources"), "spec.minResources"),
        created=_created(obj),
        gather=_gather_rules(obj, annotations.get(NETWORK_TOPOLOGY_SPEC_ANNOTATION)),
        **_gang_plan(annotations.get(GANG_PLAN_ANNOTATION)),
    )
    if api_group != workload_api.API_GROUP:
        return view
    try:
        return workload_api.group_view(obj, view)
    except ValueError as error:
        raise ConversionError(f"{identity(obj)}: {error}") from error


def _gather_rules(obj: Json, annotation: str | None) -> tuple[GatherRule, ...]:
    if not annotation:
        return ()
    where = f"{identity(obj)}: annotation {NETWORK_TOPOLOGY_SPEC_ANNOTATION}"
    try:
        spec = json.loads(annotation)
    except json.JSONDecodeError as error:
        raise ConversionError(f"{where} is not JSON") from error
    rules = spec.get("gatherStrategy") if isinstance(spec, dict) else None
    if not isinstance(rules, list):
        raise ConversionError(f'{where} must be an object with a "gatherStrategy" list')
    strategies = {gather.value.lower(): gather for gather in Gather}
    parsed = []
    for rule in rules:
        layer = rule.get("layer") if isinstance(rule, dict) else None
        strategy = strategies.get(str(rule.get("strategy", "")).lower()) if isinstance(rule, dict) else None
        if not isinstance(layer, str) or not layer or strategy is None:
            raise ConversionError(
                f'{where}: each gatherStrategy entry needs a "layer" and a "strategy" of PreferGather or MustGather'
            )
        parsed.append(GatherRule(layer, strategy))
    return tuple(parsed)


def _gang_group(obj: Json, key: str, annotation: str | None) -> tuple[str, ...]:
    if not annotation:
        return ()
    try:
        members = json.loads(annotation)
    except json.JSONDecodeError as error:
        raise ConversionError(f"{identity(obj)}: annotation {GANG_GROUPS_ANNOTATION} is not JSON") from error
    if not isinstance(members, list) or not all(isinstance(m, str) and "/" in m for m in members):
        raise ConversionError(
            f'{identity(obj)}: annotation {GANG_GROUPS_ANNOTATION} must be a JSON list of "namespace/name"'
        )
    return tuple(sorted({key, *members}))


def job_view(obj: Json) -> JobView:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    replicas: dict[Role, int] = {}
    role_requests: dict[Role, Resources] = {}
    priority_class = ((spec.get("runPolicy") or {}).get("schedulingPolicy") or {}).get("priorityClass") or ""
    for replica_type, replica_spec in (spec.get("tfReplicaSpecs") or {}).items():
        role = _role(obj, replica_type)
        count = (replica_spec or {}).get("replicas")
        field = f"spec.tfReplicaSpecs.{replica_type}.replicas"
        replicas[role] = replicas.get(role, 0) + (1 if count is None else _number(obj, count, field, int))
        template_spec = ((replica_spec or {}).get("template") or {}).get("spec") or {}
        priority_class = priority_class or template_spec.get("priorityClassName") or ""
        role_requests[role] = pod_requests({"kind": obj.get("kind"), "metadata": meta, "spec": template_spec})
    workers = replicas.get(Role.WORKER, 0)
    annotations: Mapping[str, str] = meta.get("annotations") or {}
    min_workers = _workers(obj, annotations, MIN_WORKERS_ANNOTATION, workers)
    max_workers = max(min_workers, _workers(obj, annotations, MAX_WORKERS_ANNOTATION, workers))
    return JobView(
        namespace=meta.get("namespace") or "default",
        name=str(meta.get("name") or object_key(obj)),
        uid=str(meta.get("uid") or ""),
        replicas=replicas,
        enable_dynamic_worker=bool(spec.get("enableDynamicWorker", False)),
        priority_class=priority_class,
        created=_created(obj),
        role_requests=role_requests,
        min_workers=min_workers,
        max_workers=max_workers,
        scaled_at=_number(obj, annotations.get(SCALED_AT_ANNOTATION, 0), SCALED_AT_ANNOTATION, float),
        consolidated_at=_number(obj, annotations.get(CONSOLIDATED_AT_ANNOTATION, 0), CONSOLIDATED_AT_ANNOTATION, float),
        **_plan(annotations.get(WORKER_PLAN_ANNOTATION), "worker_plan", "worker_plan_expires"),
    )


def plan_annotation(plan: Mapping[str, str], expires_at: float, uids: Mapping[str, str] | None = None) -> str:
    """The value of a plan annotation for pod name → node, lapsing at `expires_at`: on a TFJob
    (`tfjob-extender.io/worker-plan`) for pods that do not exist yet, on a PodGroup
    (`tfjob-extender.io/plan`) for existing pods, named with their `uids` too, so a pod recreated under
    the same name is not held to an old plan."""
    value: dict[str, Any] = {"expiresAt": round(expires_at, 3), "pods": dict(sorted(plan.items()))}
    if uids is not None:
        value["uids"] = dict(sorted(uids.items()))
    return json.dumps(value, separators=(",", ":"))


def _gang_plan(value: str | None) -> dict[str, Any]:
    """A PodGroup plan's fields: only the entries that name their pod's uid."""
    plan = _plan(value, "plan", "plan_expires")
    if not plan:
        return {}
    try:
        uids = json.loads(str(value)).get("uids") or {}
        entries = tuple((name, node, str(uids[name])) for name, node in plan["plan"] if name in uids)
    except (ValueError, TypeError, AttributeError):
        return {}
    return {"plan": entries, "plan_expires": plan["plan_expires"]}


def _plan(value: str | None, pods_field: str, expiry_field: str) -> dict[str, Any]:
    """A plan annotation's fields for a view; a plan that cannot be read is no plan (it only steers and
    holds room, it is never a reason to drop the object from the model)."""
    if not value:
        return {}
    try:
        parsed = json.loads(value)
        pods = tuple(sorted((str(name), str(node)) for name, node in parsed["pods"].items()))
        expires = float(parsed["expiresAt"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}
    return {pods_field: pods, expiry_field: expires} if math.isfinite(expires) else {}


def _workers(obj: Json, annotations: Mapping[str, str], annotation: str, default: int) -> int:
    value = annotations.get(annotation)
    if value is None:
        return default
    count = _number(obj, value, f"annotation {annotation}", int)
    if count < 0:
        raise ConversionError(f"{identity(obj)}: annotation {annotation} must not be negative")
    return count


def priority_class_value(obj: Json) -> int:
    return _number(obj, obj.get("value") or 0, "value", int)


def network_layers(obj: Json) -> tuple[NetworkLayer, ...]:
    """The layers of a ClusterNetworkTopology, top first, without the built-in cluster and node layers.

    `spec.networkTopologySpec` lists layers with their parent; the chain is followed from the node layer
    (or, when that is not listed, the one layer no other names as parent) up to the top.
    """
    where = f"{identity(obj)}: spec.networkTopologySpec"
    entries = (obj.get("spec") or {}).get("networkTopologySpec")
    if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get("topologyLayer") for e in entries):
        raise ConversionError(f"{where} must be a list of entries with a topologyLayer")
    parents = {str(e["topologyLayer"]): str(e.get("parentTopologyLayer") or "") for e in entries}
    keys = {str(e["topologyLayer"]): tuple(str(k) for k in e.get("labelKey") or []) for e in entries}
    if len(parents) != len(entries):
        raise ConversionError(f"{where} lists a layer twice")
    bottoms = [NODE_LAYER] if NODE_LAYER in parents else sorted(set(parents) - set(parents.values()))
    if len(bottoms) != 1:
        raise ConversionError(f"{where} must form one chain of layers down to {NODE_LAYER}")
    chain: list[str] = []
    layer = parents[bottoms[0]] if bottoms[0] == NODE_LAYER else bottoms[0]
    while layer and layer != CLUSTER_LAYER:
        if layer in chain or layer not in parents:
            raise ConversionError(f"{where}: layer {layer!r} is {'in a cycle' if layer in chain else 'not defined'}")
        if not keys[layer]:
            raise ConversionError(f"{where}: layer {layer!r} has no labelKey")
        chain.append(layer)
        layer = parents[layer]
    stray = set(parents) - set(chain) - {NODE_LAYER}
    if stray:
        raise ConversionError(f"{where}: layers {sorted(stray)} are not on the chain down to {NODE_LAYER}")
    return tuple(NetworkLayer(name, keys[name]) for name in reversed(chain))
