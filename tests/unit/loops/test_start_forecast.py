"""The forecaster and its thread: bands from the model and the run clock, records resolved when a gang
starts, calibration only from earlier outcomes, Events only on a move, series only for waiting gangs."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from extender.api.loop_metrics import export_forecast_metrics
from extender.loops.actuator import RecordingActuator
from extender.loops.forecast_loop import EVENT_REASON, ForecastLoop
from extender.loops.forecast_settings import StartForecastSettings
from extender.loops.run_clock import RunClock
from extender.loops.start_forecast import StartForecaster
from extender.policy.core.settings import PolicySettings
from extender.policy.forecast.model import aged
from extender.state.store import ClusterState
from tests.builders import (
    bound_job,
    cluster,
    cpu_nodes,
    make_pod,
    make_podgroup,
    make_sized_tfjob,
    spread,
    waiting_job,
)

NOW = datetime(2026, 3, 1, 10, 5, tzinfo=UTC).timestamp()
RUN_S = 400.0


def two_jobs() -> ClusterState:
    """Two 4-CPU nodes: a running gang of 4 CPUs, a waiting gang of 6 that must wait for it."""
    return cluster(
        *cpu_nodes(2),
        *bound_job("running", placement=spread(["node-0", "node-1"], 3)),
        *waiting_job("waiting", pods=6, created="2026-03-01T10:04:00Z"),
    )


def clock_with_history(*runs: float) -> RunClock:
    clock = RunClock(100)
    clock.finished.extend(runs)
    return clock


def test_a_waiting_gang_starts_when_the_running_one_is_expected_to_end() -> None:
    forecaster = StartForecaster(PolicySettings())
    forecasts = forecaster.refresh(two_jobs().snapshot(), clock_with_history(RUN_S, RUN_S, RUN_S), NOW)
    band = forecasts["default/waiting"].band
    assert (band.p10_s, band.p50_s, band.p90_s) == (RUN_S, RUN_S, RUN_S)
    assert forecasts["default/waiting"].as_of == NOW


def test_without_run_times_the_answer_is_unknown() -> None:
    forecasts = StartForecaster(PolicySettings()).refresh(two_jobs().snapshot(), RunClock(100), NOW)
    assert "fewer than 3 jobs seen finish" in forecasts["default/waiting"].band.unknown


def test_refreshes_only_when_due() -> None:
    state = two_jobs()
    forecaster = StartForecaster(PolicySettings(), StartForecastSettings(refresh_s=5, recheck_s=30))
    snapshot = state.snapshot()
    assert forecaster.due(snapshot, NOW)
    forecaster.refresh(snapshot, clock_with_history(RUN_S, RUN_S, RUN_S), NOW)
    assert not forecaster.due(snapshot, NOW + 10)
    assert forecaster.due(snapshot, NOW + 31)


def test_a_started_gang_turns_its_forecasts_into_records() -> None:
    state = two_jobs()
    forecaster = StartForecaster(PolicySettings())
    clock = clock_with_history(RUN_S, RUN_S, RUN_S)
    forecaster.refresh(state.snapshot(), clock, NOW)
    started = cluster(*cpu_nodes(2), *bound_job("waiting", placement=spread(["node-0", "node-1"], 5)))
    forecaster.refresh(started.snapshot(), clock, NOW + 60)
    assert len(forecaster.resolved) == 1
    record = forecaster.resolved[0]
    assert record.made_at == NOW and record.band.p50_s == RUN_S
    assert forecaster.forecasts == {}


def test_events_are_written_once_while_the_p50_holds_and_only_while_leading() -> None:
    state = two_jobs()
    clock = clock_with_history(RUN_S, RUN_S, RUN_S)
    actuator = RecordingActuator()
    leading = [False]
    loop = ForecastLoop(
        state, PolicySettings(), lambda: clock, lambda: NOW, actuator=actuator, leading=lambda: leading[0]
    )
    assert loop.tick(NOW)
    assert actuator.events == []
    leading[0] = True
    assert loop.tick(NOW + 31)
    assert [event[:3] for event in actuator.events] == [("TFJob", "default/waiting", EVENT_REASON)]
    assert actuator.events[0][3] == "expected to start in 7–7 min, most likely 7 min (forecast of 200 futures)"
    assert loop.tick(NOW + 62)
    assert len(actuator.events) == 1


def test_the_gauge_has_a_series_per_waiting_gang_and_quantile() -> None:
    state = two_jobs()
    clock = clock_with_history(RUN_S, RUN_S, RUN_S)
    loop = ForecastLoop(state, PolicySettings(), lambda: clock, lambda: NOW)
    registry = CollectorRegistry()
    export_forecast_metrics(registry, loop)
    assert (
        registry.get_sample_value(
            "tfjob_extender_gang_start_forecast_seconds", {"gang": "default/waiting", "quantile": "0.5"}
        )
        is None
    )
    loop.tick(NOW)
    for quantile in ("0.1", "0.5", "0.9"):
        labels = {"gang": "default/waiting", "quantile": quantile}
        assert registry.get_sample_value("tfjob_extender_gang_start_forecast_seconds", labels) == RUN_S
    assert loop.forecast_of(state.snapshot(), "default/waiting") is not None


def test_a_job_that_may_start_smaller_gets_a_band_per_size() -> None:
    """Its PodGroup asks for its PS and all 6 workers (7 CPUs), its TFJob may run with 2: 4 CPUs are free
    now, the other 4 in 400 s. With 3 workers or fewer it would start now."""
    members = [
        make_pod(f"elastic-worker-{i}", job="elastic", role="worker", index=i, group="elastic", cpu="1")
        for i in range(6)
    ]
    tfjob = make_sized_tfjob("elastic", workers=6, cpu="1", min_workers=2, max_workers=6, dynamic=True)
    state = cluster(
        *cpu_nodes(2),
        *bound_job("running", placement=spread(["node-0", "node-1"], 3)),
        *members,
        make_podgroup("elastic", min_member=7),
        tfjob,
    )
    forecast = StartForecaster(PolicySettings()).refresh(
        state.snapshot(), clock_with_history(RUN_S, RUN_S, RUN_S), NOW
    )["default/elastic"]
    assert forecast.workers == 6 and forecast.band.p50_s == RUN_S
    assert [(workers, band.p50_s) for workers, band in forecast.what_if] == [
        (5, RUN_S),
        (4, RUN_S),
        (3, 0.0),
        (2, 0.0),
    ]


def test_a_job_too_big_for_the_nodes_at_its_size_is_unknown_and_its_smaller_sizes_get_bands() -> None:
    """Two 4-CPU nodes: its PS and 8 one-CPU workers ask for 9 CPUs, more than the nodes hold; with 7
    workers or fewer it fits, once the running gang ends or, with 4 or fewer, at once."""
    members = [make_pod(f"big-worker-{i}", job="big", role="worker", index=i, group="big", cpu="1") for i in range(8)]
    state = cluster(
        *cpu_nodes(2),
        *bound_job("running", placement=spread(["node-0", "node-1"], 3)),
        *members,
        make_podgroup("big", min_member=9),
        make_sized_tfjob("big", workers=8, cpu="1", min_workers=2, max_workers=8, dynamic=True),
    )
    forecast = StartForecaster(PolicySettings()).refresh(
        state.snapshot(), clock_with_history(RUN_S, RUN_S, RUN_S), NOW
    )["default/big"]
    assert forecast.band.unknown.startswith("it needs more than the whole cluster has")
    assert [(workers, band.p50_s) for workers, band in forecast.what_if][:2] == [(7, RUN_S), (6, RUN_S)]


def elastic_gangs(count: int) -> ClusterState:
    """One 4-CPU node held by a running gang, and `count` waiting elastic gangs of 4 one-CPU workers that may
    start with 1."""
    objects = [*cpu_nodes(1), *bound_job("running", placement=spread(["node-0"], 4))]
    for g in range(count):
        objects += waiting_job(f"elastic-{g}", pods=4, min_workers=1, created=f"2026-03-01T10:0{g}:00Z")
    return cluster(*objects)


def test_every_gang_that_may_start_smaller_gets_its_what_if_in_turn_aged_between_turns() -> None:
    """Two what-ifs per refresh for three gangs: the first refresh gives the two highest-ranked theirs; the
    second gives the third its own and the first (the longest without, by rank) a new one, and shows the
    second's of 10 s before, 10 s nearer."""
    settings = StartForecastSettings(what_if_gangs=2, refresh_s=1e-3)
    forecaster = StartForecaster(PolicySettings(), settings)
    snapshot, clock = elastic_gangs(3).snapshot(), clock_with_history(RUN_S, RUN_S, RUN_S)
    first = forecaster.refresh(snapshot, clock, NOW)
    assert [key for key, forecast in first.items() if forecast.what_if] == ["default/elastic-0", "default/elastic-1"]
    second = forecaster.refresh(snapshot, clock, NOW + 10)
    assert all(forecast.what_if for forecast in second.values())
    kept, before = second["default/elastic-1"].what_if, first["default/elastic-1"].what_if
    assert kept == tuple((workers, aged(band, 10)) for workers, band in before)
    assert any(band.p50_s for _, band in before), "something to age"
