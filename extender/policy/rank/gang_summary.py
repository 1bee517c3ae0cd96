"""One gang's summary: its rank inputs and standing, a pure function of the snapshot (`summarize`).

What `weights.rank_of` and the admission and preemption rules read of a gang — its job, PriorityClass
value, size class, KOD2 base weight, arrival, pending count, whether it is satisfied or complete, what
its bound members hold and what an elastic job holds beyond its minimum — derived once per change of the
gang and kept by the gang queue (`queue`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from extender.policy.core.resources import EMPTY, Resources, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView, Role
from extender.policy.gang.state import gang_state, is_satisfied, waiting_reason
from extender.policy.rank.weights import (
    JobRank,
    RankKey,
    aging,
    arrival_of,
    dominant_share,
    gang_demand,
    job_of,
    job_weight,
    priority_of,
    size_class,
)


@dataclass(frozen=True, slots=True)
class GangSummary:
    """One gang's rank inputs and standing (see the module docstring)."""

    key: str
    """The gang key: its PodGroups' keys, sorted and comma-joined."""
    origin: str
    """The PodGroup whose GangGroup annotation defined the gang (what `gang_state` is asked with); the
    first by key when several define the same gang, whatever order their events came in."""
    job: str
    priority: int
    base_weight: float
    arrival: float
    """Seconds since the epoch; 0 when no creation time is known."""
    pending: int
    """Members waiting to be scheduled."""
    satisfied: bool
    """Every group has `minMember` placed or reserved."""
    complete: bool
    """Every PodGroup exists and has at least `minMember` members created."""
    reserved: bool
    """Some member holds a reservation."""
    bound: Resources = EMPTY
    """Requests of the members holding a node."""
    bound_pods: int = 0
    """How many members hold a node."""
    surplus: Resources = EMPTY
    """Requests of bound workers beyond the minimum of an elastic dynamic-worker TFJob (what scale-in frees)."""
    scattered: bool = False
    """A bound worker (other than worker 0) runs away from every node holding one of its job's PS."""
    growable: bool = False
    """Its TFJob has dynamic workers and fewer Worker replicas than its maximum (what scale-out acts on)."""
    demand: Resources = EMPTY
    """What the gang's size is measured by (`weights.gang_demand`)."""
    size_class: int = 0
    """The size class of `demand` in the cluster (`weights.size_class`), before starvation."""
    started: float = 0.0
    """When its current run began: the first binding of a member holding a node (seconds since the epoch;
    0 when none is bound or the times are unknown)."""
    last_checkpoint: float = 0.0
    """The latest checkpoint its members reported in its current run (`PodView.last_checkpoint`, seconds
    since the epoch; 0 when none did)."""
    demoted: bool = False
    """Its job ran before and was suspended (`JobView.attained_s`): it ranks after fresh jobs of its
    PriorityClass, unless it starves."""

    @property
    def ages(self) -> bool:
        """Waits unsatisfied with pending members: its weight ages, and it is in the wait queue."""
        return self.pending > 0 and not self.satisfied

    @property
    def waiting(self) -> bool:
        """Waits for room: pending, every member created, not satisfied (what admission defers to)."""
        return self.ages and self.complete

    def static_key(self) -> RankKey:
        """The rank order before aging: priority, fresh before demoted, size class, base weight, arrival
        (unknown last), key."""
        return (
            -self.priority,
            int(self.demoted),
            self.size_class,
            -self.base_weight,
            self.arrival or math.inf,
            self.key,
        )

    def rank(self, now: float, settings: PolicySettings) -> JobRank:
        arrival = self.arrival or now
        waited = max(0.0, now - arrival) if self.ages else 0.0
        weight, starving, climbed = aging(self.base_weight, waited, settings)
        return JobRank(
            self.key,
            self.priority,
            weight,
            arrival,
            starving,
            self.base_weight,
            self.job,
            waited,
            self.size_class - climbed,
            self.demoted and not starving,
        )


def summarize(
    snapshot: ClusterSnapshot, origin: str, capacity: Resources, settings: PolicySettings
) -> GangSummary | None:
    """The summary of the gang `origin` defines, or None when it has no members or is left alone (a
    leftover of a finished job, or left to DRA: `left_alone`), which ranks nowhere and holds nothing."""
    state = gang_state(snapshot, origin)
    members = [pod for pods in state.members.values() for pod in pods]
    if not members or state.left_alone:
        return None
    job = job_of(snapshot, members)
    bound = [pod for pod in members if pod.holds_node]
    demand = gang_demand(job, members)
    started = min((pod.scheduled_at for pod in bound if pod.scheduled_at), default=0.0)
    return GangSummary(
        key=state.key,
        origin=origin,
        job=job.key if job is not None else "",
        priority=priority_of(snapshot, job, members),
        base_weight=settings.default_weight if job is None else job_weight(job, capacity, settings),
        arrival=arrival_of(job, state.groups, members, 0.0),
        pending=sum(1 for pod in members if pod.pending),
        satisfied=is_satisfied(snapshot, state),
        complete=waiting_reason(state) is None,
        reserved=any(pod.key in snapshot.reservations for pod in members),
        bound=total(pod.requests for pod in bound),
        bound_pods=len(bound),
        surplus=_surplus(snapshot, bound),
        scattered=_scattered(bound),
        growable=job is not None and job.enable_dynamic_worker and job.max_workers > job.replicas.get(Role.WORKER, 0),
        demand=demand,
        size_class=size_class(dominant_share(demand, capacity), settings),
        started=started,
        last_checkpoint=_last_checkpoint(members, started),
        demoted=job is not None and job.attained_s > 0,
    )


def _last_checkpoint(members: list[PodView], started: float) -> float:
    """The latest checkpoint reported within the run that began at `started` (0: none, or not running)."""
    if not started:
        return 0.0
    return max((pod.last_checkpoint for pod in members if pod.last_checkpoint >= started), default=0.0)


def _scattered(bound: list[PodView]) -> bool:
    ps_nodes = {pod.node_name for pod in bound if pod.role is Role.PS}
    return bool(ps_nodes) and any(
        pod.role is Role.WORKER and pod.index > 0 and pod.node_name not in ps_nodes for pod in bound
    )


def _surplus(snapshot: ClusterSnapshot, bound: list[PodView]) -> Resources:
    job = snapshot.jobs.get(bound[0].job) if bound and bound[0].job else None
    if job is None or not job.enable_dynamic_worker or not job.elastic:
        return EMPTY
    return total(pod.requests for pod in bound if pod.role is Role.WORKER and pod.index >= job.min_workers)
