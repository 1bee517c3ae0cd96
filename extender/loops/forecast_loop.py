"""The start-time forecast's thread in the loops' process: refresh when due, say it where users look.

Ticks every `refresh_s` (`Ticker`) and refreshes the `StartForecaster` when the model changed or
`recheck_s` passed, from the run times the preemption loop's clock has seen (so it answers "unknown" on a
standby instance, whose clock sees no runs). Never on the verb path: the verbs' process reads nothing of it.
What it publishes is read by `/debug/gangs`, `/debug/explain`, the page and the metrics (`forecast_of`). While
the preemption loop leads, it writes an Event on a TFJob whose p50 moved by more than `event_change_share` of
the last one it wrote (or that got its first forecast), at most once per `event_interval_s` for each job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from extender.loops.actuator import Actuator
from extender.loops.forecast_settings import StartForecastSettings
from extender.loops.run_clock import RunClock
from extender.loops.start_forecast import StartForecast, StartForecaster
from extender.loops.ticking import Ticker
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.forecast.wording import start_phrase
from extender.policy.rank.queue import queue_of
from extender.state.store import ClusterState

log = logging.getLogger(__name__)

EVENT_REASON = "StartForecast"


@dataclass
class ForecastLoop:
    state: ClusterState
    policy: PolicySettings
    run_clock: Callable[[], RunClock]
    clock: Callable[[], float]
    settings: StartForecastSettings = field(default_factory=StartForecastSettings)
    actuator: Actuator | None = None
    leading: Callable[[], bool] = lambda: False
    forecaster: StartForecaster = field(init=False)
    _told: dict[str, tuple[float, float]] = field(default_factory=dict)
    """TFJob key → (p50 seconds from then, when) of the last Event written about it."""
    _ticker: Ticker | None = None

    def __post_init__(self) -> None:
        self.forecaster = StartForecaster(self.policy, self.settings)

    def start(self) -> None:
        if self.settings.enabled:
            self._ticker = Ticker("start-forecast", self._wake, lambda: self.settings.refresh_s)
            self._ticker.start()

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()

    def _wake(self) -> None:
        self.tick(self.clock())

    def tick(self, now: float) -> bool:
        """Refresh if due; whether it did."""
        if not self.state.is_synced():
            return False
        snapshot = self.state.snapshot()
        if not self.forecaster.due(snapshot, now):
            return False
        started = time.perf_counter()
        self.forecaster.refresh(snapshot, self.run_clock(), now)
        self.forecaster.last_refresh_s = time.perf_counter() - started
        if self.actuator is not None and self.leading():
            self._tell(snapshot, now)
        return True

    def forecast_of(self, snapshot: ClusterSnapshot, group_or_gang: str) -> StartForecast | None:
        """The latest forecast of the gang named by its key or by one of its PodGroups' keys."""
        forecasts = self.forecaster.forecasts
        found = forecasts.get(group_or_gang)
        if found is not None:
            return found
        gang = queue_of(snapshot, self.policy).gang_of.get(group_or_gang)
        return forecasts.get(gang) if gang is not None else None

    def _tell(self, snapshot: ClusterSnapshot, now: float) -> None:
        """Write the Events due (see the module docstring)."""
        assert self.actuator is not None
        summaries = queue_of(snapshot, self.policy).summaries
        for key, forecast in self.forecaster.forecasts.items():
            band = forecast.band
            summary = summaries.get(key)
            if summary is None or not summary.job or not band.known or band.p50_s is None:
                continue
            told = self._told.get(summary.job)
            if told is not None:
                p50_then, at = told
                expected_now = max(0.0, p50_then - (now - at))
                moved = abs(band.p50_s - expected_now) > self.settings.event_change_share * max(
                    expected_now, self.settings.calibration_offset_s
                )
                if not moved or now - at < self.settings.event_interval_s:
                    continue
            self._told[summary.job] = (band.p50_s, now)
            message = f"{start_phrase(band.p10_s, band.p50_s, band.p90_s)} (forecast of {band.samples} futures)"
            try:
                self.actuator.record_event("TFJob", summary.job, EVENT_REASON, message)
            except Exception as error:
                log.warning("start forecast Event on %s: %s", summary.job, error)
        waiting_jobs = {s.job for s in summaries.values() if s.ages}
        for job in set(self._told) - waiting_jobs:
            del self._told[job]
