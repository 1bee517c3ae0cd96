"""The scaler's growth in the forward run: running elastic jobs take the room left over and give it back when
they end; read from a snapshot with the waiting gangs that rank above them."""

from __future__ import annotations

import numpy as np
import pytest

from extender.policy.core.settings import PolicySettings
from extender.policy.forecast.forward import starts_given
from extender.policy.forecast.inputs import forecast_inputs
from extender.policy.forecast.model import ForecastInputs, Pool, RunningJob, WaitingGang
from extender.policy.rank.queue import queue_of
from tests.builders import make_node, make_podgroup, make_sized_tfjob, running_job_pods, snapshot, tfjob_pods
from tests.unit.policy.forecast.test_montecarlo import RESOURCES, fixed_curve


def growing(
    running: list[tuple[str, float, float, float, int]], waiting: list[tuple[str, float]], free: float
) -> ForecastInputs:
    """One resource that matters (CPU); `running`: (key, CPU held, seconds run, CPU its growth would take,
    waiting gangs ranked above it); `waiting`: (key, CPU needed)."""
    return ForecastInputs(
        RESOURCES,
        (16.0, 1e12, 0.0),
        (free, 1e12, 0.0),
        tuple(
            RunningJob(key, (cpu, 0.0, 0.0), ran, grows=(more, 0.0, 0.0) if more else (), outranked_by=above)
            for key, cpu, ran, more, above in running
        ),
        tuple(WaitingGang(key, (cpu, 0.0, 0.0)) for key, cpu in waiting),
        fixed_curve(100),
    )


def test_a_running_job_ranked_above_a_waiting_gang_grows_into_the_room_it_waits_for() -> None:
    """Every run takes 100 s. `small` (4 CPU) ends at 10 s; `a` needs 6 CPU and 2 are free: without
    growth it starts at 10 s. `big` (8 CPU, 80 s in, ranked above `a`) may grow by 8 CPU: the scaler
    grows it into the 2 free CPU at once and the 4 `small` frees, so `a` waits until `big` ends at 20 s
    and gives it all back."""
    still = starts_given(
        growing([("big", 8.0, 80.0, 0.0, 0), ("small", 4.0, 90.0, 0.0, 0)], [("a", 6.0)], 2.0),
        np.asarray([[20.0, 10.0]]),
        np.asarray([[100.0]]),
    )
    grown = starts_given(
        growing([("big", 8.0, 80.0, 8.0, 0), ("small", 4.0, 90.0, 0.0, 0)], [("a", 6.0)], 2.0),
        np.asarray([[20.0, 10.0]]),
        np.asarray([[100.0]]),
    )
    assert still[0, 0] == pytest.approx(10.0)
    assert grown[0, 0] == pytest.approx(20.0)


def test_a_job_the_waiting_gang_outranks_does_not_grow_and_growth_stops_at_its_maximum() -> None:
    outranked = starts_given(
        growing([("big", 8.0, 80.0, 8.0, 1), ("small", 4.0, 90.0, 0.0, 0)], [("a", 6.0)], 2.0),
        np.asarray([[20.0, 10.0]]),
        np.asarray([[100.0]]),
    )
    assert outranked[0, 0] == pytest.approx(10.0)
    capped = starts_given(
        growing([("big", 8.0, 80.0, 1.0, 0), ("small", 4.0, 90.0, 0.0, 0)], [("a", 5.0)], 2.0),
        np.asarray([[20.0, 10.0]]),
        np.asarray([[100.0]]),
    )
    assert capped[0, 0] == pytest.approx(10.0)


