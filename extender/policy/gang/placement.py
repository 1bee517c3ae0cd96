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

The capacity is dense (`FreeCapacity`: one row per candidate node, one column per resource), so each
choice is a few vector operations however many nodes there are. Step 2 is computed pod by pod as a
first fit along the visiting order, which places every pod exactly where the node-by-node walk would
(a node takes, in role order, the pods that still fit it). The function is pure: it works on its own
copy of the capacity and returns the assignment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from extender.policy.core.capacity import CapacityTable, ColumnLayout, Floats, Mask, Matrix, Rows
from extender.policy.core.resources import CPU, GPU, IDLENESS_DIMENSIONS, MEMORY, Resources, total
from extender.policy.core.views import PodView

_ROW_MASK_MEMO_FROM = 64
"""Node sets larger than this are turned into row masks through the table's memo."""


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


@dataclass(frozen=True, slots=True)
class FreeCapacity:
    """The nodes a plan may use, as rows of a capacity table, with what is free on each for the plan."""

    table: CapacityTable
    rows: Rows
    """The table rows of the candidate nodes (one position each)."""
    free: Matrix
    """Free amounts, one row per position."""
    position_of_row: Rows = field(init=False, repr=False)
    """Table row → its position here, -1 for rows that are not candidates."""

    def __post_init__(self) -> None:
        index = np.full(len(self.table.names), -1, dtype=np.intp)
        index[self.rows] = np.arange(len(self.rows), dtype=np.intp)
        object.__setattr__(self, "position_of_row", index)

    @classmethod
    def of(cls, free: Mapping[str, Resources], allocatable: Mapping[str, Resources]) -> FreeCapacity:
        """Dense capacity from per-node maps (tests, and callers that hold capacity node by node)."""
        names = list(free)
        columns = sorted({name for bag in (*free.values(), *allocatable.values()) for name in bag.names()})
        layout = ColumnLayout.of(columns)
        table = CapacityTable(
            layout=layout,
            names=tuple(names),
            rows={name: row for row, name in enumerate(names)},
            allocatable=_matrix(layout, [allocatable[name] for name in names]),
            available=_matrix(layout, [free[name] for name in names]),
            schedulable=np.ones(len(names), dtype=np.bool_),
        )
        return cls(table, np.arange(len(names), dtype=np.intp), table.available)

    def __len__(self) -> int:
        return len(self.rows)

    def names(self) -> list[str]:
        table_names = self.table.names
        return [table_names[row] for row in self.rows.tolist()]

    def positions_of(self, nodes: Sequence[str]) -> Rows:
        """The position of each node name, -1 where it is not a candidate."""
        rows = self.table.rows_of(nodes)
        return np.where(rows >= 0, self.position_of_row[np.where(rows >= 0, rows, 0)], -1)

    def mask_of(self, nodes: frozenset[str] | Mapping[str, int]) -> Mask:
        """Which positions are among `nodes` (a large frozenset, e.g. a node selector's nodes, is laid
        out on the table's rows once per node set)."""
        if isinstance(nodes, frozenset) and len(nodes) > _ROW_MASK_MEMO_FROM:
            return self.table.row_mask(nodes)[self.rows]
        mask = np.zeros(len(self.rows), dtype=np.bool_)
        if nodes:
            positions = self.positions_of(list(nodes))
            mask[positions[positions >= 0]] = True
        return mask

    def subset(self, nodes: Sequence[str]) -> FreeCapacity:
        """These candidate nodes only, in this order (names that are not candidates are skipped)."""
        positions = self.positions_of(nodes)
        positions = positions[positions >= 0]
        return FreeCapacity(self.table, self.rows[positions], self.free[positions])

    def as_resources(self) -> tuple[dict[str, Resources], dict[str, Resources]]:
        """(free, allocatable) per node name, for the callers that work node by node."""
        table = self.table
        free = {}
        allocatable = {}
        for position, row in enumerate(self.rows.tolist()):
            name = table.names[row]
            free[name] = table.resources(self.free[position])
            allocatable[name] = table.resources(table.allocatable[row])
        return free, allocatable


def _matrix(layout: ColumnLayout, bags: Sequence[Resources]) -> Matrix:
    matrix = np.zeros((len(bags), len(layout.names)), dtype=np.int64)
    for row, bag in enumerate(bags):
        matrix[row] = layout.demand(bag).vector
    return matrix


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
    """`place` on per-node maps of free and allocatable capacity (schedulable nodes only)."""
    return place(units, FreeCapacity.of(free, allocatable), node_order=node_order)


