"""The forward run itself: every sampled future advanced together, event by event, as arrays (pure).

Columns are waiting gangs in rank order. At every instant each column that waits and whose start needs fit
in its future's free room starts (the first in rank order first, until none fits); a started column holds
its needs until it ends (`durations` after it started); a running job frees what it holds when its
`remaining` time is up. A column may begin to wait later (`arrive`: a later arrival), and may start at a
given time whether it fits or not (`forced`: room taken for it by preemption, lent from the free room, which
may go below zero so that the columns after it wait for as much to free again). Each step handles one
event in every future, so a run costs about as many array steps as there are jobs, whatever the number of
futures.
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
    arrive: np.ndarray | None = None,
    forced: np.ndarray | None = None,
) -> np.ndarray:
    """Start times (samples × columns; `inf`: not in that future) when the running jobs end after
    `remaining` and the waiting ones run for `durations` (both samples × jobs). The columns are
    `inputs.waiting` in rank order; `arrive` (samples × columns, 0 for a gang already waiting) is when each
    begins to wait (later arrivals); `never`: columns left out; `until`: stop once that column has started
    in every sample (the others' starts are then partial); `forced` (samples × columns): when each starts
    whether or not it fits (room taken by preemption, lent from the free capacity). Starts are counted
    until every column that waits from the start has started."""
    samples, running = remaining.shape[0], len(inputs.running)
    width = len(inputs.resources)
    needs = np.asarray([gang.needs for gang in inputs.waiting], dtype=np.float64).reshape(-1, width)
    if not len(needs):
        return np.zeros((samples, 0))
    holds = np.asarray([job.holds for job in inputs.running], dtype=np.float64).reshape(running, width)
    ends = np.full((samples, running + len(needs)), np.inf)
    ends[:, :running] = remaining
    released = np.concatenate([holds, needs])
    free = np.tile(np.asarray(inputs.free, dtype=np.float64), (samples, 1))
    starts = np.full((samples, len(needs)), np.inf)
    left_out = np.zeros(len(needs), dtype=bool) if never is None else never
    begins = np.zeros((samples, len(needs))) if arrive is None else arrive
    later = np.where(begins > 0, begins, np.inf)
    waiting = np.tile(~left_out, (samples, 1)) & (begins == 0)
    forced = np.full((samples, len(needs)), np.inf) if forced is None else np.where(waiting, forced, np.inf)
    watched = waiting.copy()
    """The columns waiting from the start: the run ends once none of them waits."""
    now = np.zeros(samples)
    rows = np.arange(samples)
    changed = rows
    while True:
        _admit(free, needs, waiting, starts, ends, durations, now, running, changed)
        left = (waiting & watched).any(axis=1)
        if not left.any() or (until is not None and not waiting[:, until].any()):
            return starts
        forced[~waiting] = np.inf
        nxt, come, take = ends.argmin(axis=1), later.argmin(axis=1), forced.argmin(axis=1)
        at, comes_at, takes_at = ends[rows, nxt], later[rows, come], forced[rows, take]
        taking_now = takes_at < np.minimum(at, comes_at)
        if taking_now.any():
            _take_room(
                rows[taking_now],
                take[taking_now],
                takes_at,
                free,
                needs,
                waiting,
                starts,
                ends,
                durations,
                now,
                running,
            )
            forced[rows[taking_now], take[taking_now]] = np.inf
            changed = rows[taking_now]
            continue
        arriving = comes_at < at
        live = np.isfinite(np.minimum(at, comes_at)) & left
        if not live.any():
            return starts
        ending = rows[live & ~arriving]
        now[ending] = at[ending]
        free[ending] += released[nxt[ending]]
        ends[ending, nxt[ending]] = np.inf
        new = rows[live & arriving]
        now[new] = comes_at[new]
        waiting[new, come[new]] = ~left_out[come[new]]
        later[new, come[new]] = np.inf
        changed = rows[live]


def _take_room(
    rows: np.ndarray,
    columns: np.ndarray,
    at: np.ndarray,
    free: np.ndarray,
    needs: np.ndarray,
    waiting: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    durations: np.ndarray,
    now: np.ndarray,
    offset: int,
) -> None:
    """Start `columns` in `rows` at `at` whether they fit or not: the room preemption takes is lent from the
    free capacity (it may go below zero), so the gangs after them wait for as much to free again."""
    now[rows] = at[rows]
    waiting[rows, columns] = False
    starts[rows, columns] = now[rows]
    ends[rows, offset + columns] = now[rows] + durations[rows, columns]
    free[rows] -= needs[columns]


def _admit(
    free: np.ndarray,
    needs: np.ndarray,
    waiting: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    durations: np.ndarray,
    now: np.ndarray,
    offset: int,
    rows: np.ndarray,
) -> None:
    """Start, in each sample of `rows` (those whose free room grew) at its `now`, each waiting gang that fits in
    rank order, until none fits."""
    slack = 1 + FIT_SLACK
    while len(rows):
        fits = waiting[rows]
        for column in range(needs.shape[1]):
            fits &= needs[None, :, column] <= free[rows, column, None] * slack + FIT_SLACK
        admitting = fits.any(axis=1)
        rows, first = rows[admitting], fits[admitting].argmax(axis=1)
        waiting[rows, first] = False
        starts[rows, first] = now[rows]
        ends[rows, offset + first] = now[rows] + durations[rows, first]
        free[rows] -= needs[first]