def test_a_running_elastic_job_is_read_with_what_its_growth_takes_and_who_it_waits_behind() -> None:
    """`run` (2 of at most 5 workers, 2 CPU each, bound) may take 3 × 2 CPU more; `rigid` (dynamic workers
    off) none; who it waits behind is the waiting `wait` if that ranks above it."""
    objects = [
        make_node("node-a", cpu="16"),
        make_sized_tfjob("run", workers=2, cpu="2", min_workers=1, max_workers=5, created="2026-03-01T10:00:00Z"),
        make_podgroup("run", min_member=2),
        *running_job_pods("run", node="node-a", workers=2, cpu="2", memory="1Gi"),
        make_sized_tfjob("rigid", workers=2, cpu="2", min_workers=1, max_workers=5, dynamic=False),
        make_podgroup("rigid", min_member=2),
        *running_job_pods("rigid", node="node-a", workers=2, cpu="2", memory="1Gi"),
        make_sized_tfjob("wait", workers=1, cpu="2", min_workers=1, max_workers=3, created="2026-03-01T11:00:00Z"),
        make_podgroup("wait", min_member=2),
        *tfjob_pods("wait", workers=1, cpu="2"),
    ]
    state = snapshot(*objects)
    read, _ = forecast_inputs(state, PolicySettings(), 0.0, [], {})
    jobs = {job.key: job for job in read.running}
    assert jobs["default/run"].grows[0] == pytest.approx(6000.0)
    assert jobs["default/rigid"].grows == ()
    queue = queue_of(state, PolicySettings())
    ahead = queue.rank("default/wait", 0.0, PolicySettings())
    running = queue.rank("default/run", 0.0, PolicySettings())
    assert ahead is not None and running is not None
    assert jobs["default/run"].outranked_by == int(ahead.outranks(running))


def test_a_grower_asking_for_a_resource_none_is_left_of_takes_nothing_and_the_others_take_the_rest() -> None:
    """4 CPU and no GPU are free; `gpu` (may gain 4 CPU and 2 GPU) cannot grow, `cpu` (may gain 8 CPU)
    takes the 4 CPU, and 4 more of the 6 `gpu` frees at 30 s: `a` (8 CPU) starts when `cpu` ends at 60 s
    (at 30 s without growth; at 30 s too had `gpu` taken the CPU, since it would give it back then)."""
    case = ForecastInputs(
        RESOURCES,
        (16.0, 1e12, 2.0),
        (4.0, 1e12, 0.0),
        (
            RunningJob("gpu", (6.0, 0.0, 2.0), 70.0, grows=(4.0, 0.0, 2.0)),
            RunningJob("cpu", (6.0, 0.0, 0.0), 40.0, grows=(8.0, 0.0, 0.0)),
        ),
        (WaitingGang("a", (8.0, 0.0, 0.0)),),
        fixed_curve(100),
    )
    grown = starts_given(case, np.asarray([[30.0, 60.0]]), np.asarray([[100.0]]))
    assert grown[0, 0] == pytest.approx(60.0)


def test_a_job_grows_only_into_its_own_pool() -> None:
    """Two pools of 8 CPU; `grower` (in pool 0, may gain 8 CPU) takes pool 0's 4 free CPU, not pool 1's 2:
    `a` (4 CPU, pool 1 only) starts when `small` (2 CPU, pool 1) ends at 10 s."""
    case = ForecastInputs(
        RESOURCES,
        (16.0, 1e12, 0.0),
        (6.0, 1e12, 0.0),
        (
            RunningJob("grower", (4.0, 0.0, 0.0), 10.0, ((4.0, 0.0, 0.0), (0.0, 0.0, 0.0)), grows=(8.0, 0.0, 0.0)),
            RunningJob("small", (2.0, 0.0, 0.0), 90.0, ((0.0, 0.0, 0.0), (2.0, 0.0, 0.0))),
            RunningJob("rest", (4.0, 0.0, 0.0), 0.0, ((0.0, 0.0, 0.0), (4.0, 0.0, 0.0))),
        ),
        (WaitingGang("a", (4.0, 0.0, 0.0), pools=(1,)),),
        fixed_curve(100),
        pools=(Pool((8.0, 1e12, 0.0), (4.0, 1e12, 0.0)), Pool((8.0, 1e12, 0.0), (2.0, 1e12, 0.0))),
    )
    grown = starts_given(case, np.asarray([[90.0, 10.0, 100.0]]), np.asarray([[100.0]]))
    assert grown[0, 0] == pytest.approx(10.0)
