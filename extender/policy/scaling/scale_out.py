"""Elastic scaling of TFJob workers: scale-out, and what consolidation shares with it (pure).

Two planners over one snapshot (KOD2's third, scale-in for a waiting gang, is job-level preemption's
cheapest form and lives with it in `policy.preemption.scale_in`); each returns actions with their
reasons and never touches the model:
- `plan_scale_out` (KOD2 Algorithm 3): running jobs each grow by at most `scale_out_step` workers, up to
  their maximum, into idle capacity, nodes holding the job's PS first, then nodes holding its other pods;
  the job one more worker helps most per share of the cluster it takes goes first (`scale_out_gain`:
  diminishing returns favour the job with the fewest, cheapest workers), then the higher rank. Capacity
  one job takes is not offered to the next. Each new worker (`<job>-worker-<index>`, a deterministic
  name) gets a reservation on the node it was counted on.
- `plan_consolidation` lives in `policy.scaling.consolidation` and shares the running-job and waiting-gang
  views below (`running_jobs`, `waiting_gangs`, `FittingGangs`, `blocking_gang`).
Only TFJobs with `enableDynamicWorker: true` are scaled or migrated: without it training-operator fails
the job when a worker terminates, and new workers would get an inconsistent TF_CONFIG. Such jobs are
reported in `skipped` with that reason.

Who shrinks a job for a waiting gang: only the preemption loop (`policy.preemption`). The scaler loop only
grows and consolidates, so two loops never shrink the same job for the same gang. To keep a steady cluster
quiet (no grow-then-shrink flapping), a job grows or migrates only when it is settled (every pod bound, none
pending, terminating or reserved), out of its cooldown, and no gang ranked above it waits for room it could
ever get; growth that would stop a waiting gang that fits now from fitting is dropped.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

from extender.policy.core.node_fit import UNCONSTRAINED
from extender.policy.core.resources import EMPTY, Resources, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.core.views import KUEUE_LEFT_ALONE, JobView, PodView, Role
from extender.policy.gang.planner import plan_gang
from extender.policy.gang.state import GangState, gang_state, is_satisfied
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import queue_of
from extender.policy.rank.ranking import JobRank, cluster_capacity, dominant_share, gang_rank


class ActionKind(enum.Enum):
    SCALE_OUT = "scale-out"
    MIGRATE = "migrate"


@dataclass(frozen=True, slots=True)
class ScalingAction:
    """One change to one TFJob, with the plan the extender steers by."""

    kind: ActionKind
    job: str
    replicas_from: int
    """Worker replicas before the action."""
    replicas_to: int
    """Worker replicas after it (unchanged for a migration)."""
    pods: tuple[str, ...]
    """Keys of the worker pods added (scale-out), removed (scale-in) or moved (migration)."""
    placements: tuple[Reservation, ...]
    """Where added or moved pods go: reservations to commit (none for a scale-in)."""
    reason: str
    gang: str = ""
    """For a scale-in: the gang it makes room for."""


@dataclass(frozen=True, slots=True)
class ScalingPlan:
    actions: tuple[ScalingAction, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    """(TFJob key, why it was left alone) for jobs that declare elastic bounds but may not be scaled."""


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A settled, running TFJob the scaler may act on."""

    job: JobView
    rank: JobRank
    group: str
    workers: tuple[PodView, ...]
    """Bound worker pods, by index."""
    ps_nodes: frozenset[str]
    job_nodes: Mapping[str, int] = field(default_factory=dict)

    @property
    def replicas(self) -> int:
        return self.job.replicas.get(Role.WORKER, 0)

    @property
    def worker_requests(self) -> Resources:
        if self.workers:
            return self.workers[0].requests
        return self.job.role_requests.get(Role.WORKER, EMPTY)


def plan_scale_out(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    now: float,
    last_action: Mapping[str, float],
) -> ScalingPlan:
    """New workers for running jobs, highest rank first, into idle capacity (KOD2 Algorithm 3). Only the
    gangs the queue lists as growable (their TFJob below its maximum) are looked at."""
    capacity = cluster_capacity(snapshot)
    growable = queue_of(snapshot, settings).growable
    running, skipped = running_jobs(snapshot, settings, now, last_action, capacity, _may_grow, growable)
    if not running:
        return ScalingPlan((), tuple(skipped))
    if settings.scale_out_by_gain:
        running.sort(key=lambda job: (-scale_out_gain(job.replicas, job.worker_requests, capacity), job.rank.sort_key))
    waiting = waiting_gangs(snapshot, settings, now)
    fitting = FittingGangs.of(snapshot, settings, now, waiting)
    remaining = {name: node.available for name, node in snapshot.nodes.items() if node.node.schedulable}
    by_name = sorted(remaining)
    exhausted: set[Resources] = set()
    taken: dict[str, Resources] = {}
    actions: list[ScalingAction] = []
    for job in running:
        growth = min(settings.scale_out_step, job.job.max_workers - job.replicas)
        if growth <= 0:
            continue
        blocker = blocking_gang(job.rank, waiting, capacity)
        if blocker is not None:
            skipped.append((job.job.key, f"not scaled out: gang {blocker} ranked above it waits for room"))
            continue
        nodes = _place_workers(snapshot, job, growth, remaining, by_name, exhausted)
        if not nodes:
            continue
        trial_taken = dict(taken)
        for node in nodes:
            trial_taken[node] = trial_taken.get(node, EMPTY) - job.worker_requests
        if not fitting.still_fit(trial_taken):
            skipped.append((job.job.key, "not scaled out: the room is needed by a waiting gang that fits now"))
            continue
        for node in nodes:
            remaining[node] = remaining[node] - job.worker_requests
        taken = trial_taken
        actions.append(_scale_out(job, nodes, settings, now))
    return ScalingPlan(tuple(actions), tuple(skipped))


