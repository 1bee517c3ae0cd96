"""The start-time forecast of every waiting gang, kept fresh and calibrated against its own past errors.

`StartForecaster.refresh(snapshot, clock, now)` runs the queue forward (`policy.forecast`) from the model and
the run times the preemption loop's `RunClock` has seen, corrects the bands by the errors of earlier
forecasts in this cluster (`policy.forecast.calibration`) and keeps the result for `/debug/gangs`,
`explain`, the page, the metrics and the Events. It refreshes only when the queue, the capacity or the
running set changed (the snapshot's generation) or `recheck_s` passed, at most every `refresh_s`. Every
`record_every_s`, a gang's raw forecast is kept open; when the gang starts (its first member bound: the
queue's `GangSummary.started`) each open forecast of it becomes a resolved record with the wait it really
had from when it was made; a gang that leaves the queue any other way (deleted, suspended) drops its open
forecasts. The forecaster is not thread-safe on its own: one thread refreshes, readers take `forecasts`
(an immutable mapping swapped whole).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from extender.loops.forecast_settings import StartForecastSettings
from extender.loops.run_clock import RunClock
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.forecast.calibration import (
    NO_CORRECTION,
    Correction,
    Corrections,
    ForecastRecord,
    adapted,
    corrected,
    corrections,
    overdue,
)
from extender.policy.forecast.inputs import forecast_inputs
from extender.policy.forecast.model import ForecastInputs, StartBand, aged
from extender.policy.forecast.montecarlo import forecast_starts, what_if
from extender.policy.rank.queue import queue_of

RESERVED_BAND = StartBand(0.0, 0.0, 0.0)
"""A gang whose plan is reserved starts now."""


@dataclass(frozen=True, slots=True)
class StartForecast:
    """A gang's band as published: corrected seconds from `as_of` (wall clock)."""

    band: StartBand
    as_of: float
    correction: Correction = NO_CORRECTION
    workers: int = 0
    """The workers its gang starts with (0 when it has no TFJob with workers)."""
    what_if: tuple[tuple[int, StartBand], ...] = ()
    """(workers, corrected band) at each smaller size its TFJob may start at, largest first."""


