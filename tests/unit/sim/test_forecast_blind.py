"""The start-time forecast reads only what a cluster shows: the simulator's hidden run times never reach it.

Two replays of the same GPU workload whose jobs differ only in how much training each needs (so in how
long each runs, which a cluster cannot see in advance): every forecast made before the first job finishes
is the same in both. The forecaster is given the same run-time history in both (as a cluster's TFJobs
would have recorded it before), so its forecasts there are numbers, not "unknown"."""

from __future__ import annotations

from dataclasses import replace

from extender.loops.forecast_settings import StartForecastSettings
from extender.loops.start_forecast import StartForecaster
from extender.policy.forecast.model import StartBand
from extender.sim.cluster import EPOCH
from extender.sim.engine import Simulation
from extender.sim.gpu_traces import gpu_gangs
from extender.sim.policies import Ours
from extender.sim.workload import Workload

HISTORY_S = (120.0, 300.0, 600.0, 900.0)
"""Run times the forecaster is told finished before the replay starts."""


def forecasts_before_first_finish(workload: Workload) -> list[tuple[float, str, StartBand]]:
    policy = Ours()
    simulation = Simulation(workload, policy, seed=1)
    forecaster = StartForecaster(policy.settings, StartForecastSettings(samples=40, refresh_s=1e-3))
    seen: list[tuple[float, str, StartBand]] = []
    step = policy.step
    primed = [False]

    def stepping(now: float) -> None:
        step(now)
        clock = policy.loop.suspensions.clock
        if not primed[0]:
            clock.finished.extend(HISTORY_S)
            primed[0] = True
        if any(p.finished is not None for p in simulation.progress.values()):
            return
        for key, forecast in forecaster.refresh(policy.loop.state.snapshot(), clock, EPOCH + now).items():
            seen.append((now, key, forecast.band))

    policy.step = stepping  # type: ignore[method-assign]
    simulation.run()
    return seen


def test_changing_the_hidden_run_times_changes_no_forecast_until_a_job_finishes() -> None:
    workload = gpu_gangs(2, jobs=20, nodes=4)
    longer = replace(workload, jobs=tuple(replace(job, epochs=job.epochs * 3) for job in workload.jobs))
    first, second = forecasts_before_first_finish(workload), forecasts_before_first_finish(longer)
    assert any(band.known and band.p50_s for _, _, band in first)
    shared = min(len(first), len(second))
    assert shared > 10
    assert first[:shared] == second[:shared]