def scale_out_gain(replicas: int, worker: Resources, capacity: Resources) -> float:
    """What one more worker is worth to a job running `replicas` workers, per share of the cluster it takes:
    with diminishing returns the step from w to w + 1 workers cuts the remaining time by at most 1/(w + 1),
    so the next worker goes to the job it helps most for its cost, not to the heaviest."""
    return 1.0 / ((max(replicas, 0) + 1) * max(dominant_share(worker, capacity), 1e-9))


# -- running jobs and waiting gangs -----------------------------------------------------------------------


@dataclass
class FittingGangs:
    """The waiting gangs that fit now, each with the plan it would get: growth or a move that leaves every
    one of those plans room where it touches needs no new plan; one that takes such room has the gang
    planned again around it."""

    snapshot: ClusterSnapshot
    settings: PolicySettings
    now: float
    plans: list[tuple[GangState, tuple[Reservation, ...]]]

    @classmethod
    def of(
        cls,
        snapshot: ClusterSnapshot,
        settings: PolicySettings,
        now: float,
        waiting: Sequence[tuple[JobRank, GangState]],
    ) -> FittingGangs:
        plans = []
        for _, state in waiting:
            verdict = plan_gang(snapshot, state, settings, now)
            if verdict.admitted:
                plans.append((state, verdict.reservations))
        return cls(snapshot, settings, now, plans)

    def still_fit(self, taken: Mapping[str, Resources]) -> bool:
        """Whether every fitting gang still fits with `taken` (negative freed capacity) gone; a gang
        planned again keeps its new plan."""
        for index, (state, plan) in enumerate(self.plans):
            needs: dict[str, Resources] = {}
            for reservation in plan:
                if reservation.node in taken:
                    needs[reservation.node] = needs.get(reservation.node, EMPTY) + reservation.requests
            if all(need.fits_in(self.snapshot.free_on(node) + taken[node]) for node, need in needs.items()):
                continue
            verdict = plan_gang(self.snapshot, state, self.settings, self.now, freed=taken)
            if not verdict.admitted:
                return False
            self.plans[index] = (state, verdict.reservations)
        return True


def running_jobs(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    now: float,
    last_action: Mapping[str, float],
    capacity: Resources,
    wanted: Callable[[JobView, GangSummary], bool],
    among: frozenset[str] | None = None,
) -> tuple[list[RunningJob], list[tuple[str, str]]]:
    """Settled running jobs with a gang that the planner `wanted`, highest rank first, and the elastic jobs
    that may not be scaled at all (without `enableDynamicWorker`, or admitted by Kueue, which would requeue
    a TFJob whose pod counts change). Candidates come from the gang queue (only the gangs `among`, when
    given): a job with pending members or an unsatisfied gang is passed over without looking at its pods."""
    running: list[RunningJob] = []
    skipped = [
        (job.key, f"left alone: {KUEUE_LEFT_ALONE}")
        if job.kueue_managed
        else (job.key, "left alone: it declares elastic worker bounds but not enableDynamicWorker: true")
        for job in snapshot.jobs.values()
        if job.max_workers > job.min_workers and (job.kueue_managed or not job.enable_dynamic_worker)
    ]
    reserving = frozenset(held.group for held in snapshot.reservations.values())
    summaries = queue_of(snapshot, settings).summaries
    candidates = summaries.values() if among is None else (summaries[key] for key in among if key in summaries)
    for summary in candidates:
        job = snapshot.jobs.get(summary.job) if summary.job else None
        if (
            job is None
            or job.kueue_managed
            or not job.enable_dynamic_worker
            or summary.pending
            or not summary.satisfied
        ):
            continue
        if (
            not wanted(job, summary)
            or now - max(last_action.get(job.key, float("-inf")), job.scaled_at) < settings.scale_cooldown_s
        ):
            continue
        pods = [snapshot.pods[key] for key in snapshot.job_members.get(job.key, frozenset()) if key in snapshot.pods]
        settled = _settled(snapshot, job, pods, reserving)
        if settled is None:
            continue
        group, workers = settled
        state = gang_state(snapshot, group)
        if not is_satisfied(snapshot, state):
            continue
        running.append(
            RunningJob(
                job,
                gang_rank(snapshot, group, now, settings, capacity),
                group,
                workers,
                frozenset(pod.node_name for pod in pods if pod.role is Role.PS and pod.holds_node),
                Counter(pod.node_name for pod in pods if pod.holds_node),
            )
        )
    running.sort(key=lambda item: item.rank.sort_key)
    return running, skipped


