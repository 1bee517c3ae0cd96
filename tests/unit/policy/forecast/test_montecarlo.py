"""The forward run: starts in rank order as room frees, what it says it does not know, its draws."""

from __future__ import annotations

import numpy as np
import pytest

from extender.policy.forecast.forward import starts_given
from extender.policy.forecast.model import FIT_SLACK, ForecastInputs, RunningJob, WaitingGang
from extender.policy.forecast.montecarlo import draw_remaining, forecast_starts, run_time_scale_error
from extender.policy.preemption.residual_life import RunTimes

RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


def fixed_curve(run_s: float, jobs: int = 5) -> RunTimes:
    """Every job seen finish ran exactly `run_s`."""
    return RunTimes.estimate([run_s] * jobs, [])


def inputs(
    running: list[tuple[str, float, float]], waiting: list[tuple[str, float]], free: float, curve: RunTimes
) -> ForecastInputs:
    """One resource that matters (CPU); `running`: (key, CPU held, seconds run), `waiting`: (key, CPU needed)."""
    return ForecastInputs(
        RESOURCES,
        (8.0, 1e12, 0.0),
        (free, 1e12, 0.0),
        tuple(RunningJob(key, (cpu, 0.0, 0.0), ran) for key, cpu, ran in running),
        tuple(WaitingGang(key, (cpu, 0.0, 0.0)) for key, cpu in waiting),
        curve,
    )


def test_a_gang_that_fits_now_starts_now() -> None:
    bands = forecast_starts(inputs([], [("a", 2.0)], free=4.0, curve=fixed_curve(100)), 50, 1)
    assert (bands["a"].p10_s, bands["a"].p50_s, bands["a"].p90_s) == (0.0, 0.0, 0.0)


def test_gangs_start_as_running_jobs_end_in_rank_order() -> None:
    """Every run takes 100 s: the running job (40 s in) frees its 8 CPUs at 60 s; the first gang takes 6,
    the second (6 more) waits for the first to end at 160 s; the third (2) fits beside the first at 60 s."""
    case = inputs([("r", 8.0, 40.0)], [("a", 6.0), ("b", 6.0), ("c", 2.0)], free=0.0, curve=fixed_curve(100))
    bands = forecast_starts(case, 20, 1)
    assert bands["a"].p50_s == pytest.approx(60.0)
    assert bands["c"].p50_s == pytest.approx(60.0)
    assert bands["b"].p50_s == pytest.approx(160.0)
    assert bands["a"].samples == 20


def test_too_few_run_times_is_unknown_not_a_number() -> None:
    case = inputs([("r", 8.0, 40.0)], [("a", 6.0)], free=0.0, curve=RunTimes.estimate([100.0, 120.0], []))
    band = forecast_starts(case, 20, 1, min_history=3)["a"]
    assert not band.known and band.p50_s is None
    assert "fewer than 3 jobs seen finish (2)" in band.unknown


def test_a_gang_bigger_than_the_cluster_can_never_start() -> None:
    band = forecast_starts(inputs([], [("huge", 16.0)], free=8.0, curve=fixed_curve(100)), 20, 1)["huge"]
    assert not band.known
    assert band.unknown == "it needs more than the whole cluster has, so it can never start: 0.016 CPU of 0.008 CPU"


def test_the_band_widens_with_run_time_spread() -> None:
    rng = np.random.default_rng(3)
    spread = RunTimes.estimate(rng.uniform(20, 400, 200).tolist(), [])
    band = forecast_starts(inputs([("r", 8.0, 0.0)], [("a", 8.0)], free=0.0, curve=spread), 400, 2)["a"]
    assert band.p10_s is not None and band.p90_s is not None and band.p50_s is not None
    assert band.p10_s < band.p50_s < band.p90_s
    assert band.p90_s - band.p10_s > 200


