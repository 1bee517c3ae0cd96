"""Correcting bands by past errors: coverage restored, nothing corrected by too few, its own words."""

from __future__ import annotations

import numpy as np
import pytest

from extender.policy.forecast.calibration import (
    ForecastRecord,
    adapted,
    corrected,
    correction,
    corrections,
    overdue,
)
from extender.policy.forecast.model import StartBand
from extender.policy.forecast.wording import start_phrase


def records(bands: list[StartBand], actual: list[float]) -> list[ForecastRecord]:
    return [ForecastRecord(band, float(i), wait) for i, (band, wait) in enumerate(zip(bands, actual, strict=True))]


def test_bands_too_narrow_are_widened_to_the_stated_coverage() -> None:
    rng = np.random.default_rng(7)
    actual = rng.lognormal(np.log(300), 0.6, 400)
    narrow = [StartBand(280.0, 300.0, 320.0)] * 400
    shift = correction(records(narrow, actual.tolist()), (0.9, 0.9), 30.0, 20)
    fixed = corrected(StartBand(280.0, 300.0, 320.0), shift, 30.0)
    assert fixed.p10_s is not None and fixed.p90_s is not None
    fresh = rng.lognormal(np.log(300), 0.6, 4000)
    assert 0.85 <= float(np.mean(fresh <= fixed.p90_s)) <= 0.95
    assert 0.85 <= float(np.mean(fresh >= fixed.p10_s)) <= 0.95


def test_a_late_bias_moves_the_median() -> None:
    late = [StartBand(100.0, 200.0, 400.0)] * 50
    shift = correction(records(late, [100.0] * 50), (0.9, 0.9), 30.0, 20)
    assert corrected(late[0], shift, 30.0).p50_s == pytest.approx(100.0)


def test_nothing_is_corrected_below_the_minimum_records() -> None:
    band = StartBand(10.0, 20.0, 30.0)
    shift = correction(records([band] * 5, [500.0] * 5), (0.9, 0.9), 30.0, 20)
    assert not shift.applied and corrected(band, shift, 30.0) == band


def test_a_start_now_is_never_lifted_by_narrowing() -> None:
    wide = [StartBand(10.0, 200.0, 400.0)] * 50
    shift = correction(records(wide, [200.0] * 50), (0.9, 0.9), 30.0, 20)
    assert shift.lower < 0, "bands wider than needed: p10 moves up"
    assert (corrected(wide[0], shift, 30.0).p10_s or 0.0) > 10.0
    assert corrected(StartBand(0.0, 200.0, 400.0), shift, 30.0).p10_s == 0.0


def test_gangs_still_waiting_past_their_p90_widen_it_before_they_start() -> None:
    band = StartBand(10.0, 60.0, 120.0)
    resolved = records([band] * 40, [60.0] * 40)
    assert overdue(band, made_at=0.0, now=100.0) is None, "its p90 has not passed yet"
    late = [overdue(band, made_at=0.0, now=900.0 + i) for i in range(20)]
    assert all(miss is not None and miss.actual_s >= 900.0 for miss in late)
    alone = correction(resolved, (0.9, 0.9), 30.0, 20)
    with_late = correction(resolved, (0.9, 0.9), 30.0, 20, [miss for miss in late if miss])
    assert (corrected(band, alone, 30.0).p90_s or 0.0) < 120.0 < (corrected(band, with_late, 30.0).p90_s or 0.0)
    assert (with_late.lower, with_late.middle) == (alone.lower, alone.middle), "only the p90 reads the overdue"


def test_a_band_of_a_length_seldom_seen_is_widened_by_the_others_errors_never_narrowed() -> None:
    """The first waits to end are short ones: their records say the short bands were too wide. A band of a
    length with too few records of its own borrows the shifts of all records only where they widen it."""
    short = StartBand(5.0, 20.0, 120.0)
    shifts = corrections(records([short] * 40, [20.0] * 40), (0.9, 0.9), 30.0, 20)
    assert corrected(short, shifts.for_band(short), 30.0).p90_s == pytest.approx(20.0), "its own bin narrows it"
    long = StartBand(300.0, 900.0, 1800.0)
    borrowed = shifts.for_band(long)
    assert (borrowed.lower, borrowed.upper) == (0.0, 0.0)
    assert corrected(long, borrowed, 30.0).p90_s == pytest.approx(1800.0)
    late = corrections(records([short] * 40, [600.0] * 40), (0.9, 0.9), 30.0, 20)
    assert (corrected(long, late.for_band(long), 30.0).p90_s or 0.0) > 1800.0, "too narrow: widened"


def test_an_unknown_band_stays_unknown() -> None:
    shift = correction(records([StartBand(10.0, 20.0, 30.0)] * 30, [25.0] * 30), (0.9, 0.9), 30.0, 20)
    unknown = StartBand(unknown="no run times")
    assert corrected(unknown, shift, 30.0) == unknown


@pytest.mark.parametrize(
    ("band", "words"),
    [
        ((240.0, 360.0, 660.0), "expected to start in 4–11 min, most likely 6 min"),
        ((5.0, 20.0, 60.0), "expected to start in 5–60 s, most likely 20 s"),
        ((3600.0, 7200.0, 18000.0), "expected to start in 1.0–5.0 h, most likely 2.0 h"),
        ((0.0, 0.0, 0.0), "expected to start now"),
        ((60.0, 120.0, None), "expected to start in 1 min or later, most likely 2 min"),
    ],
)
def test_start_phrase(band: tuple[float, float, float | None], words: str) -> None:
    assert start_phrase(*band) == words


def test_start_phrase_unknown() -> None:
    assert start_phrase(None, None, None, "no run times") == "start time unknown: no run times"


def test_levels_rise_while_the_published_bands_miss_and_fall_while_they_hold() -> None:
    band = StartBand(10.0, 20.0, 30.0)
    missed = ForecastRecord(band, 0.0, 100.0, band)
    held = ForecastRecord(band, 0.0, 20.0, band)
    levels = (0.9, 0.9)
    for _ in range(10):
        levels = adapted(levels, missed, 0.9, 0.01)
    assert levels[1] == pytest.approx(0.99) and levels[0] == pytest.approx(0.89)
    for _ in range(10):
        levels = adapted(levels, held, 0.9, 0.01)
    assert levels[1] == pytest.approx(0.98) and levels[0] == pytest.approx(0.88)
