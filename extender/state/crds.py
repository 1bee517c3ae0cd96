"""Raw TFJobs and ClusterNetworkTopologies → their views, every field checked as `convert` checks pods.

A TFJob gives its replicas per role, each role's requests (from the replica templates), its PriorityClass,
its elastic bounds, the scaler's annotations, whether it may be, or is, suspended, and whether Kueue admits
it (`kueue`); a
ClusterNetworkTopology gives the chain of network layers above the node layer. Anything unreadable
raises `ConversionError` naming the object and field.
"""

from __future__ import annotations

from typing import Any

from extender.policy.core.resources import Resources
from extender.policy.core.views import CLUSTER_LAYER, NODE_LAYER, JobView, NetworkLayer, Role
from extender.state import fields, gang_annotations, kueue
from extender.state.fields import FieldError, Json
from extender.state.gang_annotations import (
    ATTAINED_ANNOTATION,
    CHECKPOINT_INTERVAL_ANNOTATION,
    CONSOLIDATED_AT_ANNOTATION,
    MAX_WORKERS_ANNOTATION,
    MIN_RUN_ANNOTATION,
    MIN_WORKERS_ANNOTATION,
    NATIVE_GANG_ANNOTATION,
    RESUMED_AT_ANNOTATION,
    RUN_TIME_ANNOTATION,
    SCALED_AT_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
    SUSPENDED_AT_ANNOTATION,
    TAKEN_ANNOTATION,
    WORKER_PLAN_ANNOTATION,
)
from extender.state.objects import NON_NEGATIVE, annotation_of, converted, created_at, key_of, requests_of, role_of

SUSPENSION_TIMES_MAX = 1000
"""The most times a suspension-times annotation may list (a count): more is refused as malformed."""


def job_view(obj: Any) -> JobView:
    return converted(obj, _job)


def _job(obj: Json) -> JobView:
    meta = fields.mapping(obj, "metadata", "metadata")
    spec = fields.mapping(obj, "spec", "spec")
    key = key_of(obj, namespaced=True)
    namespace, name = key.split("/", 1)
    replicas: dict[Role, int] = {}
    role_requests: dict[Role, Resources] = {}
    scheduler_names: set[str] = set()
    scheduling_groups: list[str] = []
    run_policy = fields.mapping(spec, "runPolicy", "spec.runPolicy")
    policy = fields.mapping(run_policy, "schedulingPolicy", "spec.runPolicy")
    priority_class = _priority_class_name(policy, "priorityClass", "spec.runPolicy.schedulingPolicy.priorityClass")
    for replica_type, replica_spec in fields.mapping(spec, "tfReplicaSpecs", "spec.tfReplicaSpecs").items():
        path = f"spec.tfReplicaSpecs.{fields.checked_text(replica_type, 'spec.tfReplicaSpecs', max_chars=63)}"
        replica_spec = replica_spec if replica_spec is not None else {}
        if not isinstance(replica_spec, dict):
            raise FieldError(f"{path}={fields.show(replica_spec)} is not an object")
        role = role_of(replica_type)
        count = fields.integer(replica_spec, "replicas", f"{path}.replicas", default=1, bounds=NON_NEGATIVE)
        replicas[role] = replicas.get(role, 0) + count
        template = fields.mapping(fields.mapping(replica_spec, "template", f"{path}.template"), "spec", path)
        priority_class = priority_class or _priority_class_name(
            template, "priorityClassName", f"{path}.template.spec.priorityClassName"
        )
        role_requests[role] = requests_of(template, f"{path}.template.spec.")
        if template.get("schedulerName"):
            scheduler_names.add(fields.dns_subdomain(template["schedulerName"], f"{path}.template.spec.schedulerName"))
        scheduling_groups.append(_scheduling_group(template, f"{path}.template.spec.schedulingGroup"))
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
        created=created_at(meta),
        role_requests=role_requests,
        min_workers=min_workers,
        max_workers=max_workers,
        scaled_at=_seconds(meta, SCALED_AT_ANNOTATION),
        consolidated_at=_seconds(meta, CONSOLIDATED_AT_ANNOTATION),
        **gang_annotations.worker_plan(
            annotation_of(meta, WORKER_PLAN_ANNOTATION), "worker_plan", "worker_plan_expires"
        ),
        suspendable=str(annotation_of(meta, SUSPENDABLE_ANNOTATION) or "").strip().lower() == "true",
        suspended=fields.flag(run_policy, "suspend", "spec.runPolicy.suspend"),
        suspended_at=_seconds(meta, SUSPENDED_AT_ANNOTATION),
        resumed_at=_seconds(meta, RESUMED_AT_ANNOTATION),
        succeeded=_condition_true(obj, "Succeeded"),
        failed=_condition_true(obj, "Failed"),
        attained_s=_seconds(meta, ATTAINED_ANNOTATION),
        run_s=_seconds(meta, RUN_TIME_ANNOTATION),
        checkpoint_interval_s=_seconds(meta, CHECKPOINT_INTERVAL_ANNOTATION) or None,
        taken=_times(meta, TAKEN_ANNOTATION),
        min_run_before_preemption_s=_seconds(meta, MIN_RUN_ANNOTATION)
        if annotation_of(meta, MIN_RUN_ANNOTATION) is not None
        else None,
        kueue_managed=kueue.managed_by_kueue(meta, spec),
        kueue_priority_class=kueue.workload_priority_class(meta),
        scheduler_names=tuple(sorted(scheduler_names)),
        scheduling_group=scheduling_groups[0] if len(set(scheduling_groups)) == 1 else "",
        native_gang=fields.dns_subdomain(native, f"annotation {NATIVE_GANG_ANNOTATION}")
        if (native := annotation_of(meta, NATIVE_GANG_ANNOTATION))
        else "",
    )


