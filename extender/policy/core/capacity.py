"""Per-node capacity as dense arrays: what the hot paths (fit, scoring, planning) read in bulk.

Beside its per-node `NodeState` objects, the model keeps one row per node and one column per resource
name: allocatable and available (allocatable − bound pods − reservations) in base units (int64),
whether the node is schedulable, and how many distinct jobs have pods bound there. A `CapacityTable`
is the immutable view a snapshot holds; fit checks, idleness and plans over thousands of nodes are
then a few vector operations instead of a Python loop per node. Rows are assigned as nodes appear and
reused after they go (a vacant row is unschedulable and holds zeros); columns are added as resource
names appear. `Demand` is a pod's requests laid out on the table's columns, memoised per column
layout (a pure function of the two).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
import numpy.typing as npt

from extender.policy.core.memo import by_identity, by_value
from extender.policy.core.resources import IDLENESS_DIMENSIONS, Resources

Matrix = npt.NDArray[np.int64]
"""Rows × columns of amounts in base units."""
Rows = npt.NDArray[np.intp]
Mask = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]

AMOUNT_LIMIT = 2**62
"""Amounts are clamped to ±this (base units) in the table, so int64 sums of a few of them cannot wrap."""

_CANDIDATE_ROWS_MIN = 64
"""Tuples of names at least this long have their rows remembered (shorter ones are looked up each time)."""
_CANDIDATE_ROWS_MEMO_LIMIT = 64
"""Name tuples whose rows are remembered per node set before the memo starts afresh."""
_ROW_MASK_MEMO_LIMIT = 64
"""Node sets whose row masks are remembered per table node set before the memo starts afresh."""

_DEMAND_MEMO_LIMIT = 4096
"""Distinct request shapes remembered per column layout before the memo starts afresh."""


def clamp(value: int) -> int:
    return AMOUNT_LIMIT if value > AMOUNT_LIMIT else -AMOUNT_LIMIT if value < -AMOUNT_LIMIT else value


@dataclass(frozen=True, slots=True)
class Demand:
    """A request laid out on a table's columns."""

    vector: Matrix
    """Amount per column (a 1-D array)."""
    columns: Rows
    """The columns it asks for (non-zero amounts)."""
    amounts: Matrix
    """`vector[columns]`."""
    unknown: tuple[str, ...]
    """Requested resource names no node has at all (so no node can hold the request), sorted."""


@dataclass(frozen=True, slots=True, eq=False)
class ColumnLayout:
    """Resource names by column; shared by every table with the same columns."""

    names: tuple[str, ...]
    index: Mapping[str, int]
    idle_columns: tuple[int, ...]
    """Columns of the idleness dimensions (cpu, memory, GPU) present, in that order."""
    _demands: dict[Resources, Demand] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, names: Sequence[str]) -> ColumnLayout:
        index = {name: column for column, name in enumerate(names)}
        idle = tuple(index[name] for name in IDLENESS_DIMENSIONS if name in index)
        return cls(tuple(names), index, idle)

    def demand(self, requests: Resources) -> Demand:
        return by_value(self._demands, requests, _DEMAND_MEMO_LIMIT, lambda: self._made_demand(requests))

    def _made_demand(self, requests: Resources) -> Demand:
        vector = np.zeros(len(self.names), dtype=np.int64)
        unknown: list[str] = []
        for name, value in requests.items():
            column = self.index.get(name)
            if column is None:
                if value > 0:
                    unknown.append(name)
            else:
                vector[column] = clamp(value)
        columns = np.flatnonzero(vector).astype(np.intp)
        return Demand(vector, columns, vector[columns], tuple(sorted(unknown)))


EMPTY_LAYOUT = ColumnLayout.of(())


