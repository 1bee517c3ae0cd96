"""Correcting the forward run's bands by its past errors in the same cluster: one-sided split conformal (pure).

The forward run misses what it assumes away (fragmentation, arrivals, the scaler), so its raw quantiles are
not calibrated. Each forecast made is kept as a `ForecastRecord`; once its gang starts, the record has an
actual wait and becomes a calibration score. Scores are log ratios, `log(actual + c) − log(forecast + c)`
with `c` = `offset_s`, because waits span seconds to hours and an error is as bad in proportion:
- p90: moved up by the `(1 − α)` conformal quantile of `actual` over `p90` (so `actual ≤ p90` holds for the
  stated share of new forecasts if the errors stay exchangeable);
- p10: moved down by the same quantile of `p10` over `actual` (a p10 of 0 stays 0: the forward run starts
  that gang at once in a tenth of the futures or more, so it fits now, which no past error can move later);
- p50: moved by the median of `actual` over `p50`.
Errors differ by how far off a start is (a start forecast in a minute is early or late for other reasons than
one forecast in an hour), so the shifts are taken per band of the raw p50 (`P50_BINS_S`: under 1 min, 1–5
min, 5–20 min, over 20 min; Mondrian conformal), each from the records of its bin; while its bin has fewer
than `min_records`, from all records, but p10 and p90 only where that widens the band: the first waits to
end are the short ones, and their records would narrow the bands of long waits still to come. The levels
the shifts are taken at start at the stated coverage and adapt to the misses of the bands actually published
(`adapted`). Only records resolved before the forecast being corrected are used (a forecast is never
corrected by its own outcome), the most recent `kept` of them, and none until there are `min_records`. A
`None` p90 ("later than any draw could tell") stays `None`; a record whose p90 was `None` scores only p10
and p50.

Forecasts of long waits resolve late, so at any moment the resolved records hold too few of them and the
p90 would be corrected mostly by short waits. A forecast whose gang still waits although its p90 has passed
is a miss already known (`overdue`): it counts among the p90's scores at the wait it has had so far, a
lower bound of its score (it scores nothing else until its gang starts and it is resolved).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from extender.policy.forecast.model import StartBand


@dataclass(frozen=True, slots=True)
class ForecastRecord:
    """A forecast made at `made_at` and, once its gang started, the wait it had from then."""

    band: StartBand
    made_at: float
    actual_s: float
    published: StartBand | None = None
    """The corrected band as it was published (what its miss, for `adapted`, is judged by)."""


@dataclass(frozen=True, slots=True)
class Correction:
    """Log-ratio shifts of p10 (down), p50 and p90 (up), from `records` scores; none below `min_records`."""

    lower: float = 0.0
    middle: float = 0.0
    upper: float = 0.0
    records: int = 0

    @property
    def applied(self) -> bool:
        return self.records > 0


NO_CORRECTION = Correction()
LEAST_LEVEL, MOST_LEVEL = 0.5, 0.995
"""The range the adapted levels are kept in."""
P50_BINS_S = (60.0, 300.0, 1200.0)
"""Upper bounds of the raw-p50 bins each calibrated on its own (seconds); the last bin is open."""


@dataclass(frozen=True, slots=True)
class Corrections:
    """The shifts of every bin of raw p50, and the one over all records for bins with too few (which only
    widens their bands)."""

    overall: Correction = NO_CORRECTION
    by_bin: tuple[Correction, ...] = ()

    def for_band(self, band: StartBand) -> Correction:
        if band.p50_s is None or not self.by_bin:
            return self.overall
        own = self.by_bin[bin_of(band.p50_s)]
        if own.applied:
            return own
        overall = self.overall
        return replace(overall, lower=max(overall.lower, 0.0), upper=max(overall.upper, 0.0))


def bin_of(p50_s: float) -> int:
    return sum(1 for bound in P50_BINS_S if p50_s >= bound)


def adapted(levels: tuple[float, float], record: ForecastRecord, coverage: float, step: float) -> tuple[float, float]:
    """Adaptive conformal inference (Gibbs and Candès, 2021): the (lower, upper) levels the shifts are taken
    at, moved after each resolved forecast by `step` × (missed − allowed share), so that over time the
    published bands miss on each side at the allowed share (1 − `coverage`) even while the errors drift."""
    band = record.published
    if band is None or not band.known:
        return levels
    allowed = 1.0 - coverage
    below = band.p10_s is not None and record.actual_s < band.p10_s
    above = band.p90_s is not None and record.actual_s > band.p90_s
    lower, upper = levels
    return (
        min(MOST_LEVEL, max(LEAST_LEVEL, lower + step * (below - allowed))),
        min(MOST_LEVEL, max(LEAST_LEVEL, upper + step * (above - allowed))),
    )


def overdue(band: StartBand, made_at: float, now: float) -> ForecastRecord | None:
    """The forecast as a known miss of its p90 when its gang still waits `now` past it, else None."""
    waited = now - made_at
    if band.p90_s is None or band.p50_s is None or waited <= band.p90_s:
        return None
    return ForecastRecord(band, made_at, waited)


def corrections(
    records: Sequence[ForecastRecord],
    levels: tuple[float, float],
    offset_s: float,
    min_records: int,
    past_p90: Sequence[ForecastRecord] = (),
) -> Corrections:
    """`correction` over all records, and over the records of each bin of raw p50; the `past_p90` ones
    (`overdue`, see the module's text) count among the p90's scores only."""
    bins: list[list[ForecastRecord]] = [[] for _ in range(len(P50_BINS_S) + 1)]
    late: list[list[ForecastRecord]] = [[] for _ in range(len(P50_BINS_S) + 1)]
    for group, kept in ((bins, records), (late, past_p90)):
        for record in kept:
            if record.band.p50_s is not None:
                group[bin_of(record.band.p50_s)].append(record)
    return Corrections(
        correction(records, levels, offset_s, min_records, past_p90),
        tuple(
            correction(group, levels, offset_s, min_records, missed) for group, missed in zip(bins, late, strict=True)
        ),
    )


def correction(
    records: Sequence[ForecastRecord],
    levels: tuple[float, float],
    offset_s: float,
    min_records: int,
    past_p90: Sequence[ForecastRecord] = (),
) -> Correction:
    """The shifts that would have made `records` cover at the (lower, upper) `levels`, one side each; the
    p90's scores include the lower bounds of the `past_p90` forecasts (`overdue`)."""
    scored = [r for r in records if r.band.p10_s is not None and r.band.p50_s is not None]
    if len(scored) < min_records:
        return NO_CORRECTION
    actual = np.log(np.asarray([r.actual_s for r in scored]) + offset_s)
    p10 = np.log(np.asarray([r.band.p10_s for r in scored], dtype=np.float64) + offset_s)
    p50 = np.log(np.asarray([r.band.p50_s for r in scored], dtype=np.float64) + offset_s)
    uppers = [(r.actual_s, r.band.p90_s) for r in (*scored, *past_p90) if r.band.p90_s is not None]
    upper = (
        _conformal(
            np.log(np.asarray([a for a, _ in uppers]) + offset_s)
            - np.log(np.asarray([p for _, p in uppers], dtype=np.float64) + offset_s),
            levels[1],
        )
        if len(uppers) >= min_records
        else 0.0
    )
    return Correction(_conformal(p10 - actual, levels[0]), float(np.median(actual - p50)), upper, len(scored))


def corrected(band: StartBand, shift: Correction, offset_s: float) -> StartBand:
    """`band` with `shift` applied; an unknown band is left as it is."""
    if not band.known or not shift.applied:
        return band
    return StartBand(
        band.p10_s if band.p10_s == 0.0 else _moved(band.p10_s, -shift.lower, offset_s),
        _moved(band.p50_s, shift.middle, offset_s),
        _moved(band.p90_s, shift.upper, offset_s),
        samples=band.samples,
    )


def _moved(value: float | None, by: float, offset_s: float) -> float | None:
    if value is None:
        return None
    return max(0.0, math.exp(math.log(value + offset_s) + by) - offset_s)


def _conformal(scores: np.ndarray, coverage: float) -> float:
    """The split-conformal quantile: the ⌈(n + 1)·coverage⌉-th smallest score (the largest when that is past
    the end). Negative when the raw bands were wider than they needed to be: they are narrowed."""
    ordered = np.sort(scores)
    rank = min(len(ordered), math.ceil((len(ordered) + 1) * coverage)) - 1
    return float(ordered[rank])
