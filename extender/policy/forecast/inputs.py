"""What the forward run starts from, read from a snapshot and the run times seen (pure).

Only what a cluster shows is read: the schedulable nodes' allocatable and what is free on them, the gang
queue in rank order at `now` (`GangQueue.waiting`), what each gang's bound members hold and since when, and
the run times of the jobs seen finish (`RunClock`, passed in as numbers). A waiting gang's start needs are
what its PodGroup's `minMember` asks of its TFJob (every other replica and the workers that make up
the rest, at least the job's minimum; `GangSummary.demand` without a TFJob) less what its members already
hold; for a job whose workers may be fewer than that, each smaller size down to its minimum is kept for the
what-if (`WaitingGang.smaller`). A gang whose plan is already
reserved starts now: it is left out of the run (its room is already taken from the free capacity) and its
band is zero. A running gang holds what its bound members hold; what it has run is its clock's count when
the loop has one, else the time since its first member was bound (0 when that is unknown). Pods outside any
gang hold their room for good.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from extender.policy.core.resources import CPU, EMPTY, GPU, MEMORY, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView, JobView, Role
from extender.policy.forecast.model import ArrivalMix, ForecastInputs, RunningJob, WaitingGang
from extender.policy.preemption.residual_life import RunTimes
from extender.policy.rank.queue import GangQueue, queue_of
from extender.policy.rank.standing import free_capacity
from extender.policy.rank.weights import RankKey, cluster_capacity

BASE_RESOURCES = (CPU, MEMORY, GPU)


def forecast_inputs(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    now: float,
    finished_run_s: Iterable[float],
    attained_s: Mapping[str, float],
    arrivals: ArrivalWindow | None = None,
    starving_delays_s: Sequence[float] | None = None,
) -> tuple[ForecastInputs, tuple[str, ...]]:
    """The inputs, and the waiting gangs whose plan is reserved (they start now). `attained_s`: job key →
    seconds run, for the running jobs the caller's clock knows; `arrivals`: how later arrivals are
    expected (none when not given); `starving_delays_s`: how long gangs seen start took from starving
    (`starvation_limit_s`) to starting — given, a gang is counted on to start about as long after it
    starves, by preemption, whether or not room frees (none when not given)."""
    queue = queue_of(snapshot, settings)
    capacity, free = cluster_capacity(snapshot), free_capacity(snapshot)
    waiting: list[tuple[str, Resources, tuple[tuple[int, Resources], ...], int, tuple[float, float]]] = []
    reserved: list[str] = []
    keys: list[tuple[int, int, int, float]] = []
    for rank in queue.waiting(now, settings):
        summary = queue.summaries[rank.subject]
        if summary.reserved:
            reserved.append(summary.key)
            continue
        keys.append(_static(rank.sort_key))
        sizes = _sizes(snapshot.jobs.get(summary.job), snapshot.groups.get(summary.origin))
        need = sizes[0][1] if sizes else summary.demand
        smaller = tuple((workers, demand.shortfall(summary.bound)) for workers, demand in sizes[1:])
        starves = (
            max(0.0, settings.starvation_limit_s - rank.waited_s),
            max(0.0, rank.waited_s - settings.starvation_limit_s),
        )
        waiting.append((summary.key, need.shortfall(summary.bound), smaller, sizes[0][0] if sizes else 0, starves))
    running = [
        (summary.key, summary.bound, attained_s.get(summary.job, max(0.0, now - (summary.started or now))))
        for summary in queue.summaries.values()
        if summary.satisfied and summary.bound_pods
    ]
    names = tuple(
        sorted(
            set(BASE_RESOURCES) | capacity.names() | {name for _, needs, *_ in waiting for name in needs.names()},
            key=lambda name: (name not in BASE_RESOURCES, name),
        )
    )
    mix = _arrival_mix(snapshot, queue, keys, now, arrivals, names) if arrivals is not None else ArrivalMix()
    inputs = ForecastInputs(
        resources=names,
        capacity=_vector(capacity, names),
        free=_vector(free, names),
        running=tuple(RunningJob(key, _vector(holds, names), ran) for key, holds, ran in running),
        waiting=tuple(
            WaitingGang(
                key, _vector(needs, names), tuple((n, _vector(size, names)) for n, size in smaller), workers, *starves
            )
            for key, needs, smaller, workers, starves in waiting
        ),
        curve=RunTimes.estimate(finished_run_s, (ran for _, _, ran in running)),
        arrivals=mix,
        starving=None
        if starving_delays_s is None
        else RunTimes.estimate(starving_delays_s, (gang[4][1] for gang in waiting if gang[4][0] == 0.0)),
    )
    return inputs, tuple(reserved)


@dataclass(frozen=True, slots=True)
class ArrivalWindow:
    """How later arrivals are expected: like the TFJobs created in the last `window_s` (their rate, and
    the gangs of theirs still in the queue as templates), for `horizon_s`, at most `most` of them."""

    window_s: float = 1800.0
    horizon_s: float = 3600.0
    most: int = 64
    min_span_s: float = 60.0
    """The rate is not estimated from less time than this since the first TFJob seen created."""


def _static(key: RankKey) -> tuple[int, int, int, float]:
    """A rank key without its arrival and name: where a fresh gang like it would go."""
    return (int(key[0]), int(key[1]), int(key[2]), float(key[3]))


def _arrival_mix(
    snapshot: ClusterSnapshot,
    queue: GangQueue,
    keys: list[tuple[int, int, int, float]],
    now: float,
    window: ArrivalWindow,
    names: tuple[str, ...],
) -> ArrivalMix:
    """The rate of TFJob creations over the window (or since the first one seen, if later), and one
    template per gang of the window still in the queue: where it would rank among the waiting gangs
    (fresh, not demoted, unaged) and what it needs to start."""
    created = [job.created for job in snapshot.jobs.values() if job.created and job.created <= now]
    recent = [at for at in created if now - at <= window.window_s]
    span = min(window.window_s, now - min(created)) if created else 0.0
    if len(recent) < 2 or span < window.min_span_s:
        return ArrivalMix()
    templates = []
    for summary in queue.summaries.values():
        if not summary.arrival or now - summary.arrival > window.window_s:
            continue
        fresh = (-summary.priority, 0, summary.size_class, -summary.base_weight)
        sizes = _sizes(snapshot.jobs.get(summary.job), snapshot.groups.get(summary.origin))
        need = sizes[0][1] if sizes else summary.demand
        templates.append((bisect.bisect_right(keys, fresh), _vector(need, names)))
    return ArrivalMix(len(recent) / span, tuple(sorted(templates)), window.horizon_s, window.most)


def _sizes(job: JobView | None, group: GroupView | None) -> list[tuple[int, Resources]]:
    """(workers, what the job needs to start with them): first the size its gang starts at (the PodGroup's
    `minMember` less its other replicas, at least the job's minimum of workers), then each smaller one
    down to that minimum; empty without a TFJob with workers."""
    if job is None or Role.WORKER not in job.replicas:
        return []
    others = EMPTY
    for role, count in job.replicas.items():
        if role is not Role.WORKER:
            others = others + job.role_requests.get(role, EMPTY).scaled(count)
    other_pods = sum(count for role, count in job.replicas.items() if role is not Role.WORKER)
    starts_with = max(job.min_workers, (group.min_member - other_pods) if group is not None else job.min_workers)
    worker = job.role_requests.get(Role.WORKER, EMPTY)
    return [(workers, others + worker.scaled(workers)) for workers in range(starts_with, job.min_workers - 1, -1)]


def _vector(amounts: Resources, names: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(float(amounts.get(name)) for name in names)