@dataclass(frozen=True, slots=True, eq=False)
class CapacityTable:
    """Immutable dense capacity of every node (see the module docstring)."""

    layout: ColumnLayout = EMPTY_LAYOUT
    names: tuple[str, ...] = ()
    """Node name by row; empty for a vacant row."""
    rows: Mapping[str, int] = field(default_factory=dict)
    """Node name → row."""
    allocatable: Matrix = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    available: Matrix = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    schedulable: Mask = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))
    jobs: Rows = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    """Distinct jobs (a pod without a job counting as its own) with a pod bound to the node."""
    derived: dict[str, object] = field(default_factory=dict, repr=False)
    """Memo of values derived from the node names alone (shared by every table of the same node set)."""
    answers: dict[int, tuple[tuple[object, ...], dict[object, object]]] = field(default_factory=dict, repr=False)
    """Memo of answers derived from this table's capacity (its own: a table is never changed, so an answer
    stands as long as the table does), by candidate tuple (`memo.by_identity`), then by what was asked."""

    def rows_of(self, names: Sequence[str]) -> Rows:
        """The row of each name, -1 for a name the table does not know. A long tuple is looked up once
        per node set and the same object again gets the same (read-only) rows: the verbs' candidate
        lists are such tuples, decoded once at the edge and repeated call after call."""
        if not isinstance(names, tuple) or len(names) < _CANDIDATE_ROWS_MIN:
            return self._looked_up(names)
        memo = self.derived.setdefault("candidate-rows", {})
        assert isinstance(memo, dict)
        return by_identity(memo, names, _CANDIDATE_ROWS_MEMO_LIMIT, lambda: self._looked_up(names, read_only=True))

    def _looked_up(self, names: Sequence[str], *, read_only: bool = False) -> Rows:
        rows = np.fromiter(map(self.rows.get, names, repeat(-1)), dtype=np.intp, count=len(names))
        rows.flags.writeable = not read_only
        return rows

    def demand(self, requests: Resources) -> Demand:
        return self.layout.demand(requests)

    def vector(self, resources: Resources) -> Matrix:
        """`resources` on this table's columns (names without a column are dropped)."""
        return self.layout.demand(resources).vector

    def resources(self, row_values: Matrix) -> Resources:
        """A row of amounts back as `Resources`."""
        return Resources(zip(self.layout.names, (int(value) for value in row_values), strict=True))

    def free_total(self) -> Resources:
        """What is available on all schedulable nodes together (an over-committed node counts as none)."""
        return self.resources(np.clip(self.available[self.schedulable], 0, None).sum(axis=0))

    def fits(self, rows: Rows, demand: Demand, available: Matrix | None = None) -> Mask:
        """For each of `rows`, whether `demand` fits in its available capacity (or in `available`, a
        matrix of the same rows)."""
        if demand.unknown:
            return np.zeros(len(rows), dtype=np.bool_)
        room = self.available[rows] if available is None else available
        if not len(demand.columns):
            return np.ones(len(rows), dtype=np.bool_)
        return np.asarray((room[:, demand.columns] >= demand.amounts).all(axis=1), dtype=np.bool_)

    def idleness(self, rows: Rows, room: Matrix) -> Floats:
        """Mean free share over cpu, memory and (where a node has any) GPUs of `room` (a matrix of
        `rows`), as `placement.idleness` computes it node by node: 0 = full, 1 = empty."""
        total = np.zeros(len(rows), dtype=np.float64)
        terms = np.zeros(len(rows), dtype=np.float64)
        for column in self.layout.idle_columns:
            allocatable = self.allocatable[rows, column]
            present = allocatable > 0
            share = np.divide(
                np.maximum(room[:, column], 0).astype(np.float64),
                allocatable.astype(np.float64),
                out=np.zeros(len(rows), dtype=np.float64),
                where=present,
            )
            total = total + share
            terms = terms + present
        return np.divide(total, terms, out=np.zeros(len(rows), dtype=np.float64), where=terms > 0)

    def row_mask(self, nodes: frozenset[str]) -> Mask:
        """Which rows hold one of `nodes`; remembered for the node set (a few sets, e.g. node selectors)."""
        memo = self.derived.setdefault("row-masks", {})
        assert isinstance(memo, dict)
        mask: Mask = by_value(memo, nodes, _ROW_MASK_MEMO_LIMIT, lambda: self._mask_of(nodes))
        return mask

    def _mask_of(self, nodes: frozenset[str]) -> Mask:
        mask = np.zeros(len(self.names), dtype=np.bool_)
        rows = self.rows_of(list(nodes))
        mask[rows[rows >= 0]] = True
        return mask

    def name_rank(self) -> Rows:
        """Each row's position in node-name order (vacant rows last): ties broken by name, in bulk."""
        known = self.derived.get("name-rank")
        if isinstance(known, np.ndarray):
            return known
        order = sorted(range(len(self.names)), key=lambda row: (not self.names[row], self.names[row]))
        rank = np.empty(len(self.names), dtype=np.intp)
        rank[np.asarray(order, dtype=np.intp)] = np.arange(len(order), dtype=np.intp)
        self.derived["name-rank"] = rank
        return rank


EMPTY_TABLE = CapacityTable()
