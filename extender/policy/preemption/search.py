"""The victim search's starting point (pure): who may be taken, listed from the gang queue's totals.

`open_search` refuses at once what cannot help (a gang that may not preempt, fits already, is larger than
the whole cluster, or could not fit even if every lower-ranked job went: the per-PriorityClass ceiling of
the gang queue) and otherwise lists the candidate subjects — surplus workers of elastic jobs, whole gangs
of a lower PriorityClass, pods without a gang — as plain tuples ranked from their queue summaries, with
what the gang still needs and the room already free. A subject's pods are looked up only when the search
reaches it (`Search.units_of`); `Search.cheapest_first` orders subjects lazily with a heap. The planner
that walks them is `victims`.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from extender.policy.core.resources import EMPTY, Resources, describe, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.takings import taken_too_often
from extender.policy.core.views import GangKey, PodView, Role
from extender.policy.gang.planner import GangVerdict, plan_gang
from extender.policy.gang.room import roomy_nodes
from extender.policy.gang.state import GangState, gang_state
from extender.policy.preemption.gang_needs import ineligible_reason, least_demand, still_needed
from extender.policy.preemption.lost_work import tells_nothing
from extender.policy.preemption.residual_life import NO_SUSPENSIONS, Suspendable
from extender.policy.preemption.run_protection import too_young_to_preempt
from extender.policy.preemption.taking_cost import cost_of, summary_at_risk
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import GangQueue, queue_of
from extender.policy.rank.ranking import JobRank, cluster_capacity, gang_rank


@dataclass(frozen=True, slots=True)
class VictimUnit:
    subject: str
    """What is disrupted: a gang key, or a pod key for a pod without a gang."""
    job: str
    pods: tuple[PodView, ...]
    """The bound pods this unit removes."""
    rank: JobRank
    scale_to: int | None = None
    """For a surplus unit: the job's Worker replicas once this unit (and those before it) are taken."""
    suspend: bool = False
    """The whole gang goes by suspending its TFJob (it resumes later from its checkpoint), not by eviction."""
    cost: float = 0.0
    """Resource-seconds taking it throws away (`Subject.cost`)."""

    @property
    def is_surplus(self) -> bool:
        return self.scale_to is not None


@dataclass(frozen=True, slots=True)
class PreemptionRefusal:
    gang: str
    reason: str


SURPLUS, SUSPENSION, WHOLE_GANG, LOOSE_POD = 0, 1, 2, 3
"""The kinds of subject, cheapest first: a suspended job resumes from its checkpoint, an evicted one is
lost (training-operator fails a TFJob whose pod is deleted)."""


class Subject(NamedTuple):
    """A candidate victim before its pods are looked up: an elastic job's surplus, a whole gang, or a pod
    without a gang. Its totals come from the gang queue, so the search can rule it out without its pods;
    its rank is only worked out once the search takes it (a plain tuple: thousands are listed per search)."""

    order: tuple[int, int, float, int, int, float, float, str]
    """Cheapest first: surplus, suspensions, whole gangs, pods without a gang; then the lowest PriorityClass,
    what taking it costs (`taking_cost`: lost work and restart, for a whole gang), and the lowest rank
    (`ascending`: demoted first, larger size class, aged weight, later arrival first, key)."""
    key: str
    """The gang key, or the pod key of a pod without a gang."""
    origin: str
    """The PodGroup whose gang this is (empty for a pod without a gang)."""
    surplus: bool
    freed: Resources
    """What taking all of it frees."""
    size: int
    """Bound pods it holds (whole gangs of one rank go smallest first)."""
    summary: GangSummary | None = None
    pod: PodView | None = None
    rank: JobRank | None = None
    """Known up front for a pod without a gang; a gang's is read from `summary` when needed."""
    suspend: bool = False
    """A whole gang taken by suspending its TFJob."""
    cost: float = 0.0
    """Resource-seconds taking it whole throws away (`taking_cost.cost_of`); 0 for surplus workers, whose
    job trains on."""


