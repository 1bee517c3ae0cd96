"""A gang's start-time forecast as the debug routes, `explain` and the page show it.

`startForecast` in `/debug/gangs` and `/debug/explain`: `p10Seconds`, `p50Seconds`, `p90Seconds` (seconds
from `asOf`; `p90Seconds` null when the band is open above), `asOf` (seconds since the epoch), `samples`,
`unknown` (why there is no answer, or null), `calibratedWith` (resolved forecasts its band was corrected
by; 0 while too few), `text` (the band in words), `workers` (the workers its gang starts with) and
`whatIf` (for a TFJob that may start with fewer workers: the same band at each smaller size down to its
minimum, for the highest-ranked such gangs). Null where no forecast runs in this process (the
verbs' process when the loops run apart, or `--no-forecast-enabled`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from extender.policy.forecast.wording import start_phrase

if TYPE_CHECKING:
    from extender.api.loopviews import LoopViews
    from extender.loops.start_forecast import StartForecast
    from extender.policy.core.snapshot import ClusterSnapshot


def render_forecast(forecast: StartForecast | None) -> dict[str, Any] | None:
    if forecast is None:
        return None
    band = forecast.band

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 1)

    return {
        "p10Seconds": rounded(band.p10_s),
        "p50Seconds": rounded(band.p50_s),
        "p90Seconds": rounded(band.p90_s),
        "asOf": forecast.as_of,
        "samples": band.samples,
        "unknown": band.unknown or None,
        "calibratedWith": forecast.correction.records,
        "text": start_phrase(band.p10_s, band.p50_s, band.p90_s, band.unknown),
        "workers": forecast.workers or None,
        "whatIf": [
            {
                "workers": workers,
                "p10Seconds": rounded(smaller.p10_s),
                "p50Seconds": rounded(smaller.p50_s),
                "p90Seconds": rounded(smaller.p90_s),
                "text": start_phrase(smaller.p10_s, smaller.p50_s, smaller.p90_s),
            }
            for workers, smaller in forecast.what_if
        ],
    }


def forecast_document(loops: LoopViews, snapshot: ClusterSnapshot, key: str) -> dict[str, Any] | None:
    """The rendered forecast of the gang named by `key` (a gang's or one of its PodGroups' key)."""
    if loops.forecast is None:
        return None
    return render_forecast(loops.forecast.forecast_of(snapshot, key))