def _may_grow(job: JobView, summary: GangSummary) -> bool:
    return job.max_workers > job.replicas.get(Role.WORKER, 0)


def _settled(
    snapshot: ClusterSnapshot, job: JobView, pods: Sequence[PodView], reserving: frozenset[str]
) -> tuple[str, tuple[PodView, ...]] | None:
    """(PodGroup key, workers by index) when every pod of the job is bound and it runs exactly its
    Worker replicas; None while anything is pending, terminating, reserved or missing."""
    live = [pod for pod in pods if not pod.finished]
    if not live or any(not pod.holds_node or pod.terminating or pod.key in snapshot.reservations for pod in live):
        return None
    groups = {pod.group for pod in live}
    if len(groups) != 1 or "" in groups:
        return None
    workers = tuple(sorted((pod for pod in live if pod.role is Role.WORKER), key=lambda pod: pod.index))
    if [pod.index for pod in workers] != list(range(job.replicas.get(Role.WORKER, 0))):
        return None
    group = groups.pop()
    if group in reserving:
        return None
    return group, workers


def waiting_gangs(snapshot: ClusterSnapshot, settings: PolicySettings, now: float) -> list[tuple[JobRank, GangState]]:
    """Gangs with pending members, all members created, not yet satisfied: the `rank_gangs_checked`
    highest-ranked, read from the wait queue in rank order."""
    queue = queue_of(snapshot, settings)
    waiting: list[tuple[JobRank, GangState]] = []
    for rank in queue.waiting(now, settings):
        if len(waiting) >= settings.rank_gangs_checked:
            break
        summary = queue.summaries[rank.subject]
        if summary.waiting:
            waiting.append((rank, gang_state(snapshot, summary.origin)))
    return waiting


def blocking_gang(rank: JobRank, waiting: Sequence[tuple[JobRank, GangState]], capacity: Resources) -> str | None:
    """A waiting gang ranked above the job that the whole cluster could hold: growing the job would only
    hand the preemption loop workers to take back."""
    for other, state in waiting:
        first = other.starving if other.starving != rank.starving and other.priority == rank.priority else None
        if not (first if first is not None else other.outranks(rank)):
            continue
        demand = total(pod.requests for members in state.members.values() for pod in members if pod.pending)
        if demand.fits_in(capacity):
            return state.key
    return None


# -- scale-out ------------------------------------------------------------------------------------------


def _place_workers(
    snapshot: ClusterSnapshot,
    job: RunningJob,
    growth: int,
    remaining: Mapping[str, Resources],
    by_name: Sequence[str],
    exhausted: set[Resources],
) -> list[str]:
    """Nodes for up to `growth` new workers: PS nodes first, then nodes holding more of the job, then the
    rest by name. `remaining` is only read; a request that fit on no node at all is added to `exhausted`
    (capacity only shrinks during a plan, so later jobs asking for the same skip the scan)."""
    request = job.worker_requests
    if request.is_empty() or request in exhausted:
        return []
    template = job.workers[0] if job.workers else None
    preferred = sorted(job.job_nodes, key=lambda node: (node not in job.ps_nodes, -job.job_nodes[node], node))
    nodes: list[str] = []
    fitted_anywhere = False
    for node in chain(preferred, by_name):
        if len(nodes) >= growth:
            break
        if (
            node not in remaining
            or node in nodes
            or (template is not None and not template.selects(snapshot.nodes[node].node))
        ):
            continue
        free = remaining[node]
        while len(nodes) < growth and request.fits_in(free):
            free = free - request
            nodes.append(node)
            fitted_anywhere = True
    if not fitted_anywhere and template is not None and template.constraint == UNCONSTRAINED:
        exhausted.add(request)
    return nodes


def _scale_out(job: RunningJob, nodes: Sequence[str], settings: PolicySettings, now: float) -> ScalingAction:
    first = job.replicas
    pods = tuple(f"{job.job.key}-worker-{first + offset}" for offset in range(len(nodes)))
    placements = tuple(
        Reservation(pod, job.group, node, job.worker_requests, now + settings.default_plan_timeout_s)
        for pod, node in zip(pods, nodes, strict=True)
    )
    where = ", ".join(f"{node} ×{count}" for node, count in sorted(Counter(nodes).items()))
    reason = (
        f"scale {job.job.key} out from {first} to {first + len(nodes)} workers (max {job.job.max_workers}) "
        f"into idle capacity on {where}"
    )
    return ScalingAction(ActionKind.SCALE_OUT, job.job.key, first, first + len(nodes), pods, placements, reason)


__all__ = [
    "ActionKind",
    "FittingGangs",
    "RunningJob",
    "ScalingAction",
    "ScalingPlan",
    "blocking_gang",
    "plan_scale_out",
    "running_jobs",
    "waiting_gangs",
]
