"""What the forward run starts from, read from a snapshot and the run times seen (pure).

Only what a cluster shows is read: the schedulable nodes' allocatable and what is free on them, the gang queue
in rank order at `now` (`GangQueue.waiting`), what each gang's bound members hold and since when, and the run
times of the jobs seen finish (`RunClock`, passed in as numbers). A waiting gang's start needs are what its
PodGroup's `minMember` asks of its TFJob (every other replica and the workers that make up the rest, at least
the job's minimum; `GangSummary.demand` without a TFJob) less what its members already hold; for a job whose
workers may be fewer than that, each smaller size down to its minimum is kept for the what-if
(`WaitingGang.smaller`). For a TFJob with no member bound, the workers the nodes hold now node by node beside
its other replicas are counted (`packing.NodeRoom`), and for every TFJob the workers the nodes would hold with
all of them empty: a gang no arrangement of them could hold never starts ("unknown", with why), nor does one
with a pending member no schedulable node admits (node selector, required node affinity, tolerations). A gang
whose plan is already reserved starts now: it is left out of the run (its room is already taken from the free
capacity) and its band is zero. A running gang holds what its bound members hold; what it has run is its
clock's count when the loop has one, else the time since its first member was bound (0 when that is unknown).
A running TFJob the scaler may grow (dynamic workers below its maximum, not admitted by Kueue) carries the
room the workers it may gain would take and how many of the waiting gangs rank above it (`_Growth`).
Pods outside any gang hold their room for good. Where the waiting gangs' pending pods may not all go to every
node (node selectors, required node affinity, taints), the nodes are summed in pools (`pools.split`): each
running gang holds what its pods hold in each, each waiting gang counts only on the pools its pods may go to.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from extender.policy.core.node_fit import NodeConstraint
from extender.policy.core.resources import CPU, EMPTY, GPU, MEMORY, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView, JobView, PodView, Role
from extender.policy.forecast.model import ForecastInputs, Pool, RunningJob, WaitingGang
from extender.policy.forecast.packing import Ask, NodeRoom
from extender.policy.forecast.pools import NodePools, Where, split, take_order
from extender.policy.gang.room import selected_nodes, tainted
from extender.policy.preemption.residual_life import RunTimes
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import queue_of
from extender.policy.rank.standing import free_capacity
from extender.policy.rank.weights import JobRank, cluster_capacity

BASE_RESOURCES = (CPU, MEMORY, GPU)


def forecast_inputs(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    now: float,
    finished_run_s: Iterable[float],
    attained_s: Mapping[str, float],
    starving_delays_s: Sequence[float] | None = None,
    *,
    growth: bool = True,
) -> tuple[ForecastInputs, tuple[str, ...]]:
    """The inputs, and the waiting gangs whose plan is reserved (they start now). `attained_s`: job key →
    seconds run, for the running jobs the caller's clock knows; `starving_delays_s`: how long gangs seen
    start took from starving (`starvation_limit_s`) to starting — given, a gang is counted on to start
    about as long after it starves, by preemption, whether or not room frees (none when not given)."""
    queue = queue_of(snapshot, settings)
    capacity, free = cluster_capacity(snapshot), free_capacity(snapshot)
    ranked = [(rank, queue.summaries[rank.subject]) for rank in queue.waiting(now, settings)]
    reserved = tuple(summary.key for _, summary in ranked if summary.reserved)
    ranked = [(rank, summary) for rank, summary in ranked if not summary.reserved]
    running = sorted(
        (summary for summary in queue.summaries.values() if summary.satisfied and summary.bound_pods),
        key=lambda summary: summary.key,
    )
    names = tuple(
        sorted(
            set(BASE_RESOURCES) | capacity.names() | {name for _, s in ranked for name in s.demand.names()},
            key=lambda name: (name not in BASE_RESOURCES, name),
        )
    )
    table = snapshot.dense_capacity
    admitting: dict[NodeConstraint, bool] = {}
    pending = [(rank, summary, _pending_members(snapshot, summary, admitting)) for rank, summary in ranked]
    nodes = _Nodes(
        None if table is None else NodeRoom(table),
        None if table is None else NodeRoom(table, empty=True),
        split(table, (where for _, _, (_, where) in pending)),
    )
    capacities = [_vector(amounts, names) for amounts in nodes.pools.capacity] if nodes.pools else []
    gangs = tuple(
        _waiting(snapshot, rank, summary, settings, names, nodes, members, capacities)
        for rank, summary, members in pending
    )
    grown = _Growth([rank for rank, _ in ranked], now, settings, growth)
    jobs = tuple(
        grown.running(
            snapshot,
            summary,
            RunningJob(
                summary.key,
                _vector(summary.bound, names),
                attained_s.get(summary.job, max(0.0, now - (summary.started or now))),
                ()
                if nodes.pools is None
                else tuple(_vector(held, names) for held in nodes.pools.held(_pods(snapshot, summary))),
            ),
            names,
        )
        for summary in running
    )
    inputs = ForecastInputs(
        resources=names,
        capacity=_vector(capacity, names),
        free=_vector(free, names),
        running=jobs,
        waiting=gangs,
        curve=RunTimes.estimate(finished_run_s, (job.attained_s for job in jobs)),
        starving=None
        if starving_delays_s is None
        else RunTimes.estimate(starving_delays_s, (g.starving_s for g in gangs if g.starves_in_s == 0.0)),
        pools=()
        if nodes.pools is None
        else tuple(Pool(cap, _vector(room, names)) for cap, room in zip(capacities, nodes.pools.free, strict=True)),
    )
    return inputs, reserved


class _Growth:
    """Which running jobs the scaler may grow while the forward run goes on (`enabled`: it is counted on at
    all): a TFJob with dynamic workers below its maximum, not admitted by Kueue, growing only while no waiting
    gang ranked above it waits (the scaler's rule)."""

    def __init__(self, waiting: Sequence[JobRank], now: float, settings: PolicySettings, enabled: bool) -> None:
        self.keys = [rank.sort_key for rank in waiting]
        self.starving: dict[int, int] = {}
        """PriorityClass value → the waiting gangs up to the last starving one of it (all rank above a running
        job of that class, as the scaler counts them)."""
        for index, rank in enumerate(waiting):
            if rank.starving:
                self.starving[rank.priority] = index + 1
        self.now, self.settings, self.enabled = now, settings, enabled

    def running(
        self, snapshot: ClusterSnapshot, summary: GangSummary, job: RunningJob, names: tuple[str, ...]
    ) -> RunningJob:
        """`job` with the room its growth would take, the pool it grows in and the waiting gangs above it."""
        view = snapshot.jobs.get(summary.job) if summary.job else None
        if not self.enabled or not summary.growable or view is None or view.kueue_managed:
            return job
        more = view.max_workers - view.replicas.get(Role.WORKER, 0)
        grows = _vector(view.role_requests.get(Role.WORKER, EMPTY).scaled(more), names)
        rank = summary.rank(self.now, self.settings)
        above = max(bisect.bisect_left(self.keys, rank.sort_key), self.starving.get(rank.priority, 0))
        pools = range(len(job.in_pools))
        grows_in = max(pools, key=lambda p: sum(a * b for a, b in zip(job.in_pools[p], grows, strict=True)), default=0)
        return replace(job, grows=grows, grows_in=grows_in, outranked_by=above)


@dataclass(frozen=True, slots=True)
class _Nodes:
    room: NodeRoom | None
    """Their free room now (None: the snapshot has no dense table of it)."""
    empty: NodeRoom | None
    """All they allocate."""
    pools: NodePools | None
    """Split by which waiting pods they admit; None: one pool."""


def _waiting(
    snapshot: ClusterSnapshot,
    rank: JobRank,
    summary: GangSummary,
    settings: PolicySettings,
    names: tuple[str, ...],
    nodes: _Nodes,
    members: tuple[str, Where],
    capacities: Sequence[Sequence[float]],
) -> WaitingGang:
    """One waiting gang as the forward run takes it (see the module docstring); `members`: what
    `_pending_members` found of it; `capacities`: each pool's allocatable as a vector."""
    kept_out, where = members
    job = snapshot.jobs.get(summary.job)
    sizes = _sizes(job, snapshot.groups.get(summary.origin))
    need = _vector((sizes[0][1] if sizes else summary.demand).shortfall(summary.bound), names)
    return WaitingGang(
        summary.key,
        need,
        tuple((workers, _vector(demand.shortfall(summary.bound), names)) for workers, demand in sizes[1:]),
        sizes[0][0] if sizes else 0,
        starves_in_s=max(0.0, settings.starvation_limit_s - rank.waited_s),
        starving_s=max(0.0, rank.waited_s - settings.starvation_limit_s),
        fits_now_workers=_fitting_now(nodes.room, job, where) if sizes and not summary.bound_pods else None,
        fits_empty_workers=_fitting_now(nodes.empty, job, where, at_most=True) if sizes else None,
        pools=() if nodes.pools is None else take_order(nodes.pools.open_to(where), need, capacities),
        kept_out=kept_out,
    )


def _pods(snapshot: ClusterSnapshot, summary: GangSummary) -> list[PodView]:
    """The gang's pods the snapshot holds."""
    pods = (snapshot.pods.get(key) for key in snapshot.group_members.get(summary.origin, ()))
    return [pod for pod in pods if pod is not None]


def _pending_members(
    snapshot: ClusterSnapshot, summary: GangSummary, admitting: dict[NodeConstraint, bool]
) -> tuple[str, Where]:
    """The name of the first of the gang's pending members that no schedulable node admits (its node
    selector, required node affinity and tolerations; "" when there is none), and the nodes the first
    pending member of each role may go to (None: any node); `admitting`: each constraint's answer so far."""
    kept_out, where = "", dict[Role, frozenset[str] | None]()
    any_tainted = tainted(snapshot)
    for key in sorted(snapshot.group_members.get(summary.origin, ())):
        pod = snapshot.pods.get(key)
        if pod is None or pod.node_name or pod.finished:
            continue
        if not (any_tainted or pod.constraint.narrows):
            where.setdefault(pod.role, None)
            continue
        selected = selected_nodes(snapshot, pod.constraint)
        where.setdefault(pod.role, selected)
        if pod.constraint not in admitting:
            admitting[pod.constraint] = any(snapshot.nodes[name].node.schedulable for name in selected)
        if not admitting[pod.constraint] and not kept_out:
            kept_out = pod.name
    return kept_out, where


def _fitting_now(room: NodeRoom | None, job: JobView | None, where: Where, *, at_most: bool = False) -> int | None:
    """The job's workers `room` holds beside its other replicas placed first fit (`at_most`: at least as
    many as any placement of them leaves room for), each role on the nodes `where` says (any node where it
    says nothing); None without `room` or a job."""
    if job is None or room is None:
        return None
    others = [
        Ask(job.role_requests.get(role, EMPTY), where.get(role))
        for role, count in job.replicas.items()
        if role is not Role.WORKER
        for _ in range(count)
    ]
    count = room.workers_at_most if at_most else room.workers_fitting
    return count(others, Ask(job.role_requests.get(Role.WORKER, EMPTY), where.get(Role.WORKER)))


def _sizes(job: JobView | None, group: GroupView | None) -> list[tuple[int, Resources]]:
    """(workers, what the job needs to start with them): first the size its gang starts at (the PodGroup's
    `minMember` less its other replicas, at least the job's minimum of workers), then each smaller one
    down to that minimum; empty without a TFJob with workers."""
    if job is None or Role.WORKER not in job.replicas:
        return []
    other_pods = sum(count for role, count in job.replicas.items() if role is not Role.WORKER)
    starts_with = max(job.min_workers, (group.min_member - other_pods) if group is not None else job.min_workers)
    worker, minimum = job.role_requests.get(Role.WORKER, EMPTY), job.minimum_demand()
    return [
        (workers, minimum + worker.scaled(workers - job.min_workers))
        for workers in range(starts_with, job.min_workers - 1, -1)
    ]


def _vector(amounts: Resources, names: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(float(amounts.get(name)) for name in names)
