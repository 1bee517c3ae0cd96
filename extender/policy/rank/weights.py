"""Job weights, size classes and bounded starvation aging: what a gang's rank is made of (KOD2, Algorithm 1
and Equation (1); the spatial half of Tiresias' two-dimensional service).

A gang's rank is, in order: its PriorityClass value, its size class, its (aged) weight, its arrival time
(earlier wins, as KOD2's scale-in spares an equal-weight job that arrived first), then its key, so the
order is total and deterministic. The size class is the gang's dominant share of the cluster (CPU,
memory or GPUs) at its minimum on a log scale — the service it asks for per second, Tiresias' spatial
dimension — so smaller gangs come first: the KOD2 weight of a rigid job grows with its size, since its
PS is shared by more workers, and ranking by weight alone lets the largest gangs go first. Gangs of
similar size are ordered by weight. The class depends on the gang's size and the cluster's capacity
only, never on the clock (the temporal dimension, time already trained, is left out: ranking running
jobs by it shares the cluster between similar-length jobs and made the KOD2 scenario slower), so the
gang queue can keep gangs sorted by it as events arrive.
The weight follows KOD2: a raw score proportional to the job's minimum worker count and inversely
proportional to the CPU and memory it needs at that minimum, each normalised as a share of the
schedulable cluster, squashed to (0, 1) by a sigmoid centred by a named offset:

    ω' = weight_scale × min_workers / (cpu_share + memory_share)        ω = sigmoid(ω' − weight_offset)

Cheap jobs with many workers score high and run first (lower mean completion time); expensive jobs score
low. So that they cannot starve, a gang that has waited unsatisfied beyond `starvation_limit_s` (KOD2's
STARVELIMIT) ages: its weight climbs linearly, capped at `aging_max_weight`, it climbs one size class
then and one more per further limit, and it is reported STARVING. Aging never crosses PriorityClasses,
never lowers a weight or raises a class, and stops as soon as the gang is satisfied, so a once-starved
job cannot stay ahead forever; only starving gangs move with time, and only up. Everything here is
pure: `now` is a parameter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from extender.policy.core.resources import CPU, GPU, MEMORY, Resources, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView, JobView, PodView
from extender.policy.gang.state import GangState, is_satisfied

WEIGHT_DIMENSIONS = (CPU, MEMORY)
"""The resources whose cluster share makes a job expensive (KOD2: CPU and memory)."""
SHARE_DIMENSIONS = (CPU, MEMORY, GPU)
"""The resources whose largest share of the cluster is a gang's size."""

_MAX_LOGIT = 20.0
"""The sigmoid's argument is clamped to ±this, so a weight stays strictly inside (0, 1) (≈2e-9 from
either end) whatever the settings; jobs beyond the clamp tie on weight and go in arrival order."""

_MIN_SHARE = 1e-9
"""Hard floor under the summed share, should `weight_min_share` be set to zero."""


RankKey = tuple[int, int, int, float, float, str]
"""(−priority, demoted, size class, −weight, arrival, key): ascending order is rank order."""


@dataclass(frozen=True, slots=True)
class JobRank:
    """Where a gang (or a loose pod) stands in the queue; a smaller `sort_key` ranks higher."""

    subject: str
    """The gang key (sorted, comma-joined PodGroup keys; the PodGroup key for a single group) or a pod key."""
    priority: int
    """PriorityClass value: compared first, aging never crosses it."""
    weight: float
    """The aged weight the rank uses (equal to `base_weight` until the gang starves)."""
    arrival: float
    """Seconds since the epoch; among equal weights the earlier arrival wins."""
    starving: bool
    """Waited unsatisfied beyond the starvation limit."""
    base_weight: float
    """The KOD2 weight before aging."""
    job: str = ""
    """`namespace/name` of the TFJob weighed, or empty."""
    waited_s: float = 0.0
    """Seconds the gang has waited unsatisfied (0 once it is satisfied or has nothing pending)."""
    size_class: int = 0
    """The gang's size class (see `size_class`), less the classes it climbed by starving: a lower class
    ranks higher within a PriorityClass."""
    demoted: bool = False
    """Its job has run before and was suspended (`JobView.attained_s`), and it does not starve: it ranks
    after every fresh job of its PriorityClass (least attained service first, as Tiresias ranks)."""

    @property
    def sort_key(self) -> RankKey:
        """Ascending order puts the highest rank first: priority, then fresh before demoted, then size
        class, then weight, then arrival, then key."""
        return (-self.priority, int(self.demoted), self.size_class, -self.weight, self.arrival, self.subject)

    def outranks(self, other: JobRank) -> bool:
        """True when this rank comes strictly before `other`."""
        return self.sort_key < other.sort_key


