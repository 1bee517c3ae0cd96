"""A start band in words, for `explain`, the page and the Events (pure, standard library only).

"expected to start in 4–11 min, most likely 6 min": the range from p10 to p90 and the p50, in one unit
chosen by the p90 (seconds under 90 s, minutes under 90 min, else hours); "later than …" when the p90 is
open; the reason when there is no answer.
"""

from __future__ import annotations

MINUTE_S = 60.0
HOUR_S = 3600.0


def start_phrase(p10_s: float | None, p50_s: float | None, p90_s: float | None, unknown: str = "") -> str:
    if unknown or p50_s is None or p10_s is None:
        return f"start time unknown: {unknown or 'no forecast yet'}"
    if p90_s is not None and p90_s < 1.0:
        return "expected to start now"
    scale, unit = _unit(p90_s if p90_s is not None else p50_s)
    low, middle = _amount(p10_s, scale), _amount(p50_s, scale)
    if p90_s is None:
        return f"expected to start in {low} {unit} or later, most likely {middle} {unit}"
    return f"expected to start in {low}–{_amount(p90_s, scale)} {unit}, most likely {middle} {unit}"


def _unit(seconds: float) -> tuple[float, str]:
    if seconds < 90:
        return 1.0, "s"
    if seconds < 90 * MINUTE_S:
        return MINUTE_S, "min"
    return HOUR_S, "h"


def _amount(seconds: float, scale: float) -> str:
    value = seconds / scale
    return f"{value:.1f}" if scale == HOUR_S and value < 10 else f"{round(value):d}"
