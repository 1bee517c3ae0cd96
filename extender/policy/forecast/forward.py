"""The forward run itself: every sampled future advanced together, event by event, as arrays (pure).

Columns are waiting gangs in rank order. At every instant each column that waits and whose start needs fit
in its future's free room, summed over the pools its pods may go to (`pools`), starts (the first in rank
order first, until none fits), taking from those pools in its order; a started column holds what it took
until it ends (`durations` after it started); a running job frees what it holds when its
`remaining` time is up. A column may start at a given time whether it fits or not (`forced`: room taken
for it by preemption, lent from the free room, which may go below zero so that the columns after it wait
for as much to free again). A column `held_now` (its room is in pieces too small for its pods, node by
node: `packing`) does not start at the first instant: it waits at least until the first job ends. What no
column takes is grown into, as the scaler does: each running job that may gain workers
(`grows`) and that no still-waiting column outranks takes its share of the room left in its pool (the
same share of what it may still gain as every other grower asking for the resource that is shortest for
it; a job asking for a resource none is left of takes nothing), and gives it back when it ends. Each step
handles one event in every future, so a run costs about as many array steps as there are jobs, whatever the
number of futures; the next event is read without scanning every job (the running jobs' ends are sorted
once, the earliest of the started columns' ends and of the forced starts is kept as they change), and the
fit test compares only the resources some future is short of.
"""

from __future__ import annotations

import numpy as np

from extender.policy.forecast.model import FIT_SLACK, ForecastInputs


def starts_given(
    inputs: ForecastInputs,
    remaining: np.ndarray,
    durations: np.ndarray,
    never: np.ndarray | None = None,
    until: int | None = None,
    forced: np.ndarray | None = None,
) -> np.ndarray:
    """Start times (samples × columns; `inf`: not in that future) when the running jobs end after
    `remaining` and the waiting ones run for `durations` (both samples × jobs). The columns are
    `inputs.waiting` in rank order; `never`: columns left out; `until`: stop once that column has started
    in every sample (the others' starts are then partial); `forced` (samples × columns): when each starts
    whether or not it fits (room taken by preemption). A gang `held_now` does not start at time 0."""
    samples = remaining.shape[0]
    if not inputs.waiting:
        return np.zeros((samples, 0))
    run = _Futures(inputs, remaining, durations, never, forced)
    rows = np.arange(samples)
    changed = rows
    while True:
        run.admit(changed)
        left = run.waiting.any(axis=1)
        if not left.any() or (until is not None and not run.waiting[:, until].any()):
            return run.starts
        at, nxt = run.next_end()
        if run.forced is not None:
            takes_at = run.forced.at
            taking = takes_at < at
            if taking.any():
                changed = rows[taking]
                run.now[changed] = takes_at[changed]
                run.start(changed, run.forced.slot[changed])
                continue
        live = np.isfinite(at) & left
        if not live.any():
            return run.starts
        changed = rows[live]
        run.now[changed] = at[changed]
        run.end(changed, nxt[changed])


NOTHING = 1e-9
"""Divides in place of zero: a resource no grower may take has no share to divide."""


