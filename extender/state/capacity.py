"""The mutable side of the dense capacity table: one row per node, written as the node's usage changes.

`ClusterState` calls `set_node` whenever it rebuilds a node's `NodeState` (a pod bound or gone, a
reservation held or dropped, the node itself changed) and `drop_node` when the node goes, so applying an
event still costs what it touches: one row. `freeze` hands a snapshot an immutable `CapacityTable`
sharing the arrays; the next write to shared arrays copies them first (one memcpy per snapshot taken,
never per event). Arrays grow by doubling as nodes appear; rows of removed nodes are reused.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from extender.policy.core.capacity import EMPTY_LAYOUT, CapacityTable, ColumnLayout, Mask, Matrix, Rows, clamp
from extender.policy.core.resources import Resources

_INITIAL_ROWS = 64


class CapacityLedger:
    def __init__(self) -> None:
        self._layout = EMPTY_LAYOUT
        self._names: list[str] = []
        self._rows: dict[str, int] = {}
        self._vacant: list[int] = []
        self._allocatable: Matrix = np.zeros((_INITIAL_ROWS, 0), dtype=np.int64)
        self._available: Matrix = np.zeros((_INITIAL_ROWS, 0), dtype=np.int64)
        self._schedulable: Mask = np.zeros(_INITIAL_ROWS, dtype=np.bool_)
        self._jobs: Rows = np.zeros(_INITIAL_ROWS, dtype=np.intp)
        self._allocatable_of: list[Resources | None] = []
        """The allocatable each row was last written from (a node's usage changes far more often)."""
        self._shared: set[str] = set()
        """Arrays (by attribute name) a frozen table holds: copied before the next write."""
        self._index_shared = False
        self._names_frozen: tuple[str, ...] | None = ()
        self._derived: dict[str, object] = {}
        self._frozen: CapacityTable | None = None

    def set_node(self, name: str, allocatable: Resources, available: Resources, schedulable: bool, jobs: int) -> None:
        """Write the node's row (adding the node, and any new resource names, as needed); `jobs`: distinct
        jobs (or pods without one) bound to it."""
        self._add_columns(allocatable.names() | available.names())
        row = self._rows.get(name)
        if row is None:
            row = self._add_row(name)
        if self._allocatable_of[row] is not allocatable:
            self._write(self._writable("_allocatable"), row, allocatable)
            self._allocatable_of[row] = allocatable
        self._write(self._writable("_available"), row, available)
        if self._schedulable[row] != schedulable:
            self._writable("_schedulable")[row] = schedulable
        if self._jobs[row] != jobs:
            self._writable("_jobs")[row] = jobs
        self._frozen = None

    def drop_node(self, name: str) -> None:
        row = self._rows.get(name)
        if row is None:
            return
        self._writable_index()
        del self._rows[name]
        self._names[row] = ""
        self._vacant.append(row)
        self._allocatable_of[row] = None
        self._writable("_allocatable")[row] = 0
        self._writable("_available")[row] = 0
        self._writable("_schedulable")[row] = False
        self._writable("_jobs")[row] = 0
        self._node_set_changed()

    def freeze(self) -> CapacityTable:
        if self._frozen is None:
            used = len(self._names)
            self._shared = {"_allocatable", "_available", "_schedulable", "_jobs"}
            self._index_shared = True
            if self._names_frozen is None:
                self._names_frozen = tuple(self._names)
            self._frozen = CapacityTable(
                layout=self._layout,
                names=self._names_frozen,
                rows=self._rows,
                allocatable=_read_only(self._allocatable[:used]),
                available=_read_only(self._available[:used]),
                schedulable=_read_only(self._schedulable[:used]),
                jobs=_read_only(self._jobs[:used]),
                derived=self._derived,
            )
        return self._frozen

    def _write(self, matrix: Matrix, row: int, resources: Resources) -> None:
        matrix[row] = 0
        index = self._layout.index
        for name, value in resources.items():
            matrix[row, index[name]] = clamp(value)

    def _add_row(self, name: str) -> int:
        self._writable_index()
        if self._vacant:
            row = self._vacant.pop()
            self._names[row] = name
        else:
            row = len(self._names)
            self._names.append(name)
            self._allocatable_of.append(None)
            if row >= len(self._schedulable):
                self._grow_rows(2 * len(self._schedulable))
        self._rows[name] = row
        self._node_set_changed()
        return row

    def _node_set_changed(self) -> None:
        self._names_frozen = None
        self._derived = {}
        self._frozen = None

    def _grow_rows(self, size: int) -> None:
        extra = size - len(self._schedulable)
        columns = len(self._layout.names)
        self._allocatable = np.vstack([self._allocatable, np.zeros((extra, columns), dtype=np.int64)])
        self._available = np.vstack([self._available, np.zeros((extra, columns), dtype=np.int64)])
        self._schedulable = np.concatenate([self._schedulable, np.zeros(extra, dtype=np.bool_)])
        self._jobs = np.concatenate([self._jobs, np.zeros(extra, dtype=np.intp)])
        self._shared.clear()

    def _add_columns(self, names: Iterable[str]) -> None:
        new = sorted(name for name in names if name not in self._layout.index)
        if not new:
            return
        self._layout = ColumnLayout.of((*self._layout.names, *new))
        padding = np.zeros((len(self._schedulable), len(new)), dtype=np.int64)
        self._allocatable = np.hstack([self._allocatable, padding])
        self._available = np.hstack([self._available, padding])
        self._shared.discard("_allocatable")
        self._shared.discard("_available")

    def _writable(self, attribute: str) -> np.ndarray:
        """The array named `attribute`, copied first if a frozen table still holds it."""
        array: np.ndarray = getattr(self, attribute)
        if attribute in self._shared:
            array = array.copy()
            setattr(self, attribute, array)
            self._shared.discard(attribute)
        return array

    def _writable_index(self) -> None:
        if self._index_shared:
            self._rows = dict(self._rows)
            self._index_shared = False


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