@dataclass(frozen=True, slots=True)
class Search:
    """A gang that may take room from lower-ranked work, and what a search for victims needs to know."""

    snapshot: ClusterSnapshot
    state: GangState
    settings: PolicySettings
    now: float
    preemptor: JobRank
    subjects: tuple[Subject, ...]
    """Every subject the gang may take, in no order (`cheapest_first` orders them)."""
    needs: tuple[tuple[int, tuple[PodView, ...]], ...]
    demand: Resources
    """The least any admitting plan places (`least_demand`)."""
    roomy: frozenset[str]
    """Nodes with room for the smallest pending member before anything is freed."""
    room: Resources
    """Free capacity on `roomy` plus the gang's own reservations."""
    deficit: Resources
    """What `room` lacks of `demand`."""
    _units: dict[tuple[str, bool], tuple[VictimUnit, ...]] = field(default_factory=dict, compare=False)

    def rank_of(self, subject: Subject) -> JobRank:
        if subject.rank is not None:
            return subject.rank
        assert subject.summary is not None, "a gang subject carries its queue summary"
        return subject.summary.rank(self.now, self.settings)

    def units_of(self, subject: Subject) -> tuple[VictimUnit, ...]:
        """The subject's units: one per surplus worker (highest index first), or the whole gang or pod."""
        known = self._units.get((subject.key, subject.surplus))
        if known is not None:
            return known
        rank = self.rank_of(subject)
        if subject.pod is not None:
            units: tuple[VictimUnit, ...] = (VictimUnit(subject.key, subject.pod.job, (subject.pod,), rank),)
        else:
            victim = gang_state(self.snapshot, subject.origin)
            bound = tuple(pod for members in victim.members.values() for pod in members if pod.holds_node)
            if subject.surplus:
                units = tuple(_surplus_units(self.snapshot, subject.key, bound, rank))
            else:
                job = bound[0].job if bound else ""
                units = (VictimUnit(subject.key, job, bound, rank, suspend=subject.suspend, cost=subject.cost),)
        self._units[(subject.key, subject.surplus)] = units
        return units

    def cheapest_first(self) -> Iterator[Subject]:
        """The subjects cheapest first, ordered as they are taken (a heap: a search that stops after a few
        pays for a few, not for sorting thousands)."""
        heap = [(subject.order, index) for index, subject in enumerate(self.subjects)]
        heapq.heapify(heap)
        while heap:
            yield self.subjects[heapq.heappop(heap)[1]]

    @property
    def units(self) -> tuple[VictimUnit, ...]:
        """Every unit of every subject, cheapest first (looks up every candidate's pods)."""
        return tuple(unit for subject in self.cheapest_first() for unit in self.units_of(subject))

    def could_admit(self, freed: Resources) -> bool:
        """The prefix-sum cut: freeing `freed` on top of the room already free may cover the least the gang
        needs (when it cannot, no plan could succeed)."""
        return self.deficit.fits_in(freed)

    def dry_run(self, chosen: Sequence[VictimUnit]) -> GangVerdict | None:
        """The gang's plan with `chosen` gone, or None when their requests plus the room already free
        cannot cover the least the gang needs (no plan could succeed: the prefix-sum cut)."""
        if not self.could_admit(total(pod.requests for pod in victims_of(chosen))):
            return None
        return plan_gang(self.snapshot, self.state, self.settings, self.now, freed=freed_by(chosen), nodes=self.roomy)


def open_search(
    snapshot: ClusterSnapshot,
    group_key: str,
    settings: PolicySettings,
    now: float,
    terminating_victims: Iterable[str],
    *,
    doing: str,
    suspendable: Suspendable = NO_SUSPENSIONS,
) -> Search | PreemptionRefusal:
    """Everything a victim search for the gang of `group_key` starts from, or why there is nothing to
    search: the gang may not preempt, fits already, or is larger than the whole cluster. `suspendable`:
    TFJobs that may be suspended for a fresh gang of their PriorityClass (`residual_life`)."""
    state = gang_state(snapshot, group_key)
    pending = [pod for members in state.members.values() for pod in members if pod.pending]
    refusal = ineligible_reason(snapshot, state, pending, terminating_victims)
    if refusal is not None:
        return PreemptionRefusal(state.key, refusal)
    capacity = cluster_capacity(snapshot)
    needs = still_needed(state)
    demand = least_demand(needs)
    if not demand.fits_in(capacity):
        missing = describe(demand.shortfall(capacity))
        return PreemptionRefusal(state.key, f"gang {state.key}: larger than the whole cluster ({missing} missing)")
    preemptor = gang_rank(snapshot, group_key, now, settings, capacity)
    queue = queue_of(snapshot, settings)
    suspensions = _suspensions(queue, preemptor, suspendable)
    ceiling = snapshot.capacity.free_total() + queue.freeable_below(preemptor.priority)
    ceiling = ceiling + total(summary.bound for summary in suspensions if summary.priority == preemptor.priority)
    if not demand.fits_in(ceiling):
        missing = describe(demand.shortfall(ceiling))
        return PreemptionRefusal(
            state.key, f"gang {state.key}: even evicting every lower-ranked job leaves {missing} missing"
        )
    if plan_gang(snapshot, state, settings, now).admitted:
        return PreemptionRefusal(state.key, f"gang {state.key} fits without {doing}")
    roomy = roomy_nodes(snapshot, pending)
    room = _room(snapshot, roomy) + total(
        snapshot.reservations[pod.key].requests for pod in pending if pod.key in snapshot.reservations
    )
    margins = {summary.key: suspendable.margins_s.get(summary.job, math.inf) for summary in suspensions}
    subjects = candidate_subjects(snapshot, state, preemptor, settings, now, margins)
    deficit = demand.shortfall(room)
    return Search(snapshot, state, settings, now, preemptor, subjects, tuple(needs), demand, roomy, room, deficit)


