"""The start-time forecast on the real control plane: what the extender said while a contended run went on.

`ForecastRecorder` asks the extender's observe listener for `/debug/gangs` every `every_s` during a run of a
scheduler with the extender (`ours`, `ours-native`) and keeps each waiting gang's `startForecast` once per
refresh, stamped with when it was made (its `asOf`, on the run's clock): a band counts from then, and one
refresh may be read several times, up to the forecast's recheck interval after it was made.
`forecast_scores` scores them against when each job really started (its last pod bound,
`JobOutcome.started`), with the same measures as `benchmarks/start_forecast.py`.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from dataclasses import asdict
from typing import Any

import orjson

from benchmarks.peer_outcomes import RunSummary
from benchmarks.start_forecast import Forecast, score
from extender.policy.forecast.model import StartBand

REQUEST_TIMEOUT_S = 10.0


class ForecastRecorder:
    def __init__(self, observe_url: str, namespace: str, every_s: float) -> None:
        self.url = f"{observe_url}/debug/gangs"
        self.prefix = f"{namespace}/"
        self.every_s = every_s
        self.seen: list[tuple[str, float, StartBand]] = []
        """(job, when it was made (monotonic), the band) for every forecast seen, each once."""
        self._made: set[tuple[str, float]] = set()
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="forecasts", daemon=True)

    def __enter__(self) -> ForecastRecorder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(REQUEST_TIMEOUT_S + 1)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                with urllib.request.urlopen(self.url, timeout=REQUEST_TIMEOUT_S) as response:
                    gangs = orjson.loads(response.read())["gangs"]
            except (OSError, ValueError, KeyError):
                self.errors += 1
                continue
            self.keep(gangs, time.monotonic() - time.time())

    def keep(self, gangs: list[dict[str, Any]], to_monotonic: float) -> None:
        """Keep the forecasts of the run's gangs in a `/debug/gangs` answer that were not seen before,
        stamped with their `asOf` moved to the monotonic clock by `to_monotonic` seconds."""
        for gang in gangs:
            forecast = gang.get("startForecast")
            if not forecast or not str(gang["gang"]).startswith(self.prefix):
                continue
            job = str(gang["gang"])[len(self.prefix) :]
            if (job, forecast["asOf"]) not in self._made:
                self._made.add((job, forecast["asOf"]))
                self.seen.append((job, forecast["asOf"] + to_monotonic, band_of(forecast)))


def band_of(forecast: dict[str, Any]) -> StartBand:
    return StartBand(
        forecast["p10Seconds"],
        forecast["p50Seconds"],
        forecast["p90Seconds"],
        forecast.get("unknown") or "",
        forecast.get("samples", 0),
    )


def forecast_scores(recorder: ForecastRecorder, run: RunSummary) -> dict[str, Any]:
    """The recorded forecasts scored against the run's starts (see the module docstring)."""
    finished = sorted(job.finished for job in run.jobs if job.finished is not None)
    starts = {job.spec.name: [job.started] for job in run.jobs if job.started is not None}
    forecasts = [
        Forecast(job, made, band, sum(1 for at in finished if at <= made)) for job, made, band in recorder.seen
    ]
    return {**asdict(score(forecasts, starts)), "asked_failed": recorder.errors}
