"""What a gang plan is placed on: `free_capacity` is the snapshot's free room (with the gang's own
reservations and any freed pods handed back) on the schedulable nodes that can hold the gang's smallest pod;
`placement_unit` is one PodGroup's pending pods with the nodes their job already uses, its parameter servers'
nodes and the nodes each pod may use (kube-scheduler's candidates; node selectors, required node affinity and
tolerations of node taints, `node_fit`); `roomy_nodes` narrows a snapshot to the nodes worth planning on once
for many plans; `selected_nodes` resolves a pod's node constraint, once per node-labels epoch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from extender.policy.core.node_fit import FILTERING_EFFECTS, NodeConstraint
from extender.policy.core.resources import EMPTY, Resources, smallest
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView, Role
from extender.policy.gang.placement import FreeCapacity, PlacementUnit


def roomy_nodes(snapshot: ClusterSnapshot, pods: Iterable[PodView]) -> frozenset[str]:
    """Schedulable nodes that one of `pods` may use (`node_fit`) with room, before any hand-back, for
    at least the smallest of them."""
    pods = list(pods)
    table = snapshot.capacity
    usable = table.schedulable.copy()
    if pods and all(limited(snapshot, pod) for pod in pods):
        selected = np.zeros(len(table.names), dtype=np.bool_)
        for constraint in {pod.constraint for pod in pods}:
            selected |= table.row_mask(selected_nodes(snapshot, constraint))
        usable &= selected
    rows = np.flatnonzero(usable)
    roomy = rows[table.fits(rows, table.demand(smallest(pod.requests for pod in pods)))]
    return frozenset(table.names[row] for row in roomy.tolist())


def free_capacity(
    snapshot: ClusterSnapshot,
    released: set[str],
    freed: Mapping[str, Resources],
    smallest_pod: Resources,
    nodes: Collection[str] | None,
) -> FreeCapacity:
    """Free capacity, with the given pods' reservations handed back, on the schedulable nodes that can hold
    at least `smallest_pod` (no member fits anywhere else, so leaving those nodes out changes no plan)."""
    handed_back: dict[str, Resources] = dict(freed)
    for pod_key in released:
        held = snapshot.reservations[pod_key]
        handed_back[held.node] = handed_back.get(held.node, EMPTY) + held.requests
    table = snapshot.capacity
    if nodes is None:
        rows = np.arange(len(table.names), dtype=np.intp)
    else:
        rows = table.rows_of(sorted({*nodes, *handed_back}))
        rows = rows[rows >= 0]
    room = table.available[rows]
    if handed_back:
        position = np.full(len(table.names), -1, dtype=np.intp)
        position[rows] = np.arange(len(rows), dtype=np.intp)
        back_rows = table.rows_of(list(handed_back))
        at = np.where(back_rows >= 0, position[np.where(back_rows >= 0, back_rows, 0)], -1)
        known = at >= 0
        if known.any():
            backs = [table.vector(back) for back, ok in zip(handed_back.values(), known.tolist(), strict=True) if ok]
            room = room.copy()
            room[at[known]] += np.vstack(backs)
    keep = table.schedulable[rows] & table.fits(rows, table.demand(smallest_pod), room)
    return FreeCapacity(table, rows[keep], room[keep])


def placement_unit(
    snapshot: ClusterSnapshot,
    group_key: str,
    pods: Sequence[PodView],
    replanned: set[str],
    pinned: Mapping[str, frozenset[str]],
) -> PlacementUnit:
    job = pods[0].job
    ps_nodes: set[str] = set()
    job_nodes: Counter[str] = Counter()
    for pod_key in snapshot.job_members.get(job, frozenset()) if job else ():
        pod = snapshot.pods.get(pod_key)
        if pod is None or pod.key in replanned:
            continue
        node = pod.node_name if pod.holds_node else reserved_node(snapshot, pod.key)
        if node:
            job_nodes[node] += 1
            if pod.role is Role.PS:
                ps_nodes.add(node)
    allowed = {pod.key: pinned[pod.key] for pod in pods if pod.key in pinned}
    for pod in pods:
        if limited(snapshot, pod):
            selected = selected_nodes(snapshot, pod.constraint)
            allowed[pod.key] = allowed[pod.key] & selected if pod.key in allowed else selected
    return PlacementUnit(group_key, pods, frozenset(ps_nodes), dict(job_nodes), allowed)


def limited(snapshot: ClusterSnapshot, pod: PodView) -> bool:
    """Whether some node may be closed to the pod: it asks for particular nodes, or some node has a taint
    that keeps pods out."""
    return pod.constraint.narrows or tainted(snapshot)


def tainted(snapshot: ClusterSnapshot) -> bool:
    """Whether any node has a `NoSchedule` or `NoExecute` taint, derived once per node-labels epoch."""
    memo = snapshot.node_labels_epoch.derived
    known = memo.get("tainted")
    if isinstance(known, bool):
        return known
    found = any(taint.effect in FILTERING_EFFECTS for node in snapshot.nodes.values() for taint in node.node.taints)
    memo["tainted"] = found
    return found


def selected_nodes(snapshot: ClusterSnapshot, constraint: NodeConstraint) -> frozenset[str]:
    """The nodes a pod with this node constraint may go to, derived once per node-labels epoch."""
    memo = snapshot.node_labels_epoch.derived
    key = ("node-constraint", constraint)
    known = memo.get(key)
    if isinstance(known, frozenset):
        return known
    selected = frozenset(
        name for name, node in snapshot.nodes.items() if constraint.admits(name, node.node.labels, node.node.taints)
    )
    memo[key] = selected
    return selected


def reserved_node(snapshot: ClusterSnapshot, pod_key: str) -> str:
    held = snapshot.reservations.get(pod_key)
    return held.node if held is not None else ""
