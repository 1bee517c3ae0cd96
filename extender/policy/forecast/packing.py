"""How many of a waiting job's workers the nodes can hold now, node by node (pure).

The forward run sums free room over the nodes, so a gang whose start needs fit in the sum may still not fit on
any real arrangement of nodes: its workers' room is scattered in pieces each too small for one (a GPU left on
a node whose CPU is taken). At the forecast's instant the nodes' free room is known row by row
(`CapacityTable.available`), so the forward run can tell such a gang apart: it is held until the first job
ends rather than started at once. On the nodes' allocatable (`NodeRoom(table, empty=True)`), a count that can
only err high (`workers_at_most`) tells a gang that no arrangement of the nodes could ever hold, even with
every one of them empty (a worker bigger than any node): its start is unknown, not a number.
`NodeRoom.workers_fitting` places the job's other replicas first fit, largest first, then counts the workers
that fit in what is left (each node's room divided by one worker's requests), each pod only on the nodes its
node selector, required node affinity and tolerations admit (`Ask`). Pod affinity and topology spread are not
read: the count is what room allows, an upper bound on what the planner could place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from extender.policy.core.capacity import CapacityTable, Demand
from extender.policy.core.resources import Resources

UNBOUNDED = 2**31 - 1
"""The count when a worker requests nothing the nodes count."""


@dataclass(frozen=True, slots=True)
class Ask:
    """One pod's requests and the nodes it may go to (its node selector, required node affinity and
    tolerations: `gang.room.selected_nodes`); None: any node."""

    requests: Resources
    nodes: frozenset[str] | None = None


class NodeRoom:
    """The schedulable nodes' free room now (or, `empty`, all they allocate), row by row, read once per
    refresh and asked per job. Answers are kept by the job's shape (the room is only read)."""

    def __init__(self, table: CapacityTable, *, empty: bool = False) -> None:
        self.table = table
        self.free = np.clip((table.allocatable if empty else table.available)[table.schedulable], 0, None)
        self.rows = np.arange(len(self.free))
        self._answers: dict[tuple[str, tuple[Ask, ...], Ask], int] = {}

    def workers_fitting(self, others: Sequence[Ask], worker: Ask) -> int:
        """Workers of `worker`'s asking that fit once every pod of `others` has been placed first fit,
        largest first, each on a node it may go to; -1 when the others do not all fit."""
        return self._answer("first-fit", others, worker, self._first_fit)

    def workers_at_most(self, others: Sequence[Ask], worker: Ask) -> int:
        """At least as many workers as any arrangement of `others` and them holds: every worker's room less
        the fewest any one of the others costs wherever it may go (exact for one other pod, never below the
        truth for more); -1 when one of the others fits no node it may go to on its own."""
        return self._answer("at-most", others, worker, self._at_most)

    def _answer(
        self, kind: str, others: Sequence[Ask], worker: Ask, compute: Callable[[Sequence[Ask], Ask], int]
    ) -> int:
        key = (kind, tuple(others), worker)
        if key not in self._answers:
            self._answers[key] = compute(others, worker)
        return self._answers[key]

    def _first_fit(self, others: Sequence[Ask], worker: Ask) -> int:
        room = self.free
        asked = [(self.table.demand(ask.requests), ask) for ask in others]
        for demand, ask in sorted(asked, key=lambda pair: _size(pair[0]), reverse=True):
            fitting = np.flatnonzero(self._fits(ask, demand, room))
            if not len(fitting):
                return -1
            room = room.copy() if room is self.free else room
            room[fitting[0]] -= demand.vector
        return _total(self._per_node(room, worker))

    def _at_most(self, others: Sequence[Ask], worker: Ask) -> int:
        room = self.free
        counts = self._per_node(room, worker)
        fewest_lost = 0
        for ask in others:
            demand = self.table.demand(ask.requests)
            fitting = np.flatnonzero(self._fits(ask, demand, room))
            if not len(fitting):
                return -1
            if counts is not None:
                left = self._per_node(room[fitting] - demand.vector, worker, fitting)
                assert left is not None
                fewest_lost = max(fewest_lost, int((counts[fitting] - left).min()))
        return _total(counts) - fewest_lost if counts is not None else UNBOUNDED

    def _fits(self, ask: Ask, demand: Demand, room: np.ndarray) -> np.ndarray:
        fits: np.ndarray = self.table.fits(self.rows, demand, room)
        allowed = self._allowed(ask)
        return fits if allowed is None else fits & allowed

    def _allowed(self, ask: Ask) -> np.ndarray | None:
        """Which rows `ask` may go to; None: every one."""
        if ask.nodes is None:
            return None
        allowed: np.ndarray = self.table.row_mask(ask.nodes)[self.table.schedulable]
        return allowed

    def _per_node(self, room: np.ndarray, worker: Ask, rows: np.ndarray | None = None) -> np.ndarray | None:
        """How many workers each row of `room` holds (`rows`: which of the room's rows those are, when not
        all); None when a worker requests nothing the nodes count."""
        per_worker = self.table.demand(worker.requests)
        if per_worker.unknown:
            return np.zeros(len(room), dtype=np.int64)
        if not len(per_worker.columns):
            return None
        counts: np.ndarray = (room[:, per_worker.columns] // per_worker.amounts).min(axis=1)
        allowed = self._allowed(worker)
        if allowed is not None:
            counts = np.where(allowed if rows is None else allowed[rows], counts, 0)
        return counts


def _total(counts: np.ndarray | None) -> int:
    return UNBOUNDED if counts is None else int(counts.sum())


def _size(demand: Demand) -> int:
    return int(demand.amounts.sum())