@dataclass
class StartForecaster:
    policy: PolicySettings
    settings: StartForecastSettings = field(default_factory=StartForecastSettings)
    forecasts: Mapping[str, StartForecast] = field(default_factory=lambda: MappingProxyType({}))
    """Gang key → its latest forecast (replaced whole on each refresh)."""
    resolved: deque[ForecastRecord] = field(init=False)
    starving_delays: deque[float] = field(init=False)
    """Seconds from starving to starting of the gangs seen start after they starved, the latest kept."""
    refreshes: int = 0
    last_refresh_s: float = 0.0
    """Seconds the last refresh took (the caller's measure, set by whoever times it)."""
    levels: tuple[float, float] = (0.0, 0.0)
    """The (lower, upper) levels the calibration's shifts are taken at (`calibration.adapted`)."""
    _open: dict[str, list[tuple[float, StartBand, StartBand]]] = field(default_factory=dict)
    _what_ifs: dict[str, tuple[float, tuple[tuple[int, StartBand], ...]]] = field(default_factory=dict)
    """Gang key → (when, its raw what-if bands then)."""
    _last: tuple[int, float] | None = None
    """(snapshot generation, when) of the last refresh."""

    def __post_init__(self) -> None:
        self.resolved = deque(maxlen=self.settings.calibration_kept)
        self.levels = (self.settings.coverage, self.settings.coverage)
        self.starving_delays = deque(maxlen=max(1, self.settings.starving_starts_kept))

    def due(self, snapshot: ClusterSnapshot, now: float) -> bool:
        """Whether a refresh is due at `now` for this snapshot."""
        if self._last is None:
            return True
        generation, at = self._last
        if now - at < self.settings.refresh_s:
            return False
        return generation != snapshot.generation or now - at >= self.settings.recheck_s

    def refresh(self, snapshot: ClusterSnapshot, clock: RunClock, now: float) -> Mapping[str, StartForecast]:
        """Forecast every waiting gang at `now` (wall clock, seconds since the epoch)."""
        self._last = (snapshot.generation, now)
        self.refreshes += 1
        self._resolve(snapshot, now)
        starving = list(self.starving_delays) if self.settings.starving_starts_kept else None
        inputs, reserved = forecast_inputs(
            snapshot,
            self.policy,
            now,
            list(clock.finished),
            clock.running(snapshot.jobs, now),
            starving,
            growth=self.settings.count_growth,
        )
        s = self.settings
        raw = forecast_starts(inputs, s.samples, self.refreshes, s.min_history)
        raw.update(dict.fromkeys(reserved, RESERVED_BAND))
        shifts = self.corrections(now)
        offset = s.calibration_offset_s
        sizes = self._what_ifs_at(inputs, now)
        workers = {gang.key: gang.workers for gang in inputs.waiting}
        published = {}
        for key, band in raw.items():
            shift = NO_CORRECTION if key in reserved else shifts.for_band(band)
            smaller = tuple((n, corrected(b, shifts.for_band(b), offset)) for n, b in sizes.get(key, ()))
            published[key] = StartForecast(corrected(band, shift, offset), now, shift, workers.get(key, 0), smaller)
            self._keep_open(key, band, published[key].band, now)
        self.forecasts = MappingProxyType(published)
        return self.forecasts

    def _what_ifs_at(self, inputs: ForecastInputs, now: float) -> dict[str, tuple[tuple[int, StartBand], ...]]:
        """Every waiting gang that may start smaller, with its raw band at each smaller size: computed anew for
        `what_if_gangs` of them per refresh, those longest without one first (a new gang before any, higher
        rank first among equals), the others' kept bands aged by the time since theirs was computed. A gang
        with no band at its size gets them too: a smaller size may fit."""
        s = self.settings
        elastic = [gang for gang in inputs.waiting if gang.smaller]
        computed = {gang.key: self._what_ifs[gang.key] for gang in elastic if gang.key in self._what_ifs}
        for gang in sorted(elastic, key=lambda gang: computed.get(gang.key, (-math.inf,))[0])[: s.what_if_gangs]:
            computed[gang.key] = (now, what_if(inputs, gang.key, s.what_if_samples, self.refreshes, s.min_history))
        self._what_ifs = computed
        return {key: tuple((n, aged(band, now - at)) for n, band in bands) for key, (at, bands) in computed.items()}

    def corrections(self, now: float) -> Corrections:
        """The shifts from the resolved forecasts, and from those of gangs still waiting past their p90."""
        s = self.settings
        late = [miss for kept in self._open.values() if (miss := _latest_overdue(kept, now)) is not None]
        return corrections(list(self.resolved), self.levels, s.calibration_offset_s, s.calibration_min_records, late)

    def _keep_open(self, key: str, band: StartBand, published: StartBand, now: float) -> None:
        """Watch the gang until it starts; keep its forecast (raw and as published) every `record_every_s`
        when it has one."""
        kept = self._open.setdefault(key, [])
        if band is RESERVED_BAND or not band.known:
            return
        if not kept or now - kept[-1][0] >= self.settings.record_every_s:
            kept.append((now, band, published))

    def _resolve(self, snapshot: ClusterSnapshot, now: float) -> None:
        """Turn the open forecasts of gangs that started into records; drop those of gangs gone."""
        if not self._open:
            return
        summaries = queue_of(snapshot, self.policy).summaries
        for key in list(self._open):
            summary = summaries.get(key)
            if summary is not None and summary.ages:
                continue
            made = self._open.pop(key)
            if summary is None or not summary.bound_pods:
                continue
            started = summary.started or now
            for at, band, published in made:
                record = ForecastRecord(band, at, max(0.0, started - at), published)
                self.resolved.append(record)
                self.levels = adapted(self.levels, record, self.settings.coverage, self.settings.calibration_step)
            starved_at = summary.arrival + self.policy.starvation_limit_s if summary.arrival else math.inf
            if started > starved_at:
                self.starving_delays.append(started - starved_at)


def _latest_overdue(kept: Sequence[tuple[float, StartBand, StartBand]], now: float) -> ForecastRecord | None:
    """The latest of one waiting gang's kept forecasts whose p90 has passed (one per gang, however long it
    has waited)."""
    return next((miss for at, band, _ in reversed(kept) if (miss := overdue(band, at, now)) is not None), None)