def place(
    units: Sequence[PlacementUnit], capacity: FreeCapacity, *, node_order: Sequence[str] | None = None
) -> Placement:
    """Place every unit's pods on `capacity`. `node_order` (candidate node names) replaces idlest-first as
    the order a unit spreads in."""
    remaining = capacity.free.copy()
    assignments: dict[str, str] = {}
    unplaced: list[PodView] = []
    by_demand = sorted(
        units, key=lambda unit: (tuple(-x for x in _weight(total(p.requests for p in unit.pods))), unit.key)
    )
    for unit in by_demand:
        pods = role_order(unit.pods)
        position = _single_node(capacity, unit, pods, remaining)
        if position is not None:
            node = capacity.table.names[int(capacity.rows[position])]
            for pod in pods:
                assignments[pod.key] = node
            remaining[position] -= capacity.table.vector(total(pod.requests for pod in pods))
            continue
        unplaced.extend(_spread(capacity, unit, pods, remaining, assignments, node_order))
    return Placement(assignments, tuple(unplaced))


def _weight(resources: Resources) -> tuple[int, ...]:
    """Demand for ordering units: GPUs first, then CPU, then memory (never summed across units)."""
    return (resources.get(GPU), resources.get(CPU), resources.get(MEMORY))


def _allowed_mask(capacity: FreeCapacity, unit: PlacementUnit, pods: Sequence[PodView]) -> Mask:
    """Positions every one of `pods` may use."""
    mask = np.ones(len(capacity), dtype=np.bool_)
    for pod in pods:
        allowed = unit.allowed.get(pod.key)
        if allowed is not None:
            mask &= capacity.mask_of(allowed)
    return mask


def _fits(remaining: Matrix, requests: Resources, capacity: FreeCapacity) -> Mask:
    demand = capacity.table.demand(requests)
    if demand.unknown:
        return np.zeros(len(remaining), dtype=np.bool_)
    return np.asarray((remaining[:, demand.columns] >= demand.amounts).all(axis=1), dtype=np.bool_)


def _idleness(capacity: FreeCapacity, positions: Rows, room: Matrix) -> Floats:
    return capacity.table.idleness(capacity.rows[positions], room)


def _single_node(capacity: FreeCapacity, unit: PlacementUnit, pods: Sequence[PodView], remaining: Matrix) -> int | None:
    """The position of the best node holding the whole unit, or None."""
    demand = total(pod.requests for pod in pods)
    candidates = np.flatnonzero(_fits(remaining, demand, capacity) & _allowed_mask(capacity, unit, pods))
    if not len(candidates):
        return None
    leftover = _idleness(capacity, candidates, remaining[candidates] - capacity.table.vector(demand))
    job_pods = np.zeros(len(capacity), dtype=np.int64)
    if unit.job_nodes:
        positions = capacity.positions_of(list(unit.job_nodes))
        counts = np.fromiter(unit.job_nodes.values(), dtype=np.int64, count=len(unit.job_nodes))
        job_pods[positions[positions >= 0]] = counts[positions >= 0]
    away_from_ps = ~capacity.mask_of(unit.ps_nodes)[candidates]
    name_rank = capacity.table.name_rank()[capacity.rows[candidates]]
    best = np.lexsort((name_rank, leftover, -job_pods[candidates], away_from_ps))[0]
    return int(candidates[best])


def _spread(
    capacity: FreeCapacity,
    unit: PlacementUnit,
    pods: list[PodView],
    remaining: Matrix,
    assignments: dict[str, str],
    node_order: Sequence[str] | None,
) -> list[PodView]:
    """First fit, pod by pod in role order, along the nodes holding the job's PS, then the idlest (or the
    caller's order); returns the pods that fit nowhere."""
    ps = capacity.mask_of(unit.ps_nodes)
    if node_order is not None:
        given = capacity.positions_of(node_order)
        given = given[given >= 0]
        order = np.concatenate([given[ps[given]], given[~ps[given]]])
    else:
        everywhere = np.arange(len(capacity), dtype=np.intp)
        idle = _idleness(capacity, everywhere, remaining)
        order = np.lexsort((capacity.table.name_rank()[capacity.rows], -idle, ~ps))
    visit = remaining[order]
    names = capacity.table.names
    waiting: list[PodView] = []
    resume: dict[tuple[Resources, frozenset[str] | None], int] = {}
    for pod in pods:
        allowed = unit.allowed.get(pod.key)
        shape = (pod.requests, allowed)
        start = resume.get(shape, 0)
        fits = _fits(visit[start:], pod.requests, capacity)
        if allowed is not None:
            fits &= capacity.mask_of(allowed)[order[start:]]
        found = np.flatnonzero(fits)
        if not len(found):
            waiting.append(pod)
            resume[shape] = len(order)
            continue
        step = start + int(found[0])
        visit[step] -= capacity.table.vector(pod.requests)
        resume[shape] = step
        assignments[pod.key] = names[int(capacity.rows[order[step]])]
    remaining[order] = visit
    return waiting
