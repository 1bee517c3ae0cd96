"""Keyword-only builders of raw Kubernetes objects, shaped as the API server and kube-scheduler send them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from extender.policy.core.ledger import LedgerChange
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan, Reservation
from extender.sim.workload import JobSpec
from extender.state.kinds import Kind
from extender.state.store import ClusterState

Obj = dict[str, Any]
SCHEDULER = "tfjob-scheduler"


def make_node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
) -> Obj:
    allocatable: dict[str, str] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str = "1",
    memory: str = "1Gi",
    gpu: int = 0,
    node: str = "",
    phase: str = "Pending",
    group: str = "",
    legacy_group: bool = False,
    job: str = "",
    role: str = "",
    index: int = 0,
    scheduler: str = SCHEDULER,
    priority: int = 0,
    uid: str | None = None,
    terminating: bool = False,
    annotations: dict[str, str] | None = None,
) -> Obj:
    labels: dict[str, str] = {}
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "creationTimestamp": "2026-03-01T10:15:30Z",
        "labels": labels,
    }
    if group:
        labels["pod-group.scheduling.sigs.k8s.io" if legacy_group else "scheduling.x-k8s.io/pod-group"] = group
    if job:
        labels["training.kubeflow.org/job-name"] = job
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": job,
                "uid": f"uid-job-{job}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if role:
        labels["training.kubeflow.org/replica-type"] = role
        labels["training.kubeflow.org/replica-index"] = str(index)
    if terminating:
        meta["deletionTimestamp"] = "2026-03-01T10:20:00Z"
    if annotations:
        meta["annotations"] = dict(annotations)
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    spec: Obj = {
        "containers": [{"name": "tensorflow", "image": "tf:2.16", "resources": {"requests": requests}}],
        "schedulerName": scheduler,
        "priority": priority,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def make_podgroup(
    name: str,
    *,
    min_member: int,
    namespace: str = "default",
    legacy: bool = False,
    timeout_s: int | None = None,
    gang_group: list[str] | None = None,
    gather: dict[str, str] | None = None,
    owner_job: str = "",
) -> Obj:
    """`gather`: layer → PreferGather / MustGather, written as the network-topology-spec annotation;
    `owner_job`: the TFJob named in its owner references, as training-operator writes it."""
    group = "scheduling.sigs.k8s.io" if legacy else "scheduling.x-k8s.io"
    spec: Obj = {"minMember": min_member}
    if timeout_s is not None:
        spec["scheduleTimeoutSeconds"] = timeout_s
    meta: Obj = {"name": name, "namespace": namespace, "creationTimestamp": "2026-03-01T10:15:00Z"}
    annotations: dict[str, str] = {}
    if gang_group:
        annotations["gang.scheduling.koordinator.sh/groups"] = json.dumps(gang_group)
    if gather:
        rules = [{"layer": layer, "strategy": strategy} for layer, strategy in gather.items()]
        annotations["gang.scheduling.koordinator.sh/network-topology-spec"] = json.dumps({"gatherStrategy": rules})
    if annotations:
        meta["annotations"] = annotations
    if owner_job:
        owner = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": owner_job, "uid": f"uid-job-{owner_job}"}
        meta["ownerReferences"] = [owner | {"controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": f"{group}/v1alpha1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def make_k8s_podgroup(name: str, *, min_count: int | None, namespace: str = "default", version: str = "v1beta1") -> Obj:
    """Kubernetes' own PodGroup (`scheduling.k8s.io`): a gang of `min_count`, or `basic` when None."""
    policy: Obj = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2026-03-01T10:15:00Z"},
        "spec": {"schedulingPolicy": policy},
    }


