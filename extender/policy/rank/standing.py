"""Where each gang stands and what it waits for: the read-only answer to "why is my job pending?".

Nothing here decides anything: it reads the gang queue (`queue`), the job weights (`weights`) and the
admission rule (`admission.held_back_by`) and explains, per gang, in words and with a stable reason code:
- its weight: the KOD2 base weight with the inputs of Equation (1) (minimum workers, CPU and memory shares
  of the schedulable cluster), the aged weight, the PriorityClass value and the starvation clock;
- its rank among the waiting gangs (1 is next; the order admission defers in);
- what it waits for (`WaitKind`): members not created yet, victims of its preemption still terminating,
  a plan reserved and members being bound, room held by a higher-ranked gang's reservation, a higher-ranked
  gang that must go first, room that does not exist (with the best plan found and its shortfall), or a
  cluster too small for it whatever runs (`NEVER_FITS`: its minimum asks more than every schedulable node
  together has, or one of its pods more than any one node has).
Planning a gang costs a placement, so `explain_queue` explains at most `limit` gangs, highest rank first,
and reuses a failed plan while it still holds (the same rule admission uses). A view has no candidate nodes
at hand, so it takes the last failure whatever nodes `filter` tried it on, and says where
(`Wait.tried_on`: the member and the number of nodes kube-scheduler offered it, or every node for a plan
made here); `filter` itself reuses it only for those nodes (`gang.state.standing_failed_plan`). Pure:
`now` is a parameter.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass

from extender.policy.core.resources import CPU, EMPTY, MEMORY, Resources, describe, describe_amount, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import JobView
from extender.policy.gang.planner import GangVerdict, plan_gang
from extender.policy.gang.state import GangState, gang_state, standing_failed_plan, waiting_reason
from extender.policy.rank.admission import held_back_by
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import GangQueue, queue_of
from extender.policy.rank.weights import JobRank, cluster_capacity, job_weight

_GANG_NAME = re.compile(r"gang ([^\s()]+)")


class WaitKind(enum.Enum):
    """What a gang waits for; the value is the stable reason string of the Event written on its pods."""

    MEMBERS_NOT_CREATED = "GangWaitingForMembers"
    VICTIMS_TERMINATING = "GangWaitingForVictims"
    BEING_PREEMPTED = "GangBeingPreempted"
    RESERVED = "GangReserved"
    HIGHER_RANKED_RESERVATION = "GangWaitingForReservation"
    HIGHER_RANKED_FIRST = "GangWaitingForHigherRanked"
    NO_ROOM = "GangWaitingForRoom"
    NEVER_FITS = "GangBiggerThanCluster"
    SCHEDULABLE = "GangSchedulable"
    NOT_EXAMINED = "GangNotExamined"


@dataclass(frozen=True, slots=True)
class WeightBreakdown:
    """KOD2 Equation (1) for one job: ω = sigmoid(scale × min_workers / (cpu_share + memory_share) − offset)."""

    min_workers: int
    cpu_share: float
    """CPU at the job's minimum, as a share of the schedulable cluster's (0 when the cluster has none)."""
    memory_share: float
    weight: float
    """`weights.job_weight` of the job: the base weight before aging."""


@dataclass(frozen=True, slots=True)
class Wait:
    kind: WaitKind
    message: str
    blockers: tuple[str, ...] = ()
    """The gangs (or preempted subjects) it waits on, when that is what it waits for."""
    placed: int = 0
    """With `NO_ROOM`: pods the best plan found could place."""
    needed: int = 0
    """With `NO_ROOM`: pods it has to place."""
    tried_on: str = ""
    """With `NO_ROOM`: where that best plan was tried (`FailedPlan.tried_on`)."""
    remedy: str = ""
    """What would let it start, for a person."""


@dataclass(frozen=True, slots=True)
class Standing:
    """One gang with pending members: its rank inputs, its place in the queue, what it waits for."""

    gang: str
    job: str
    rank: JobRank
    position: int | None
    """1-based place among the waiting gangs (None: not in the wait queue, e.g. already reserved)."""
    wait: Wait


def weight_breakdown(job: JobView, capacity: Resources, settings: PolicySettings) -> WeightBreakdown:
    demand = job.minimum_demand()
    shares = {name: demand.get(name) / capacity.get(name) if capacity.get(name) > 0 else 0.0 for name in (CPU, MEMORY)}
    return WeightBreakdown(job.min_workers, shares[CPU], shares[MEMORY], job_weight(job, capacity, settings))


def waiting_positions(queue: GangQueue, now: float, settings: PolicySettings) -> dict[str, int]:
    """Gang key → 1-based place in the wait queue, in the order admission defers in."""
    return {rank.subject: place for place, rank in enumerate(queue.waiting(now, settings), start=1)}


def explain_queue(snapshot: ClusterSnapshot, settings: PolicySettings, now: float, limit: int) -> Iterator[Standing]:
    """Every gang with pending members: reserved ones first, then the wait queue in rank order. Past `limit`
    explained gangs the rest are listed as `NOT_EXAMINED`."""
    queue = queue_of(snapshot, settings)
    reserved = sorted(
        (summary for summary in queue.summaries.values() if summary.pending and summary.satisfied),
        key=lambda summary: summary.rank(now, settings).sort_key,
    )
    explained = 0
    for summary in reserved:
        explained += 1
        yield _standing(snapshot, queue, summary, None, settings, now, examine=explained <= limit)
    for place, rank in enumerate(queue.waiting(now, settings), start=1):
        explained += 1
        summary = queue.summaries[rank.subject]
        yield _standing(snapshot, queue, summary, place, settings, now, examine=explained <= limit)


def explain_gang(snapshot: ClusterSnapshot, group_key: str, settings: PolicySettings, now: float) -> Standing | None:
    """The standing of the gang `group_key` belongs to, or None when it has no members."""
    queue = queue_of(snapshot, settings)
    summary = queue.summary_of_group(group_key)
    if summary is None:
        return None
    place = waiting_positions(queue, now, settings).get(summary.key) if summary.ages else None
    return _standing(snapshot, queue, summary, place, settings, now, examine=True)


def _standing(
    snapshot: ClusterSnapshot,
    queue: GangQueue,
    summary: GangSummary,
    place: int | None,
    settings: PolicySettings,
    now: float,
    *,
    examine: bool,
) -> Standing:
    rank = summary.rank(now, settings)
    if not examine:
        wait = Wait(WaitKind.NOT_EXAMINED, f"gang {summary.key}: not examined (past the first gangs of the queue)")
    else:
        wait = _wait(snapshot, queue, summary, settings, now)
    return Standing(summary.key, summary.job, rank, place, wait)


def _wait(
    snapshot: ClusterSnapshot, queue: GangQueue, summary: GangSummary, settings: PolicySettings, now: float
) -> Wait:
    state = gang_state(snapshot, summary.origin)
    if summary.pending == 0:
        return Wait(WaitKind.SCHEDULABLE, f"gang {summary.key}: nothing pending")
    missing = waiting_reason(state)
    if missing is not None:
        return Wait(WaitKind.MEMBERS_NOT_CREATED, missing, remedy="its controller creating the missing members")
    leaving = snapshot.members_leaving(summary.origin)
    if leaving:
        return _being_preempted(snapshot, summary, leaving)
    if summary.satisfied:
        return _reserved(snapshot, summary)
    verdict = _verdict(snapshot, state, settings, now)
    if verdict.admitted:
        held = held_back_by(snapshot, state, verdict.reservations, settings, now)
        if held is not None:
            return Wait(
                WaitKind.HIGHER_RANKED_FIRST,
                held,
                blockers=_gangs_named(held, queue),
                remedy="the higher-ranked gang starting or leaving the queue",
            )
        return Wait(
            WaitKind.SCHEDULABLE,
            f"gang {summary.key}: a plan fits now; it is reserved when kube-scheduler next tries a member",
            remedy="kube-scheduler retrying a member (its backoff is at most 10 s)",
        )
    return _no_room(snapshot, queue, state, summary, verdict, settings, now)


def _verdict(snapshot: ClusterSnapshot, state: GangState, settings: PolicySettings, now: float) -> GangVerdict:
    failed = standing_failed_plan(snapshot, state)
    if failed is not None:
        return GangVerdict(state.key, False, failed.reason, failed_plan=failed)
    return plan_gang(snapshot, state, settings, now)


def _being_preempted(snapshot: ClusterSnapshot, summary: GangSummary, leaving: list[str]) -> Wait:
    removed = set(leaving)
    preemptors = tuple(sorted(r.gang for r in snapshot.preemptions.values() if removed & r.victims))
    return Wait(
        WaitKind.BEING_PREEMPTED,
        f"gang {summary.key}: {len(leaving)} of its pods are being removed by the preemption for "
        f"{', '.join(preemptors) or 'another gang'} and still hold their nodes ({', '.join(leaving[:5])}); "
        "it takes no new member until they are gone",
        blockers=preemptors,
        remedy="the preempted pods finishing their termination, then room for the whole gang",
    )


def _reserved(snapshot: ClusterSnapshot, summary: GangSummary) -> Wait:
    record = snapshot.preemptions.get(summary.key)
    present = snapshot.victims_holding(record) if record is not None else []
    if record is not None and present:
        return Wait(
            WaitKind.VICTIMS_TERMINATING,
            f"gang {summary.key}: its plan is reserved; {len(present)} victim pod(s) of its preemption are "
            f"still terminating ({', '.join(present[:5])})",
            blockers=tuple(sorted({*record.evicted, *record.scaled_in})),
            remedy="the victims finishing their termination",
        )
    return Wait(
        WaitKind.RESERVED,
        f"gang {summary.key}: its plan is reserved; {summary.pending} member(s) are being bound",
        remedy="kube-scheduler binding the members to their reserved nodes",
    )


def _no_room(
    snapshot: ClusterSnapshot,
    queue: GangQueue,
    state: GangState,
    summary: GangSummary,
    verdict: GangVerdict,
    settings: PolicySettings,
    now: float,
) -> Wait:
    never = never_fits(snapshot, state, summary)
    if never is not None:
        return never
    others = _reservations_of_others(snapshot, state)
    if others:
        freed: dict[str, Resources] = {}
        holders: set[str] = set()
        for node, group, requests in others:
            freed[node] = freed.get(node, EMPTY) + requests
            holders.add(queue.gang_of.get(group, group))
        if plan_gang(snapshot, state, settings, now, freed=freed).admitted:
            names = ", ".join(sorted(holders))
            return Wait(
                WaitKind.HIGHER_RANKED_RESERVATION,
                f"gang {summary.key}: the room it needs is reserved for {names}",
                blockers=tuple(sorted(holders)),
                remedy=f"{names} binding (or its plan expiring)",
            )
    failed = verdict.failed_plan
    placed, needed = (failed.placed, failed.needed) if failed is not None else (0, summary.pending)
    tried_on = failed.tried_on if failed is not None else ""
    pending = [pod for members in state.members.values() for pod in members if pod.pending]
    free = free_capacity(snapshot)
    freeable = queue.freeable_below(summary.priority)
    remedy = (
        f"room for {needed - placed} more pod(s) of {describe(pending[0].requests) if pending else '-'}: "
        f"the cluster has {describe(free)} free in all; lower-ranked work holds {describe(freeable)} "
        "that a preemption could free; or nodes joining"
    )
    return Wait(WaitKind.NO_ROOM, verdict.reason, placed=placed, needed=needed, tried_on=tried_on, remedy=remedy)


def never_fits(snapshot: ClusterSnapshot, state: GangState, summary: GangSummary) -> Wait | None:
    """A `NEVER_FITS` wait when the gang cannot start on this cluster even empty (`bigger_than_cluster`),
    None otherwise."""
    why = bigger_than_cluster(snapshot, state, summary)
    if why is None:
        return None
    return Wait(
        WaitKind.NEVER_FITS,
        f"gang {summary.key}: it can never start on this cluster: {why}",
        remedy="a smaller job (fewer workers, smaller requests) or bigger nodes joining: waiting alone never helps",
    )


def bigger_than_cluster(snapshot: ClusterSnapshot, state: GangState, summary: GangSummary) -> str | None:
    """Why the gang cannot start on this cluster even empty: its minimum (its TFJob's, else every member's
    requests) asks more than the schedulable nodes have together, or one of its pods more than any one
    schedulable node has. None when neither holds."""
    nodes = [entry.node.allocatable for entry in snapshot.nodes.values() if entry.node.schedulable]
    job = snapshot.jobs.get(summary.job) if summary.job else None
    pods = [pod for members in state.members.values() for pod in members]
    demand = job.minimum_demand() if job is not None else total(pod.requests for pod in pods)
    capacity = cluster_capacity(snapshot)
    names = demand.missing_names(capacity)
    if names:
        asked = ", ".join(
            f"{describe_amount(n, demand.get(n))} of {describe_amount(n, capacity.get(n))}" for n in names
        )
        why = f"its minimum asks more than the whole cluster has ({asked} on {len(nodes)} schedulable nodes)"
    else:
        too_big = next((pod for pod in pods if not any(pod.requests.fits_in(node) for node in nodes)), None)
        if too_big is None:
            return None
        why = f"its pod {too_big.key} asks {describe(too_big.requests)}, more than any one schedulable node has"
    return why


def _reservations_of_others(snapshot: ClusterSnapshot, state: GangState) -> list[tuple[str, str, Resources]]:
    """(node, PodGroup, requests) of every reservation held by another gang."""
    own = set(state.members)
    return [(held.node, held.group, held.requests) for held in snapshot.reservations.values() if held.group not in own]


def _gangs_named(message: str, queue: GangQueue) -> tuple[str, ...]:
    """The gangs an admission refusal names after "waits:"."""
    tail = message.split(" waits: ", 1)[-1]
    return tuple(sorted({name for name in _GANG_NAME.findall(tail) if name in queue.summaries}))


def free_capacity(snapshot: ClusterSnapshot) -> Resources:
    """What the schedulable nodes have left after bound pods and reservations, summed."""
    table = snapshot.dense_capacity
    if table is None:
        return total(state.available for state in snapshot.nodes.values() if state.node.schedulable)
    return table.resources(table.available[table.schedulable].sum(axis=0))


def schedulable_capacity(snapshot: ClusterSnapshot) -> Resources:
    """What every base weight is normalised against (the schedulable cluster's allocatable)."""
    return cluster_capacity(snapshot)


__all__ = [
    "Standing",
    "Wait",
    "WaitKind",
    "WeightBreakdown",
    "bigger_than_cluster",
    "explain_gang",
    "explain_queue",
    "free_capacity",
    "schedulable_capacity",
    "waiting_positions",
    "weight_breakdown",
]