def cluster_capacity(snapshot: ClusterSnapshot) -> Resources:
    """Allocatable summed over the schedulable nodes: what job weights are normalised against."""
    table = snapshot.dense_capacity
    if table is None:
        return total(state.node.allocatable for state in snapshot.nodes.values() if state.node.schedulable)
    return table.resources(table.allocatable[table.schedulable].sum(axis=0))


def job_weight(job: JobView, capacity: Resources, settings: PolicySettings) -> float:
    """The KOD2 weight of `job` in the open interval (0, 1): higher for more minimum workers per share.

    A dimension the cluster has none of is left out; with no CPU and no memory at all there is nothing to
    normalise against and every job gets `default_weight`. The summed share is floored at
    `weight_min_share`, so a job requesting nothing gets a finite (high) weight; a job with no minimum
    workers has a raw score of 0, i.e. the weight `sigmoid(−weight_offset)`.
    """
    demand = job.minimum_demand()
    shares = [demand.get(name) / capacity.get(name) for name in WEIGHT_DIMENSIONS if capacity.get(name) > 0]
    if not shares:
        return settings.default_weight
    share = max(sum(shares), settings.weight_min_share, _MIN_SHARE)
    raw = settings.weight_scale * job.min_workers / share
    return _sigmoid(raw - settings.weight_offset)


def dominant_share(demand: Resources, capacity: Resources) -> float:
    """The largest share of the cluster's CPU, memory or GPUs that `demand` takes (0 for an empty cluster)."""
    return max(
        (demand.get(name) / capacity.get(name) for name in SHARE_DIMENSIONS if capacity.get(name) > 0), default=0
    )


def size_class(share: float, settings: PolicySettings) -> int:
    """The size class of a gang taking `share` of the cluster: `share` on a log scale of `size_class_ratio`
    (one class per factor); 0 for every gang when the ratio is ≤ 1. A gang that asks for nothing is in the
    lowest class."""
    if settings.size_class_ratio <= 1:
        return 0
    return math.floor(math.log(max(share, _MIN_SHARE)) / math.log(settings.size_class_ratio))


def gang_demand(job: JobView | None, members: Sequence[PodView]) -> Resources:
    """What a gang's size is measured by: its TFJob's demand at its minimum, else all its members' requests."""
    return job.minimum_demand() if job is not None else total(pod.requests for pod in members)


def _sigmoid(logit: float) -> float:
    bounded = min(_MAX_LOGIT, max(-_MAX_LOGIT, logit))
    return 1.0 / (1.0 + math.exp(-bounded))


def aged_weight(base: float, waited_s: float, settings: PolicySettings) -> tuple[float, bool]:
    """(weight, starving) after waiting `waited_s` seconds unsatisfied.

    Up to `starvation_limit_s` the weight is `base`. Beyond it the gang is starving and its weight rises by
    `aging_rate_per_s` per second past the limit, up to `aging_max_weight`: never above the cap (a base
    already above it is kept, not lowered), never below `base`, and never decreasing as the wait grows.
    """
    beyond = waited_s - settings.starvation_limit_s
    if not beyond > 0:
        return base, False
    aged = min(settings.aging_max_weight, base + settings.aging_rate_per_s * beyond)
    return max(base, aged), True


