"""PS–worker co-location: where the pending pods of one or more jobs go, on free capacity given as input.

For each unit (one PodGroup's pending members), in order of decreasing demand:
1. If one node can hold every pending pod of the unit, put them all there. Among such nodes prefer one
   already running the job's PS, then one running other pods of the job, then the tightest fit (the
   least capacity left idle, so large holes stay free for large gangs), then the name.
2. Otherwise use as few nodes as possible: visit nodes holding the job's PS first, then the idlest nodes
   first (or the caller's node order, e.g. a walk of a network domain), and on each node place pods in
   role order (PS, chief, workers, evaluators) while they fit.
   The PS lands on the first (idlest) node and as many of its workers as fit land beside it.
Pods that fit nowhere are returned unplaced. Capacity taken by one unit is not offered to the next.
The function is pure: it works on its own copy of `free` and returns the assignment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from extender.policy.model import PodView, Role
from extender.policy.resources import CPU, GPU, IDLENESS_DIMENSIONS, MEMORY, Resources, total


@dataclass(frozen=True, slots=True)
class PlacementUnit:
    """The pending pods of one group, and where the rest of its job already runs."""

    key: str
    pods: Sequence[PodView]
    ps_nodes: frozenset[str] = frozenset()
    """Nodes already holding (bound or reserved) a PS of this job."""
    job_nodes: Mapping[str, int] = field(default_factory=dict)
    """Node → number of this job's pods already there."""
    allowed: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Pod key → the only nodes it may use (kube-scheduler's candidates for the pod being filtered)."""


@dataclass(frozen=True, slots=True)
class Placement:
    assignments: Mapping[str, str]
    """Pod key → node."""
    unplaced: tuple[PodView, ...]


def idleness(free: Resources, allocatable: Resources) -> float:
    """Mean free share over cpu, memory and (where the node has any) GPUs: 0 = full, 1 = empty."""
    shares = [
        max(free.get(name), 0) / allocatable.get(name) for name in IDLENESS_DIMENSIONS if allocatable.get(name) > 0
    ]
    return sum(shares) / len(shares) if shares else 0.0


def role_order(pods: Sequence[PodView]) -> list[PodView]:
    return sorted(pods, key=lambda pod: (pod.role.placement_order, pod.index, pod.name))


def place_units(
    units: Sequence[PlacementUnit],
    free: Mapping[str, Resources],
    allocatable: Mapping[str, Resources],
    *,
    node_order: Sequence[str] | None = None,
) -> Placement:
    """Place every unit's pods on `free` capacity (a per-node map of schedulable nodes only).

    `node_order` (the nodes of `free`) replaces idlest-first as the order a unit spreads in."""
    remaining = dict(free)
    assignments: dict[str, str] = {}
    unplaced: list[PodView] = []
    by_demand = sorted(
        units, key=lambda unit: (tuple(-x for x in _weight(total(p.requests for p in unit.pods))), unit.key)
    )
    for unit in by_demand:
        pods = role_order(unit.pods)
        node = _single_node(unit, pods, remaining, allocatable)
        if node is not None:
            for pod in pods:
                assignments[pod.key] = node
                remaining[node] = remaining[node] - pod.requests
            continue
        unplaced.extend(_spread(unit, pods, remaining, allocatable, assignments, node_order))
    return Placement(assignments, tuple(unplaced))


def _weight(resources: Resources) -> tuple[int, ...]:
    """Demand for ordering units: GPUs first, then CPU, then memory (never summed across units)."""
    return (resources.get(GPU), resources.get(CPU), resources.get(MEMORY))


def _allowed(unit: PlacementUnit, pods: Sequence[PodView], node: str) -> bool:
    return all(node in unit.allowed[pod.key] for pod in pods if pod.key in unit.allowed)


def _single_node(
    unit: PlacementUnit,
    pods: Sequence[PodView],
    free: Mapping[str, Resources],
    allocatable: Mapping[str, Resources],
) -> str | None:
    demand = total(pod.requests for pod in pods)
    best: tuple[int, int, float, str] | None = None
    for node, available in free.items():
        if not demand.fits_in(available) or not _allowed(unit, pods, node):
            continue
        leftover = idleness(available - demand, allocatable[node])
        rank = (0 if node in unit.ps_nodes else 1, -unit.job_nodes.get(node, 0), leftover, node)
        if best is None or rank < best:
            best = rank
    return None if best is None else best[3]


def _spread(
    unit: PlacementUnit,
    pods: list[PodView],
    free: dict[str, Resources],
    allocatable: Mapping[str, Resources],
    assignments: dict[str, str],
    node_order: Sequence[str] | None,
) -> list[PodView]:
    if node_order is not None:
        order = sorted(node_order, key=lambda node: 0 if node in unit.ps_nodes else 1)
    else:
        order = sorted(
            free,
            key=lambda node: (
                0 if node in unit.ps_nodes else 1,
                -idleness(free[node], allocatable[node]),
                node,
            ),
        )
    waiting = list(pods)
    for node in order:
        if not waiting:
            break
        still_waiting: list[PodView] = []
        for pod in waiting:
            allowed = unit.allowed.get(pod.key)
            if pod.requests.fits_in(free[node]) and (allowed is None or node in allowed):
                assignments[pod.key] = node
                free[node] = free[node] - pod.requests
            else:
                still_waiting.append(pod)
        waiting = still_waiting
    return waiting


def is_ps(pod: PodView) -> bool:
    return pod.role is Role.PS