def _room(snapshot: ClusterSnapshot, nodes: frozenset[str]) -> Resources:
    table = snapshot.capacity
    rows = table.rows_of(sorted(nodes))
    return table.resources(table.available[rows[rows >= 0]].sum(axis=0))


def _suspensions(queue: GangQueue, preemptor: JobRank, suspendable: Suspendable) -> list[GangSummary]:
    """The running gangs of `suspendable` TFJobs the preemptor may suspend, of its PriorityClass or a lower
    one, when the preemptor itself is fresh (a demoted gang suspends nobody): see `_may_suspend_for`."""
    if not suspendable or preemptor.demoted:
        return []
    return [
        summary
        for summary in queue.summaries.values()
        if summary.priority <= preemptor.priority
        and summary.bound
        and not summary.ages
        and _may_suspend_for(summary, preemptor, suspendable)
    ]


def _may_suspend_for(summary: GangSummary, preemptor: JobRank, suspendable: Suspendable) -> bool:
    """A long runner, for any such preemptor; a newcomer, only for a starving one (which goes before every
    gang of its PriorityClass, whatever their rank)."""
    return summary.job in suspendable.long_runners or (summary.job in suspendable.newcomers and preemptor.starving)


def _may_suspend(snapshot: ClusterSnapshot, job_key: str) -> bool:
    """Whether the TFJob says it checkpoints and can be suspended whole (not suspended already): a gang of
    a lower PriorityClass that can is suspended rather than evicted, which would fail it for good."""
    job = snapshot.jobs.get(job_key) if job_key else None
    return job is not None and job.may_be_suspended


def candidate_subjects(
    snapshot: ClusterSnapshot,
    state: GangState,
    preemptor: JobRank,
    settings: PolicySettings,
    now: float,
    suspensions: Mapping[str, float] | None = None,
) -> tuple[Subject, ...]:
    """Every subject the preemptor may take, in no order: surplus workers; the gangs of `suspensions` (suspended
    whole, whatever their PriorityClass up to the preemptor's, when the seconds each is expected to outrun a fresh
    job — its margin — exceed what suspending it loses: its training since its last checkpoint and its restart);
    whole gangs of a lower PriorityClass (suspended when their TFJob may be, else evicted); lower-priority pods
    without a gang. Never the pods of a TFJob Kueue admits (Kueue preempts those, and would requeue one resized),
    nor a pod outside the managed namespaces (`PolicySettings.managed_namespaces`). A gang at rest (running, not
    waiting) ranks by its size class, base weight and arrival, read straight from its summary: no rank is built per
    candidate. Within the preemptor's PriorityClass only a lower rank on size and weight is taken (`may_preempt`),
    or a suspension. A job that tells nothing of its checkpoints and has not run its minimum yet, or was taken as
    often as an hour allows, is not taken at all; none is scaled in before its minimum run (a scale-in loses no
    training to weigh, and the minimum keeps it from undoing a start moments old: `run_protection`). Whole gangs of
    one PriorityClass go cheapest first: by the training they would lose and their restart (`taking_cost`)."""
    queue = queue_of(snapshot, settings)
    own = set(state.members)
    subjects: list[Subject] = []
    for summary in queue.summaries.values():
        if summary.priority > preemptor.priority or not summary.bound or _kueue_managed(snapshot, summary.job):
            continue
        job = snapshot.jobs.get(summary.job) if summary.job else None
        risk = summary_at_risk(job, summary, now, settings)
        young = too_young_to_preempt(job, summary.started, settings, now)
        if (young and tells_nothing(risk)) or taken_too_often(job, settings, now):
            continue
        lower = summary.priority < preemptor.priority
        margin = (suspensions or {}).get(summary.key)
        pays = margin is not None and margin > risk.seconds + settings.restart_cost_s
        suspend = pays or (lower and _may_suspend(snapshot, summary.job))
        whole = lower or suspend
        if not (whole or summary.surplus):
            continue
        if summary.origin in own or own.intersection(GangKey(summary.key).groups):
            continue
        if summary.ages:
            aged = summary.rank(now, settings)
            size, weight, arrival = aged.size_class, aged.weight, summary.arrival or now
        else:
            size, weight, arrival = summary.size_class, summary.base_weight, summary.arrival or now
        key, origin, pods = summary.key, summary.origin, summary.bound_pods
        if summary.surplus and not young and (lower or _lower_in_class(size, weight, preemptor)):
            order = (SURPLUS, summary.priority, 0.0, -int(summary.demoted), -size, weight, -arrival, key)
            subjects.append(Subject(order, key, origin, True, summary.surplus, pods, summary))
        if whole:
            kind = SUSPENSION if suspend else WHOLE_GANG
            cost = cost_of(risk, settings)
            order = (kind, summary.priority, cost, -int(summary.demoted), -size, weight, -arrival, key)
            subjects.append(
                Subject(order, key, origin, False, summary.bound, pods, summary, suspend=suspend, cost=cost)
            )
    for pod in queue.loose_pods_below(snapshot, preemptor.priority):
        if _kueue_managed(snapshot, pod.job) or not settings.manages(pod.key):
            continue
        rank = _pod_rank(pod, settings)
        order = (LOOSE_POD, rank.priority, 0.0, *ascending(rank)[1:])
        subjects.append(Subject(order, pod.key, "", False, pod.requests, 1, None, pod, rank))
    return tuple(subjects)