def aged_classes(waited_s: float, settings: PolicySettings) -> int:
    """Size classes a gang has climbed by waiting `waited_s` seconds unsatisfied: one as it starts to
    starve and one more per further `starvation_limit_s`, so a starving gang overtakes ever larger fresh
    gangs and reaches the lowest class of any gang in bounded time. 0 while it does not starve."""
    beyond = waited_s - settings.starvation_limit_s
    if not beyond > 0 or settings.starvation_limit_s <= 0:
        return 0
    return 1 + math.floor(beyond / settings.starvation_limit_s)


def aging(base: float, waited_s: float, settings: PolicySettings) -> tuple[float, bool, int]:
    """(weight, starving, classes climbed) after waiting `waited_s` seconds unsatisfied: `aged_weight` and
    `aged_classes` in one step, for the rank built per waiting gang at every decision."""
    beyond = waited_s - settings.starvation_limit_s
    if not beyond > 0:
        return base, False, 0
    aged = min(settings.aging_max_weight, base + settings.aging_rate_per_s * beyond)
    limit = settings.starvation_limit_s
    return max(base, aged), True, (1 + int(beyond // limit)) if limit > 0 else 0


def rank_of(
    snapshot: ClusterSnapshot, state: GangState, now: float, settings: PolicySettings, capacity: Resources
) -> JobRank:
    """The rank of a gang whose state the caller already holds (see `gang_rank`)."""
    members = [pod for pods in state.members.values() for pod in pods]
    job = job_of(snapshot, members)
    base = settings.default_weight if job is None else job_weight(job, capacity, settings)
    arrival = arrival_of(job, state.groups, members, now)
    waiting = any(pod.pending for pod in members) and not is_satisfied(snapshot, state)
    waited = max(0.0, now - arrival) if waiting else 0.0
    weight, starving, climbed = aging(base, waited, settings)
    return JobRank(
        subject=state.key,
        priority=priority_of(snapshot, job, members),
        weight=weight,
        arrival=arrival,
        starving=starving,
        base_weight=base,
        job=job.key if job is not None else "",
        waited_s=waited,
        size_class=size_class(dominant_share(gang_demand(job, members), capacity), settings) - climbed,
        demoted=job is not None and job.attained_s > 0 and not starving,
    )


def job_of(snapshot: ClusterSnapshot, members: Sequence[PodView]) -> JobView | None:
    known = sorted({pod.job for pod in members if pod.job in snapshot.jobs})
    return snapshot.jobs[known[0]] if known else None


def priority_of(snapshot: ClusterSnapshot, job: JobView | None, members: Sequence[PodView]) -> int:
    if job is not None and job.priority_class in snapshot.priority_classes:
        return snapshot.priority_classes[job.priority_class]
    return max((pod.priority for pod in members), default=0)


def arrival_of(job: JobView | None, groups: Sequence[GroupView], members: Sequence[PodView], now: float) -> float:
    """When the gang joined the queue: the job's last suspension by the extender (a resumed job queues
    afresh), else the first known (positive) creation time: the job's, the PodGroups' earliest, the
    members' earliest (else `now`)."""
    if job is not None and job.suspended_at > 0:
        return job.suspended_at
    for created in (
        job.created if job is not None else 0.0,
        min((group.created for group in groups if group.created > 0), default=0.0),
        min((pod.created for pod in members if pod.created > 0), default=0.0),
    ):
        if created > 0:
            return created
    return now


__all__ = [
    "SHARE_DIMENSIONS",
    "WEIGHT_DIMENSIONS",
    "JobRank",
    "RankKey",
    "aged_classes",
    "aged_weight",
    "aging",
    "arrival_of",
    "cluster_capacity",
    "dominant_share",
    "gang_demand",
    "job_of",
    "job_weight",
    "priority_of",
    "rank_of",
    "size_class",
]
