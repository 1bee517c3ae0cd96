"""Expected remaining run time of a running job, from the run times of the jobs seen finish (pure).

Run times of training jobs are heavy-tailed (Philly, Helios): most jobs are short, a few run for hours,
and a job that has already run long is likely to run much longer. Tiresias exploits this by ranking on
attained service and suspending jobs that have had most. Whether it pays depends on the distribution:
with light-tailed run times a job that has run long is nearly done, and suspending it only delays it.
So the loop asks the data: the Kaplan–Meier estimate of the run-time distribution, from the run times
of the jobs that finished and the time the running ones have run so far (censored), gives each running
job's mean residual life — its expected remaining run time given what it has run. A job is worth
suspending for a newcomer only when that exceeds the mean run time of a job that has just started.
With increasing mean residual life (heavy tails) long runners qualify; with decreasing (light tails)
none ever does. The estimate is restricted to the longest run time seen, so it never extrapolates.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, slots=True)
class RunTimes:
    """The Kaplan–Meier survival curve of run times, with the area under it from each step to the end."""

    times: tuple[float, ...]
    """Distinct observed run times, ascending."""
    survival: tuple[float, ...]
    """The estimated share of jobs running longer than each of `times`."""
    area_after: tuple[float, ...]
    """∫ survival from each of `times` to the last one."""
    finished: int
    """How many finished run times the curve is built from."""

    @classmethod
    def estimate(cls, finished: Iterable[float], running: Iterable[float]) -> RunTimes:
        """The curve from the run times of finished jobs (events) and the time running jobs have run so
        far (censored: they run at least that long). Vectorised: a pass costs a sort of the observations."""
        ended = np.fromiter(finished, dtype=np.float64)
        censored = np.fromiter(running, dtype=np.float64)
        observed = np.maximum(np.concatenate([ended, censored]), 0.0)
        if not len(observed):
            return cls((), (), (), 0)
        is_event = np.concatenate([np.ones(len(ended)), np.zeros(len(censored))])
        order = np.argsort(observed, kind="stable")
        times, first = np.unique(observed[order], return_index=True)
        events = np.add.reduceat(is_event[order], first)
        at_risk = len(observed) - first
        survival = np.cumprod(1.0 - events / at_risk)
        widths = np.diff(times)
        area = np.zeros(len(times))
        area[:-1] = np.cumsum((survival[:-1] * widths)[::-1])[::-1]
        return cls(tuple(times.tolist()), tuple(survival.tolist()), tuple(area.tolist()), len(ended))

    def residual(self, attained: float) -> float:
        """Expected further run time of a job that has run `attained` seconds: ∫ S from `attained` to the
        last observed time, over S(attained); 0 past the last observed time or when no job is seen."""
        if not self.times or attained >= self.times[-1]:
            return 0.0
        step = bisect.bisect_right(self.times, attained)
        alive = self.survival[step - 1] if step > 0 else 1.0
        if alive <= 0.0:
            return 0.0
        area = alive * (self.times[step] - attained) + self.area_after[step]
        return area / alive


@dataclass(frozen=True, slots=True)
class Suspendable:
    """The running TFJobs a fresh gang may suspend, by why."""

    long_runners: frozenset[str] = frozenset()
    """Expected to run on for longer than a fresh job runs in all (`suspension_margins`): any fresh gang of
    their PriorityClass or a higher one may suspend them."""
    newcomers: frozenset[str] = frozenset()
    """Started running at most `suspension_newcomer_s` ago and never suspended before: a starving gang of
    their PriorityClass or a higher one may suspend them (they lose little work, and are not demoted)."""
    margins_s: Mapping[str, float] = field(default_factory=dict, compare=False)
    """Long runner → seconds its expected further run exceeds a fresh job's whole run (`suspension_margins`):
    suspending it pays only when it loses less than this (its lost training and restart, `taking_cost`).
    A long runner not listed has no bound. Not compared: the margins move with every second run."""

    def __bool__(self) -> bool:
        return bool(self.long_runners or self.newcomers)


NO_SUSPENSIONS = Suspendable()


def suspension_margins(curve: RunTimes, attained: Mapping[str, float], min_history: int) -> dict[str, float]:
    """The jobs (of `attained`: job → seconds run) expected to run on for longer than a job that has just
    started runs in all, each with by how much (seconds): Tiresias' gain from letting the fresh job go
    first, before what the suspension costs the job itself. None until `min_history` finished run times
    are known."""
    if curve.finished < min_history:
        return {}
    fresh = curve.residual(0.0)
    margins = {job: curve.residual(ran) - fresh for job, ran in attained.items() if ran > 0}
    return {job: margin for job, margin in margins.items() if margin > 0}