def _kueue_managed(snapshot: ClusterSnapshot, job_key: str) -> bool:
    """Whether the pods of this TFJob are Kueue's to preempt, never a victim here (`JobView.kueue_managed`)."""
    job = snapshot.jobs.get(job_key) if job_key else None
    return job is not None and job.kueue_managed


def may_preempt(preemptor: JobRank, victim: JobRank) -> bool:
    """A higher PriorityClass; or the same one and a strictly higher rank on size and weight: a lower size
    class, or the same class and a strictly higher (aged) weight. Arrival order alone never makes one job a
    victim of another (an equal-ranked job is never touched)."""
    if preemptor.priority != victim.priority:
        return preemptor.priority > victim.priority
    if preemptor.size_class != victim.size_class:
        return preemptor.size_class < victim.size_class
    return preemptor.weight > victim.weight


def _lower_in_class(size_class: int, weight: float, preemptor: JobRank) -> bool:
    """`may_preempt` within one PriorityClass, on a victim's size class and weight read from its summary."""
    if size_class != preemptor.size_class:
        return preemptor.size_class < size_class
    return weight < preemptor.weight


def ascending(rank: JobRank) -> tuple[int, int, int, float, float, str]:
    """Lowest rank first: the rank order's numeric parts reversed, ties still by key."""
    return (rank.priority, -int(rank.demoted), -rank.size_class, rank.weight, -rank.arrival, rank.subject)


def _pod_rank(pod: PodView, settings: PolicySettings) -> JobRank:
    weight = settings.default_weight
    return JobRank(
        subject=pod.key, priority=pod.priority, weight=weight, arrival=pod.created, starving=False, base_weight=weight
    )


def _surplus_units(
    snapshot: ClusterSnapshot, subject: str, bound: Sequence[PodView], rank: JobRank
) -> list[VictimUnit]:
    """One unit per surplus worker of an elastic, dynamic-worker TFJob, highest index first."""
    job = snapshot.jobs.get(bound[0].job) if bound[0].job else None
    if job is None or not job.enable_dynamic_worker or not job.elastic:
        return []
    replicas = job.replicas.get(Role.WORKER, 0)
    by_index = {pod.index: pod for pod in bound if pod.role is Role.WORKER}
    units = []
    for scale_to in range(replicas - 1, job.min_workers - 1, -1):
        worker = by_index.get(scale_to)
        units.append(VictimUnit(subject, job.key, (worker,) if worker else (), rank, scale_to))
    return units


def freed_by(chosen: Sequence[VictimUnit]) -> dict[str, Resources]:
    """Node → what the chosen units free there, each pod counted once (a job's surplus units and its
    whole-gang unit share pods)."""
    freed: dict[str, Resources] = {}
    for pod in victims_of(chosen):
        freed[pod.node_name] = freed.get(pod.node_name, EMPTY) + pod.requests
    return freed


def victims_of(chosen: Sequence[VictimUnit]) -> tuple[PodView, ...]:
    """The pods the units remove, each once, in the order the units were chosen."""
    return tuple({pod.key: pod for unit in chosen for pod in unit.pods}.values())
