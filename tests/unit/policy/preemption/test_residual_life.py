"""Expected remaining run time from the run times seen: heavy tails make long runners worth suspending,
light tails never do."""

from __future__ import annotations

import math
import random

import pytest

from extender.policy.preemption.residual_life import RunTimes, suspension_margins


def test_with_every_job_finished_the_residual_is_the_mean_of_what_is_left_of_the_longer_ones() -> None:
    curve = RunTimes.estimate([10.0, 20.0, 30.0], [])
    assert curve.residual(0.0) == pytest.approx(20.0)
    assert curve.residual(10.0) == pytest.approx(15.0)
    assert curve.residual(15.0) == pytest.approx(10.0)
    assert curve.residual(30.0) == 0.0, "nothing is known past the longest run"


def test_a_job_still_running_counts_as_running_at_least_that_long() -> None:
    finished_only = RunTimes.estimate([10.0, 20.0], [])
    with_runner = RunTimes.estimate([10.0, 20.0], [25.0])
    assert with_runner.residual(0.0) > finished_only.residual(0.0)
    assert with_runner.finished == 2


def test_no_history_knows_nothing() -> None:
    assert RunTimes.estimate([], []).residual(0.0) == 0.0
    assert RunTimes.estimate([], [100.0]).residual(10.0) == pytest.approx(90.0)


def draws(kind: str) -> list[float]:
    rng = random.Random(7)
    if kind == "heavy":
        return [math.exp(rng.gauss(math.log(180.0), 1.6)) for _ in range(300)]
    return [60.0 + rng.gammavariate(2.0, 100.0) for _ in range(300)]


def test_under_heavy_tails_a_long_runner_is_worth_suspending() -> None:
    curve = RunTimes.estimate(draws("heavy"), [])
    assert suspension_margins(curve, {"a/long": 1200.0, "a/new": 0.0}, min_history=10).keys() == {"a/long"}


@pytest.mark.parametrize("ran", [30.0, 300.0, 600.0, 1200.0])
def test_under_light_tails_no_runner_is_worth_suspending(ran: float) -> None:
    curve = RunTimes.estimate(draws("light"), [])
    assert suspension_margins(curve, {"a/job": ran}, min_history=10) == {}


def test_nothing_is_suspended_before_enough_jobs_were_seen_finish() -> None:
    curve = RunTimes.estimate([10.0] * 9 + [10_000.0], [])
    assert suspension_margins(curve, {"a/long": 100.0}, min_history=10).keys() == {"a/long"}
    assert suspension_margins(curve, {"a/long": 100.0}, min_history=11) == {}
