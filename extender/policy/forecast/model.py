"""What the start-time forecast reads and answers, as plain values (pure).

`ForecastInputs` is the cluster as the forward run sees it — capacity and free room summed over the
schedulable nodes, the running gangs with what they hold and have run, the waiting gangs in rank order with
what they need to start, the run-time curve and the starving-to-start curve —
and `StartBand` is one gang's answer. `inputs.forecast_inputs` builds the first from a snapshot;
`montecarlo.forecast_starts` turns it into the second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from extender.policy.preemption.residual_life import RunTimes

QUANTILES = (0.1, 0.5, 0.9)
FIT_SLACK = 1e-9
"""Relative slack of the fit comparison (float round-off of summed capacities)."""


@dataclass(frozen=True, slots=True)
class Pool:
    """Schedulable nodes that the waiting gangs' pods may all go to or all not (node selectors, required node
    affinity, tolerations), their room summed, in the order of `ForecastInputs.resources`."""

    capacity: tuple[float, ...]
    free: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class RunningJob:
    key: str
    holds: tuple[float, ...]
    """What it holds, in the order of `ForecastInputs.resources`."""
    attained_s: float
    """Seconds it has run."""
    in_pools: tuple[tuple[float, ...], ...] = ()
    """What it holds in each of `ForecastInputs.pools` (empty when there is one pool: `holds`)."""
    grows: tuple[float, ...] = ()
    """The room the workers it may still gain would take (the scaler grows it into idle room); empty: it
    does not grow."""
    grows_in: int = 0
    """The pool it grows in (where it holds most)."""
    outranked_by: int = 0
    """How many of the first waiting gangs (in rank order) rank above it: it grows only while none of them
    waits."""


@dataclass(frozen=True, slots=True)
class WaitingGang:
    key: str
    needs: tuple[float, ...]
    """What it must be given to start (its minimum, less what its members already hold)."""
    smaller: tuple[tuple[int, tuple[float, ...]], ...] = ()
    """(workers, needs) at each smaller size its TFJob may start at, largest first (the what-if)."""
    workers: int = 0
    """The workers it starts with (0: not known, no TFJob with workers)."""
    starves_in_s: float = math.inf
    """Seconds from now until it starves (0: it does already); from then on the preemption loop may take
    room for it from running work."""
    starving_s: float = 0.0
    """How long it has starved already."""
    fits_now_workers: int | None = None
    """Workers the nodes hold now, node by node, beside its other replicas (-1: not even those;
    `packing.NodeRoom`); None: not counted (the summed room decides)."""
    fits_empty_workers: int | None = None
    """Workers the nodes would hold with all of them empty, node by node, beside its other replicas (-1:
    not even those); None: not counted."""
    pools: tuple[int, ...] = ()
    """The `ForecastInputs.pools` its pods may go to, the one it takes room from first first (empty: every
    pool, in order)."""
    kept_out: str = ""
    """A pending member no schedulable node admits (its node selector, required node affinity and
    tolerations), by name; "" when there is none."""

    @property
    def held_now(self) -> bool:
        """Its start needs fit in the summed room at best: node by node, its workers do not fit now."""
        return self.fits_now_workers is not None and self.workers > self.fits_now_workers

    @property
    def never_fits(self) -> bool:
        """No arrangement of the nodes holds it, even with every one of them empty."""
        return bool(self.kept_out) or (self.fits_empty_workers is not None and self.workers > self.fits_empty_workers)


@dataclass(frozen=True, slots=True)
class ForecastInputs:
    resources: tuple[str, ...]
    capacity: tuple[float, ...]
    """The schedulable nodes' allocatable, summed."""
    free: tuple[float, ...]
    """What they have left after bound pods and reserved plans, summed."""
    running: tuple[RunningJob, ...]
    waiting: tuple[WaitingGang, ...]
    """Highest rank first."""
    curve: RunTimes
    starving: RunTimes | None = None
    """The Kaplan–Meier curve of how long gangs took from starving to starting (those still starving
    censored): each waiting gang starts, room or not, that long after it starves (a draw, conditioned on
    how long it has starved). None: starving gangs are not counted on to start sooner than room frees."""
    pools: tuple[Pool, ...] = ()
    """The schedulable nodes split by which waiting pods they admit; empty: one pool, `capacity` and `free`."""

    def pooled(self) -> tuple[Pool, ...]:
        return self.pools or (Pool(self.capacity, self.free),)

    def capacity_of(self, gang: WaitingGang) -> tuple[float, ...]:
        """The allocatable of the nodes `gang`'s pods may go to, summed."""
        pools = self.pooled()
        chosen = gang.pools or range(len(pools))
        return tuple(sum(pools[index].capacity[r] for index in chosen) for r in range(len(self.resources)))


@dataclass(frozen=True, slots=True)
class StartBand:
    """Seconds from now to the gang's start: p10, p50, p90 (`None`: later than any draw could tell), or why
    there is no answer."""

    p10_s: float | None = None
    p50_s: float | None = None
    p90_s: float | None = None
    unknown: str = ""
    samples: int = 0

    @property
    def known(self) -> bool:
        return not self.unknown


def aged(band: StartBand, elapsed_s: float) -> StartBand:
    """`band` as it reads `elapsed_s` seconds after it was made, nothing else known since: each quantile that
    many seconds nearer, none below 0."""
    if not band.known or elapsed_s <= 0:
        return band
    return replace(
        band,
        p10_s=_nearer(band.p10_s, elapsed_s),
        p50_s=_nearer(band.p50_s, elapsed_s),
        p90_s=_nearer(band.p90_s, elapsed_s),
    )


def _nearer(value: float | None, elapsed_s: float) -> float | None:
    return None if value is None else max(0.0, value - elapsed_s)