class _Futures:
    """Every sampled future's state, as arrays with one row per future; free room per pool (samples × pools
    × resources)."""

    def __init__(
        self,
        inputs: ForecastInputs,
        remaining: np.ndarray,
        durations: np.ndarray,
        never: np.ndarray | None,
        forced: np.ndarray | None,
    ) -> None:
        samples, running, width = remaining.shape[0], len(inputs.running), len(inputs.resources)
        pools = inputs.pooled()
        self.needs = np.asarray([gang.needs for gang in inputs.waiting], dtype=np.float64).reshape(-1, width)
        columns = len(self.needs)
        self.bars = (self.needs - FIT_SLACK) / (1 + FIT_SLACK)
        """The least room each column fits in, per resource (its needs less the fit's slack)."""
        self.top = self.bars.max(axis=0, initial=-np.inf)
        """The largest bar per resource (room above it fits every column)."""
        self.order = _pool_order(inputs, len(pools))
        groups: dict[tuple[int, ...], list[int]] = {}
        for column, order in enumerate(self.order):
            groups.setdefault(tuple(sorted(order[order >= 0])), []).append(column)
        bars_of = [
            np.where(np.isin(np.arange(columns), chosen)[:, None], self.bars, -np.inf) for chosen in groups.values()
        ]
        self.groups = [
            (np.asarray(pools, dtype=np.intp), bars, bars.max(axis=0, initial=-np.inf))
            for pools, bars in zip(groups, bars_of, strict=True)
        ]
        """The columns that may take room from the same pools: those pools, every column's bars where the
        others' are `-inf` (they pass, so the groups' fits are combined with `&`), and the largest bar."""
        holds = np.asarray([job.in_pools or (job.holds,) for job in inputs.running], dtype=np.float64).reshape(
            running, len(pools), width
        )
        self.running = running
        self.durations = durations
        self.rows = np.arange(samples)
        by_end = np.argsort(remaining, axis=1, kind="stable")
        self.sorted_ends = np.concatenate(
            [np.take_along_axis(remaining, by_end, axis=1), np.full((samples, 1), np.inf)], axis=1
        )
        self.by_end = np.concatenate([by_end, np.zeros((samples, 1), dtype=np.intp)], axis=1)
        self.ended = np.zeros(samples, dtype=np.intp)
        """The running jobs in the order they end, per future, and how many of them have ended."""
        self.column_ends = _Earliest(np.full((samples, columns), np.inf))
        self.single = len(pools) == 1
        """One pool: what a waiting job frees is what it needs, the same in every future."""
        if self.single:
            self.released = np.concatenate([holds[:, 0], self.needs])
        else:
            self.released = np.zeros((samples, running + columns, len(pools), width))
            self.released[:, :running] = holds
        """What each job frees when it ends (jobs × resources with one pool; else futures × jobs × pools ×
        resources, a waiting job freeing what it took from each pool when it started)."""
        self.free = np.tile(np.asarray([pool.free for pool in pools], dtype=np.float64), (samples, 1, 1))
        self.starts = np.full((samples, columns), np.inf)
        left_out = np.zeros(columns, dtype=bool) if never is None else never
        self.waiting = np.tile(~left_out, (samples, 1))
        self.forced = None if forced is None else _Earliest(np.where(self.waiting, forced, np.inf))
        self.now = np.zeros(samples)
        held = np.asarray([gang.held_now for gang in inputs.waiting], dtype=bool)
        self.held = held if held.any() else None
        """Columns that do not start at the first instant (time 0)."""
        self._growers(inputs, samples, width)

    def _growers(self, inputs: ForecastInputs, samples: int, width: int) -> None:
        """The running jobs the scaler may grow, in groups of those behind the same waiting columns, in the same
        pool, asking for the same resources: a group's members always take the same share of what they may
        still gain, so the run keeps one share per group, and what its members still alive may gain."""
        growers = [(index, job) for index, job in enumerate(inputs.running) if any(job.grows)]
        self.grows = np.asarray([job.grows for _, job in growers], dtype=np.float64).reshape(-1, width)
        keys = [(job.outranked_by, job.grows_in, tuple(amount > 0 for amount in job.grows)) for _, job in growers]
        groups = sorted(set(keys))
        group_of = {key: number for number, key in enumerate(groups)}
        self.group_of = np.asarray([group_of[key] for key in keys], dtype=np.intp)
        self.group_above = np.asarray([key[0] for key in groups], dtype=np.intp)
        self.group_pool = np.asarray([key[1] for key in groups], dtype=np.intp)
        self.group_asks = np.asarray([key[2] for key in groups], dtype=bool).reshape(-1, width)
        self.in_pool = np.zeros((len(groups), self.free.shape[1]))
        self.in_pool[np.arange(len(groups)), self.group_pool] = 1.0
        """Which pool each group grows in (groups × pools, one 1 a row)."""
        self.grower_of = np.full(self.running + len(self.needs), -1, dtype=np.intp)
        self.grower_of[[index for index, _ in growers]] = np.arange(len(growers))
        alive = np.zeros((len(groups), width))
        np.add.at(alive, self.group_of, self.grows)
        self.alive_grows = np.tile(alive, (samples, 1, 1))
        """What each group's members still running may gain in all (samples × groups × resources)."""
        self.ungrown = np.ones((samples, len(groups)))
        """The share of that each group has not taken yet (samples × groups)."""

    def grow(self, rows: np.ndarray) -> None:
        """In each future of `rows`, the growers no waiting column outranks take the room left: each the
        largest share of what it may still take that the room left of every resource it asks for allows,
        shared by all that ask for it (together they never take more than is left). A future where nothing
        waits any more may grow too: nothing after it depends on its room."""
        if not len(self.group_above) or not len(rows):
            return
        left = self.ungrown[rows] * (self.waiting[rows].argmax(axis=1)[:, None] >= self.group_above)
        if len(self.group_above) == 1:
            pool, asks = self.group_pool[0], self.group_asks[0]
            wants = left * self.alive_grows[rows, 0]
            ratio = np.maximum(self.free[rows, pool], 0.0) / np.maximum(wants, NOTHING)
            share = np.minimum(ratio[:, asks].min(axis=1, keepdims=True), 1.0)
            self.free[rows, pool] -= wants * share
        else:
            wants = left[:, :, None] * self.alive_grows[rows]
            total = np.einsum("rgw,gp->rpw", wants, self.in_pool)
            ratio = np.maximum(self.free[rows], 0.0) / np.maximum(total, NOTHING)
            share = np.minimum(np.where(self.group_asks, ratio[:, self.group_pool], np.inf).min(axis=2), 1.0)
            self.free[rows] -= np.einsum("rgw,gp->rpw", wants * share[:, :, None], self.in_pool)
        self.ungrown[rows] -= left * share

    def admit(self, rows: np.ndarray) -> None:
        """Start, in each future of `rows` at its `now`, each waiting column that fits in rank order (the
        `held` ones only after time 0), until none fits; then the growers take what is left."""
        given = rows
        while len(rows):
            fits = self.waiting[rows]
            if self.held is not None:
                fits &= ~(self.held[None, :] & (self.now[rows] == 0)[:, None])
            if self.single:
                fits &= _fitting(self.bars, self.top, self.free[rows, 0])
            else:
                free = self.free[rows]
                for pools, bars, top in self.groups:
                    fits &= _fitting(bars, top, free[:, pools].sum(axis=1))
            admitting = fits.any(axis=1)
            rows = rows[admitting]
            self.start(rows, fits[admitting].argmax(axis=1))
        self.grow(given)

    def start(self, rows: np.ndarray, columns: np.ndarray) -> None:
        """Start `columns` in `rows` now, fitting or not: each takes its needs from its pools in order, and
        what does not fit is lent from the first (it goes below zero, so that what starts after waits for as
        much to free again)."""
        if not len(rows):
            return
        self.waiting[rows, columns] = False
        self.starts[rows, columns] = self.now[rows]
        self.column_ends.add(rows, columns, self.now[rows] + self.durations[rows, columns])
        if self.forced is not None:
            self.forced.clear(rows, columns)
        if self.single:
            self.free[rows, 0] -= self.needs[columns]
            return
        taken = self._taken(rows, columns)
        self.free[rows] -= taken
        self.released[rows, self.running + columns] = taken

    def _taken(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """What each started column takes from each pool (rows × pools × resources)."""
        left: np.ndarray = self.needs[columns].copy()
        taken = np.zeros((len(rows), *self.free.shape[1:]))
        each = np.arange(len(rows))
        for step in range(self.order.shape[1]):
            pool = self.order[columns, step]
            open_ = pool >= 0
            pool = np.maximum(pool, 0)
            take = np.where(open_[:, None], np.minimum(left, np.maximum(self.free[rows, pool], 0.0)), 0.0)
            taken[each, pool] += take
            left -= take
        taken[each, self.order[columns, 0]] += left
        return taken

    def next_end(self) -> tuple[np.ndarray, np.ndarray]:
        """In every future, when the next job ends and which (`inf` and any job where none is left)."""
        running_at = self.sorted_ends[self.rows, self.ended]
        column_first = self.column_ends.at < running_at
        at = np.where(column_first, self.column_ends.at, running_at)
        job = np.where(column_first, self.running + self.column_ends.slot, self.by_end[self.rows, self.ended])
        return at, job

    def end(self, rows: np.ndarray, jobs: np.ndarray) -> None:
        """End `jobs` (running jobs first, then columns) in `rows`, each the next to end in its future."""
        if self.single:
            self.free[rows, 0] += self.released[jobs]
        else:
            self.free[rows] += self.released[rows, jobs]
        column = jobs >= self.running
        self.ended[rows[~column]] += 1
        if column.any():
            self.column_ends.clear(rows[column], jobs[column] - self.running)
        grower = self.grower_of[jobs]
        grew = grower >= 0
        if grew.any():
            rows, grower = rows[grew], grower[grew]
            group = self.group_of[grower]
            self.free[rows, self.group_pool[group]] += self.grows[grower] * (1.0 - self.ungrown[rows, group])[:, None]
            self.alive_grows[rows, group] -= self.grows[grower]


class _Earliest:
    """The earliest of each future's times (samples × slots) and its slot, kept as single times change."""

    def __init__(self, times: np.ndarray) -> None:
        self.times = times
        self.slot = times.argmin(axis=1)
        self.at = times[np.arange(len(times)), self.slot]

    def add(self, rows: np.ndarray, slots: np.ndarray, times: np.ndarray) -> None:
        """Give an empty (`inf`) slot a time in each of `rows` (each row once)."""
        self.times[rows, slots] = times
        earlier = times < self.at[rows]
        rows = rows[earlier]
        self.slot[rows] = slots[earlier]
        self.at[rows] = times[earlier]

    def clear(self, rows: np.ndarray, slots: np.ndarray) -> None:
        """Empty one slot in each of `rows` (each row once)."""
        self.times[rows, slots] = np.inf
        again = rows[slots == self.slot[rows]]
        if len(again):
            self.slot[again] = self.times[again].argmin(axis=1)
            self.at[again] = self.times[again, self.slot[again]]


def _fitting(bars: np.ndarray, top: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Whether each column of `bars` (columns × resources: the least room it fits in) fits in `room` (rows ×
    resources), row by row. A resource of which every row has at least `top` (the largest bar) is not
    compared."""
    short = np.flatnonzero(room.min(axis=0) < top)
    if not len(short):
        return np.ones((len(room), len(bars)), dtype=bool)
    fits: np.ndarray = bars[None, :, short[0]] <= room[:, short[0], None]
    for resource in short[1:]:
        fits &= bars[None, :, resource] <= room[:, resource, None]
    return fits


def _pool_order(inputs: ForecastInputs, pools: int) -> np.ndarray:
    """Each waiting gang's pools in the order it takes room from them (columns × pools, -1 past its last)."""
    order = np.full((len(inputs.waiting), pools), -1, dtype=np.intp)
    for column, gang in enumerate(inputs.waiting):
        chosen = gang.pools or tuple(range(pools))
        order[column, : len(chosen)] = chosen
    return order
