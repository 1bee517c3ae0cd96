"""How many of a waiting job's workers the nodes can hold now, node by node (pure).

The forward run sums free room over the nodes, so a gang whose start needs fit in the sum may still not fit on
any real arrangement of nodes: its workers' room is scattered in pieces each too small for one (a GPU left on
a node whose CPU is taken). At the forecast's instant the nodes' free room is known row by row
(`CapacityTable.available`), so the forward run can tell such a gang apart: it is held until the first job
ends rather than started at once. The same count on the nodes' allocatable (`NodeRoom(table, empty=True)`)
tells a gang that no arrangement of the nodes could ever hold, even with every one of them empty (a worker
bigger than any node): its start is unknown, not a number. `NodeRoom.workers_fitting` places the job's other
replicas first fit, largest first, then counts the workers that fit in what is left (each node's room divided
by one worker's requests). Node selectors, taints and affinity are not read: the count is what room allows, an
upper bound on what the planner could place.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from extender.policy.core.capacity import CapacityTable, Demand
from extender.policy.core.resources import Resources

UNBOUNDED = 2**31 - 1
"""The count when a worker requests nothing the nodes count."""


class NodeRoom:
    """The schedulable nodes' free room now (or, `empty`, all they allocate), row by row, read once per
    refresh and asked per job."""

    def __init__(self, table: CapacityTable, *, empty: bool = False) -> None:
        self.table = table
        self.free = np.clip((table.allocatable if empty else table.available)[table.schedulable], 0, None)
        self.rows = np.arange(len(self.free))
        self._answers: dict[tuple[tuple[Resources, ...], Resources], int] = {}
        """By the job's shape: jobs of one shape get one answer (the room is only read)."""

    def workers_fitting(self, others: Sequence[Resources], worker: Resources) -> int:
        """Workers of `worker`'s requests that fit now once every pod of `others` has been placed; -1 when
        the others do not all fit."""
        shape = (tuple(others), worker)
        if shape not in self._answers:
            self._answers[shape] = self._fitting(others, worker)
        return self._answers[shape]

    def _fitting(self, others: Sequence[Resources], worker: Resources) -> int:
        table, room = self.table, self.free
        for demand in sorted((table.demand(request) for request in others), key=_size, reverse=True):
            fitting = np.flatnonzero(table.fits(self.rows, demand, room))
            if not len(fitting):
                return -1
            room = room.copy() if room is self.free else room
            room[fitting[0]] -= demand.vector
        per_worker = table.demand(worker)
        if per_worker.unknown:
            return 0
        if not len(per_worker.columns):
            return UNBOUNDED
        return int((room[:, per_worker.columns] // per_worker.amounts).min(axis=1).sum())


def _size(demand: Demand) -> int:
    return int(demand.amounts.sum())
