"""The model written back out as minimal Kubernetes manifests, and snapshot files read back in.

`dump_state` turns a snapshot into a `kind: List` holding one manifest per node, pod, PodGroup, TFJob,
PriorityClass and the ClusterNetworkTopology — only the fields the model reads, so the dump is small —
plus the reservations ledger.
`load_objects` reads such a dump, or any YAML / JSON file of Kubernetes objects (several documents, or a
`kind: List` as `kubectl get -o yaml` prints it), and sorts the objects into model kinds. Reading a dump
back gives the same snapshot views: the round trip is exact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from extender.policy.model import (
    NODE_LAYER,
    ClusterSnapshot,
    GroupView,
    JobView,
    NetworkLayer,
    NodeView,
    PodView,
    Reservation,
    Role,
)
from extender.policy.resources import EMPTY, PODS, Resources
from extender.state import convert, workload_api
from extender.state.kinds import BY_KIND, Kind, kind_of_manifest

DUMP_EXTENSION_KEY = "tfjobExtender"
"""Top-level key of a dump holding what is not a Kubernetes object: generation and reservations."""


class SnapshotFileError(ValueError):
    """A cluster snapshot file that cannot be read; the message says where and why."""


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
        "spec": {"unschedulable": True} if not node.schedulable else {},
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
    meta = _meta(
        pod.name,
        pod.namespace,
        pod.created,
        uid=pod.uid,
        labels=labels,
        annotations={convert.NETWORK_TOPOLOGY_INDEX_ANNOTATION: str(index)} if index is not None else {},
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
    if scheduling_group:
        spec["schedulingGroup"] = scheduling_group
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": pod.phase}}


def group_manifest(group: GroupView) -> dict[str, Any]:
    annotations = {convert.GANG_GROUPS_ANNOTATION: json.dumps(list(group.gang_group))} if group.gang_group else {}
    if group.gather:
        rules = [{"layer": rule.layer, "strategy": rule.strategy.value} for rule in group.gather]
        annotations[convert.NETWORK_TOPOLOGY_SPEC_ANNOTATION] = json.dumps({"gatherStrategy": rules})
    metadata = _meta(group.name, group.namespace, group.created, annotations=annotations)
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
    replica_specs = {
        role.value.capitalize() if role is not Role.PS else "PS": {
            "replicas": count,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "tensorflow",
                            "resources": {
                                "requests": (job.role_requests.get(role, EMPTY) - Resources({PODS: 1})).to_quantities()
                            },
                        }
                    ]
                }
            },
        }
        for role, count in job.replicas.items()
    }
    spec: dict[str, Any] = {"tfReplicaSpecs": replica_specs, "enableDynamicWorker": job.enable_dynamic_worker}
    if job.priority_class:
        spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": job.priority_class}}
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
        annotations[convert.WORKER_PLAN_ANNOTATION] = convert.worker_plan_annotation(
            dict(job.worker_plan), job.worker_plan_expires
        )
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": _meta(job.name, job.namespace, job.created, uid=job.uid, annotations=annotations),
        "spec": spec,
    }


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


def reservation_record(reservation: Reservation) -> dict[str, Any]:
    return {
        "pod": reservation.pod,
        "group": reservation.group,
        "node": reservation.node,
        "requests": reservation.requests.to_quantities(),
        "expiresAt": reservation.expires_at,
    }


def dump_state(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The whole model as a `kind: List` of minimal manifests plus the reservations ledger."""
    items: list[dict[str, Any]] = [node_manifest(n.node) for _, n in sorted(snapshot.nodes.items())]
    items += [pod_manifest(p, snapshot) for _, p in sorted(snapshot.pods.items())]
    items += [group_manifest(g) for _, g in sorted(snapshot.groups.items())]
    items += [job_manifest(j) for _, j in sorted(snapshot.jobs.items())]
    items += [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in sorted(snapshot.priority_classes.items())
    ]
    if snapshot.network_topology is not None:
        items.append(network_topology_manifest(snapshot.network_topology))
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": items,
        DUMP_EXTENSION_KEY: {
            "generation": snapshot.generation,
            "reservations": [reservation_record(r) for _, r in sorted(snapshot.reservations.items())],
        },
    }


def parse_reservations(document: Mapping[str, Any]) -> list[Reservation]:
    records = (document.get(DUMP_EXTENSION_KEY) or {}).get("reservations") or []
    try:
        return [
            Reservation(r["pod"], r["group"], r["node"], Resources.parse(r["requests"]), float(r["expiresAt"]))
            for r in records
        ]
    except (KeyError, TypeError, ValueError) as error:
        raise SnapshotFileError(f"{DUMP_EXTENSION_KEY}.reservations: malformed record ({error})") from error


def read_documents(path: Path) -> list[dict[str, Any]]:
    """Every document of a YAML or JSON file (JSON is YAML), flattened out of `kind: List` wrappers."""
    try:
        documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    except (OSError, yaml.YAMLError) as error:
        raise SnapshotFileError(f"{path}: {error}") from error
    flat: list[dict[str, Any]] = []
    for position, document in enumerate(documents, start=1):
        if not isinstance(document, dict):
            raise SnapshotFileError(f"{path}: document {position} is not a mapping")
        if document.get("kind") == "List" or str(document.get("kind", "")).endswith("List"):
            flat.extend(item for item in document.get("items") or [] if isinstance(item, dict))
            flat.append({DUMP_EXTENSION_KEY: document.get(DUMP_EXTENSION_KEY) or {}})
        else:
            flat.append(document)
    return flat


def load_objects(path: Path) -> tuple[dict[Kind, list[dict[str, Any]]], list[Reservation]]:
    """Objects of the file per model kind (unknown kinds are skipped), and any saved reservations."""
    by_kind: dict[Kind, list[dict[str, Any]]] = {kind: [] for kind in BY_KIND}
    reservations: list[Reservation] = []
    for document in read_documents(path):
        if DUMP_EXTENSION_KEY in document:
            reservations += parse_reservations(document)
            continue
        kind = kind_of_manifest(str(document.get("apiVersion", "")), str(document.get("kind", "")))
        if kind is not None:
            by_kind[kind].append(document)
    return by_kind, reservations