def _scheduling_group(template: Json, path: str) -> str:
    """The PodGroup a replica template's `spec.schedulingGroup` names ("" for none)."""
    name = fields.mapping(template, "schedulingGroup", path).get("podGroupName")
    return fields.path_segment(name, f"{path}.podGroupName") if name else ""


def _condition_true(obj: Json, kind: str) -> bool:
    """Whether `status.conditions` holds a condition of type `kind` whose status is True."""
    conditions = fields.mapping(obj, "status", "status").get("conditions")
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(condition, dict) and condition.get("type") == kind and condition.get("status") == "True"
        for condition in conditions
    )


def _priority_class_name(parent: Json, key: str, path: str) -> str:
    value = parent.get(key)
    return fields.dns_subdomain(value, path) if value else ""


def _seconds(meta: Json, annotation: str) -> float:
    value = annotation_of(meta, annotation)
    return 0.0 if value is None else fields.seconds_text(value, f"annotation {annotation}")


def _times(meta: Json, annotation: str) -> tuple[float, ...]:
    """A comma-separated list of times (seconds since the epoch), sorted; () when absent."""
    value = annotation_of(meta, annotation)
    if value is None or not str(value).strip():
        return ()
    where = f"annotation {annotation}"
    parts = str(value).split(",")
    if len(parts) > SUSPENSION_TIMES_MAX:
        raise FieldError(f"{where} lists more than {SUSPENSION_TIMES_MAX} times")
    return tuple(sorted(fields.seconds_text(part.strip(), where) for part in parts))


def _workers(meta: Json, annotation: str, default: int) -> int:
    value = annotation_of(meta, annotation)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().startswith("-") and value.strip().lstrip("-").isdecimal():
        raise FieldError(f"annotation {annotation} must not be negative")
    return fields.integer_text(value, f"annotation {annotation}", bounds=NON_NEGATIVE)


def network_layers(obj: Any) -> tuple[NetworkLayer, ...]:
    """The layers of a ClusterNetworkTopology, top first, without the built-in cluster and node layers.

    `spec.networkTopologySpec` lists layers with their parent; the chain is followed from the node layer
    (or, when that is not listed, the one layer no other names as parent) up to the top.
    """
    return converted(obj, _layers)


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