def in_scheduling_group(pods: list[Obj], pod_group: str) -> list[Obj]:
    """`pods` joined to the `scheduling.k8s.io` PodGroup `pod_group` (`spec.schedulingGroup`), labels kept."""
    for pod in pods:
        pod["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
    return pods


def running_job_pods(name: str, *, node: str, workers: int, cpu: str, memory: str) -> list[Obj]:
    """The PS and `workers` workers of the TFJob `name`, all Running on `node`, in PodGroup `name`."""
    return placed_pods(name, placement=[node] * (workers + 1), cpu=cpu, memory=memory)


def placed_pods(
    name: str, *, placement: Sequence[str], cpu: str = "1", memory: str = "1Gi", priority: int = 0
) -> list[Obj]:
    """The Running pods of the TFJob `name` in PodGroup `name`: its PS on `placement[0]`, worker i on
    `placement[i + 1]`."""
    pods = [
        make_pod(
            f"{name}-ps-0",
            job=name,
            role="ps",
            group=name,
            node=placement[0],
            phase="Running",
            cpu=cpu,
            memory=memory,
            priority=priority,
        )
    ]
    pods += [
        make_pod(
            f"{name}-worker-{i}",
            job=name,
            role="worker",
            index=i,
            group=name,
            node=node,
            phase="Running",
            cpu=cpu,
            memory=memory,
            priority=priority,
        )
        for i, node in enumerate(placement[1:])
    ]
    return pods


def make_sized_tfjob(
    name: str,
    *,
    workers: int,
    cpu: str = "1",
    memory: str = "1Gi",
    min_workers: int | None = None,
    max_workers: int | None = None,
    dynamic: bool = True,
    created: str = "2026-03-01T10:00:00Z",
) -> Obj:
    """A TFJob of 1 PS + `workers` whose replica templates request `cpu` and `memory` per pod; elastic
    between `min_workers` and `max_workers` (default: `workers`) when `min_workers` is given."""
    replica: Obj = {
        "template": {
            "spec": {"containers": [{"name": "tensorflow", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
        }
    }
    annotations = {}
    if min_workers is not None:
        annotations = {
            "tfjob-extender.io/min-workers": str(min_workers),
            "tfjob-extender.io/max-workers": str(workers if max_workers is None else max_workers),
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations, "creationTimestamp": created},
        "spec": {
            "enableDynamicWorker": dynamic,
            "tfReplicaSpecs": {"PS": {"replicas": 1, **replica}, "Worker": {"replicas": workers, **replica}},
        },
    }


def make_tfjob(name: str, *, ps: int = 1, workers: int = 2, namespace: str = "default", dynamic: bool = False) -> Obj:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-job-{name}",
            "creationTimestamp": "2026-03-01T10:15:00Z",
        },
        "spec": {
            "enableDynamicWorker": dynamic,
            "tfReplicaSpecs": {"PS": {"replicas": ps}, "Worker": {"replicas": workers}},
        },
    }


def tfjob_pods(
    job: str,
    *,
    ps: int = 1,
    workers: int = 2,
    cpu: str = "1",
    memory: str = "1Gi",
    namespace: str = "default",
    ps_cpu: str | None = None,
    gang: bool = True,
    nodes: dict[str, str] | None = None,
) -> list[Obj]:
    """The pods training-operator creates for a PS/worker TFJob (names `<job>-<role>-<index>`)."""
    pods = []
    for role, count, role_cpu in (("ps", ps, ps_cpu or cpu), ("worker", workers, cpu)):
        for index in range(count):
            name = f"{job}-{role}-{index}"
            node = (nodes or {}).get(name, "")
            pods.append(
                make_pod(
                    name,
                    namespace=namespace,
                    cpu=role_cpu,
                    memory=memory,
                    job=job,
                    role=role,
                    index=index,
                    group=job if gang else "",
                    node=node,
                    phase="Running" if node else "Pending",
                )
            )
    return pods


def make_network_topology(layers: dict[str, str], *, name: str = "default") -> Obj:
    """A ClusterNetworkTopology: `layers` maps layer name → node label key, top layer first."""
    spec: list[Obj] = []
    parent = ""
    for layer, key in [*layers.items(), ("NodeTopologyLayer", "")]:
        entry: Obj = {"topologyLayer": layer}
        if parent:
            entry["parentTopologyLayer"] = parent
        if key:
            entry["labelKey"] = [key]
        spec.append(entry)
        parent = layer
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": name},
        "spec": {"networkTopologySpec": spec},
    }


def cluster(*objects: Obj, settings: PolicySettings | None = None) -> ClusterState:
    """A synced model holding `objects` (built with `settings`, else the defaults)."""
    state = ClusterState(settings)
    by_kind: dict[Kind, list[Obj]] = {kind: [] for kind in Kind}
    for obj in objects:
        by_kind[_kind(obj)].append(obj)
    for kind, items in by_kind.items():
        state.replace(kind, items)
        state.mark_synced(kind)
    return state


def snapshot(*objects: Obj) -> ClusterSnapshot:
    return cluster(*objects).snapshot()


def _kind(obj: Obj) -> Kind:
    if obj["kind"] == "PodGroup":
        if obj["apiVersion"].startswith("scheduling.k8s.io"):
            return Kind.PODGROUP_K8S
        return Kind.PODGROUP_SIGS if obj["apiVersion"].startswith("scheduling.sigs.k8s.io") else Kind.PODGROUP
    kinds = {
        "Node": Kind.NODE,
        "Pod": Kind.POD,
        "TFJob": Kind.TFJOB,
        "PriorityClass": Kind.PRIORITY_CLASS,
        "ClusterNetworkTopology": Kind.NETWORK_TOPOLOGY,
        "WorkloadPriorityClass": Kind.WORKLOAD_PRIORITY_CLASS,
    }
    return kinds[obj["kind"]]


def hold(
    state: ClusterState,
    *,
    reserve: Sequence[Reservation] = (),
    release_groups: Sequence[str] = (),
    failed_plan: FailedPlan | None = None,
) -> None:
    """Put a change into the gang ledger directly (a test's given state, not a decision)."""
    change = LedgerChange(tuple(release_groups), tuple(reserve), failed_plan)
    assert state.commit(change, decided_on=None)


