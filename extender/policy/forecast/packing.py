"""How many of a waiting job's workers the nodes can hold now, node by node (pure).

The forward run sums free room over the nodes, so a gang whose start needs fit in the sum may still not fit on
any real arrangement of nodes: its workers' room is scattered in pieces each too small for one (a GPU left on
a node whose CPU is taken). At the forecast's instant the nodes' free room is known row by row
(`CapacityTable.available`), so the forward run can tell such a gang apart: it is held until the first job
ends rather than started at once. On the nodes' allocatable (`NodeRoom(table, empty=True)`), a count that can
only err high (`workers_at_most`) tells a gang that no arrangement of the nodes could ever hold, even with
every one of them empty (a worker bigger than any node): its start is unknown, not a number.
`NodeRoom.workers_fitting` places the job's other replicas first fit, largest first, then counts the workers
that fit in what is left (each node's room divided by one worker's requests). Node selectors, taints and
affinity are not read: the count is what room allows, an upper bound on what the planner could place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from extender.policy.core.capacity import CapacityTable, Demand
from extender.policy.core.resources import Resources

UNBOUNDED = 2**31 - 1
"""The count when a worker requests nothing the nodes count."""


class NodeRoom:
    """The schedulable nodes' free room now (or, `empty`, all they allocate), row by row, read once per
    refresh and asked per job. Answers are kept by the job's shape (the room is only read)."""

    def __init__(self, table: CapacityTable, *, empty: bool = False) -> None:
        self.table = table
        self.free = np.clip((table.allocatable if empty else table.available)[table.schedulable], 0, None)
        self.rows = np.arange(len(self.free))
        self._answers: dict[tuple[str, tuple[Resources, ...], Resources], int] = {}

    def workers_fitting(self, others: Sequence[Resources], worker: Resources) -> int:
        """Workers of `worker`'s requests that fit once every pod of `others` has been placed first fit,
        largest first; -1 when the others do not all fit."""
        return self._answer("first-fit", others, worker, self._first_fit)

    def workers_at_most(self, others: Sequence[Resources], worker: Resources) -> int:
        """At least as many workers as any arrangement of `others` and them holds: every worker's room less
        the fewest any one of the others costs wherever it goes (exact for one other pod, never below the
        truth for more); -1 when one of the others fits no node on its own."""
        return self._answer("at-most", others, worker, self._at_most)

    def _answer(
        self,
        kind: str,
        others: Sequence[Resources],
        worker: Resources,
        compute: Callable[[Sequence[Resources], Resources], int],
    ) -> int:
        key = (kind, tuple(others), worker)
        if key not in self._answers:
            self._answers[key] = compute(others, worker)
        return self._answers[key]

    def _first_fit(self, others: Sequence[Resources], worker: Resources) -> int:
        table, room = self.table, self.free
        for demand in sorted((table.demand(request) for request in others), key=_size, reverse=True):
            fitting = np.flatnonzero(table.fits(self.rows, demand, room))
            if not len(fitting):
                return -1
            room = room.copy() if room is self.free else room
            room[fitting[0]] -= demand.vector
        return _total(self._per_node(room, worker))

    def _at_most(self, others: Sequence[Resources], worker: Resources) -> int:
        table, room = self.table, self.free
        counts = self._per_node(room, worker)
        fewest_lost = 0
        for request in others:
            demand = table.demand(request)
            fitting = np.flatnonzero(table.fits(self.rows, demand, room))
            if not len(fitting):
                return -1
            if counts is not None:
                left = self._per_node(room[fitting] - demand.vector, worker)
                assert left is not None
                fewest_lost = max(fewest_lost, int((counts[fitting] - left).min()))
        return _total(counts) - fewest_lost if counts is not None else UNBOUNDED

    def _per_node(self, room: np.ndarray, worker: Resources) -> np.ndarray | None:
        """How many workers each row of `room` holds; None when a worker requests nothing the nodes count."""
        per_worker = self.table.demand(worker)
        if per_worker.unknown:
            return np.zeros(len(room), dtype=np.int64)
        if not len(per_worker.columns):
            return None
        counts: np.ndarray = (room[:, per_worker.columns] // per_worker.amounts).min(axis=1)
        return counts


def _total(counts: np.ndarray | None) -> int:
    return UNBOUNDED if counts is None else int(counts.sum())


def _size(demand: Demand) -> int:
    return int(demand.amounts.sum())