def test_a_thin_history_widens_the_band_and_the_same_history_seen_often_does_not() -> None:
    """Three runs say little about how long jobs run here: every future draws its own scale for all its
    run times (the standard error of the mean log run time), so the band is wider than from the same
    runs seen a hundred times each, and identical runs leave nothing uncertain."""
    thin = RunTimes.estimate([50.0, 100.0, 200.0], [])
    often = RunTimes.estimate([50.0, 100.0, 200.0] * 100, [])
    assert run_time_scale_error(thin) == pytest.approx(np.log(2) * np.sqrt(2 / 3) / np.sqrt(3))
    assert run_time_scale_error(often) == pytest.approx(run_time_scale_error(thin) / 10)
    assert run_time_scale_error(fixed_curve(100)) == 0.0
    assert run_time_scale_error(RunTimes.estimate([100.0], [])) == 0.0

    def width(curve: RunTimes) -> float:
        case = inputs([("r1", 4.0, 0.0), ("r2", 4.0, 0.0)], [("a", 8.0)], free=0.0, curve=curve)
        band = forecast_starts(case, 400, 5)["a"]
        assert band.p10_s is not None and band.p90_s is not None
        return band.p90_s - band.p10_s

    assert width(thin) > 1.2 * width(often)


def test_draws_are_conditioned_on_what_a_job_has_run() -> None:
    curve = RunTimes.estimate([10.0, 20.0, 30.0, 100.0], [])
    uniforms = np.linspace(0.01, 0.99, 50)[:, None]
    no_tail = np.zeros_like(uniforms)
    ran_50 = draw_remaining(curve, np.array([50.0]), uniforms, no_tail)
    assert np.allclose(ran_50, 50.0)


def test_a_job_past_the_longest_run_seen_runs_on_about_as_long_again() -> None:
    curve = RunTimes.estimate([10.0, 20.0, 30.0], [])
    remaining = draw_remaining(curve, np.array([300.0]), np.full((4, 1), 0.5), np.full((4, 1), 1.0))
    assert np.allclose(remaining, 300.0)


def test_starts_given_fixed_run_times() -> None:
    """The wall-time baseline's use: one future, given run times."""
    case = inputs([("r", 8.0, 0.0)], [("a", 8.0), ("b", 8.0)], free=0.0, curve=fixed_curve(100))
    starts = starts_given(case, np.array([[30.0]]), np.array([[50.0, 10.0]]))
    assert starts.tolist() == [[30.0, 80.0]]


def starts_one_by_one(case: ForecastInputs, remaining: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """The forward run of one future at a time, every job's end scanned at every step: what the array run
    must agree with."""
    bars = (np.asarray([gang.needs for gang in case.waiting]) - FIT_SLACK) / (1 + FIT_SLACK)
    starts = np.full((len(remaining), len(case.waiting)), np.inf)
    for future, (running_ends, runs) in enumerate(zip(remaining, durations, strict=True)):
        free = np.asarray(case.free, dtype=np.float64)
        ends = {
            job: (end, np.asarray(held.holds))
            for job, (end, held) in enumerate(zip(running_ends, case.running, strict=True))
        }
        now = 0.0
        while True:
            fitting = [c for c in range(len(bars)) if starts[future, c] == np.inf and (bars[c] <= free).all()]
            if fitting:
                column = fitting[0]
                starts[future, column] = now
                free -= case.waiting[column].needs
                ends[len(case.running) + column] = (now + runs[column], np.asarray(case.waiting[column].needs))
                continue
            if not ends or np.isfinite(starts[future]).all():
                break
            job = min(ends, key=lambda key: ends[key][0])
            now, freed = ends.pop(job)
            free += freed
    return starts


def test_the_array_run_agrees_with_each_future_run_alone() -> None:
    rng = np.random.default_rng(11)
    case = inputs(
        [(f"r{i}", float(c), 0.0) for i, c in enumerate(rng.integers(1, 5, 12))],
        [(f"w{i}", float(c)) for i, c in enumerate(rng.integers(1, 7, 15))],
        free=1.0,
        curve=fixed_curve(100),
    )
    remaining = rng.uniform(10, 200, (30, len(case.running)))
    durations = rng.uniform(10, 200, (30, len(case.waiting)))
    np.testing.assert_allclose(starts_given(case, remaining, durations), starts_one_by_one(case, remaining, durations))