# -- running and waiting TFJob gangs (the preemption and scaling tests) -----------------------------------


def make_priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def make_workload_priority_class(name: str, value: int) -> Obj:
    """Kueue's WorkloadPriorityClass."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def cpu_nodes(count: int, cpu: str = "4") -> list[Obj]:
    """Nodes `node-0` … with `cpu` CPU and 64 GiB each."""
    return [make_node(f"node-{i}", cpu=cpu, memory="64Gi") for i in range(count)]


def spread(nodes: Sequence[str], workers: int) -> list[str]:
    """A placement for `bound_job`: the PS on `nodes[0]`, worker i on `nodes[(i + 1) % len(nodes)]`."""
    return [nodes[0], *(nodes[(i + 1) % len(nodes)] for i in range(workers))]


def bound_job(
    name: str,
    *,
    placement: Sequence[str],
    priority: int = 0,
    cpu: str = "1",
    min_workers: int | None = None,
    max_workers: int | None = None,
    dynamic: bool = True,
    created: str = "2026-03-01T10:00:00Z",
    min_member: int | None = None,
) -> list[Obj]:
    """A running TFJob gang: its PS on `placement[0]`, worker i on `placement[i + 1]`, pods of `cpu`, its
    PodGroup (`min_member`, default every pod) and its TFJob (elastic between `min_workers` and
    `max_workers` when `min_workers` is given)."""
    workers = len(placement) - 1
    pods = placed_pods(name, placement=placement, cpu=cpu, priority=priority)
    job = make_sized_tfjob(
        name,
        workers=workers,
        cpu=cpu,
        min_workers=min_workers,
        max_workers=max_workers,
        dynamic=dynamic,
        created=created,
    )
    return [*pods, make_podgroup(name, min_member=1 + workers if min_member is None else min_member), job]


def waiting_job(
    name: str,
    *,
    pods: int,
    priority: int = 100,
    cpu: str = "1",
    policy: str = "PreemptLowerPriority",
    declare_bounds: bool = False,
    min_workers: int | None = None,
    created: str = "2026-03-01T10:00:00Z",
) -> list[Obj]:
    """A gang of `pods` pending workers of `cpu` (no PS), `minMember` all of them, its TFJob rigid (with
    `declare_bounds`, its min and max workers annotated as `pods`), or with `min_workers` a dynamic-worker
    TFJob that may start with that many (a what-if at each smaller size)."""
    members = [
        make_pod(f"{name}-worker-{i}", job=name, role="worker", index=i, group=name, priority=priority, cpu=cpu)
        for i in range(pods)
    ]
    for member in members:
        member["spec"]["preemptionPolicy"] = policy
    if min_workers is not None:
        job = make_sized_tfjob(name, workers=pods, cpu=cpu, min_workers=min_workers, dynamic=True, created=created)
    else:
        bounds = pods if declare_bounds else None
        job = make_sized_tfjob(
            name, workers=pods, cpu=cpu, min_workers=bounds, max_workers=bounds, dynamic=False, created=created
        )
    return [*members, make_podgroup(name, min_member=pods), job]


def running_gang(
    name: str,
    *,
    workers: int,
    nodes: Sequence[str],
    priority: int = 0,
    min_workers: int | None = None,
    dynamic: bool = True,
) -> list[Obj]:
    """A running gang of 1 PS + `workers` of 1 CPU spread over `nodes` (`spread`), its PodGroup's
    `minMember` the PS and its minimum workers."""
    return bound_job(
        name,
        placement=spread(nodes, workers),
        priority=priority,
        min_workers=min_workers,
        dynamic=dynamic,
        min_member=1 + (workers if min_workers is None else min_workers),
    )


def placed_job(
    name: str,
    *,
    placement: Sequence[str],
    min_workers: int = 1,
    max_workers: int = 8,
    dynamic: bool = True,
    cpu: str = "1",
    created: str = "2026-03-01T10:00:00Z",
) -> list[Obj]:
    """A running elastic job placed exactly (`bound_job`), between 1 and 8 workers unless told otherwise."""
    return bound_job(
        name,
        placement=placement,
        cpu=cpu,
        min_workers=min_workers,
        max_workers=max_workers,
        dynamic=dynamic,
        created=created,
    )


def sim_job(name: str, arrival: float, *, workers: int = 1, cpu: str = "6", epochs: float = 0.2) -> JobSpec:
    """A rigid simulated job: 1 PS of 1 CPU and `workers` workers of `cpu`, resnext110 for `epochs`."""
    return JobSpec(
        name=name,
        arrival_s=arrival,
        model="resnext110",
        batch=64,
        epochs=epochs,
        ps=1,
        workers=workers,
        min_workers=workers,
        max_workers=workers,
        ps_cpu="1",
        ps_memory="1Gi",
        worker_cpu=cpu,
        worker_memory="1Gi",
        elastic=False,
    )
