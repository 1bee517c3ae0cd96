"""Rank order between waiting gangs: who may start now without delaying a higher-ranked gang.

kube-scheduler pops pods in its own order (pod priority, then age), not in our rank order, so a member of
a lower-ranked gang often reaches `filter` first. Its plan is admitted only if it delays no higher-ranked
waiting gang:
- a higher-ranked gang that fits now must still fit once this plan is reserved (both start);
- a higher-ranked gang that does not fit now cannot use the capacity either, so the lower one may take
  it (backfill);
- a STARVING gang holds capacity against every non-starving gang of its PriorityClass or below, whatever
  their weights: they wait, and capacity that frees up accumulates for it until it starts. A starving
  gang too large for the whole cluster holds nothing back (it could never start).
Only waiting gangs count: satisfied ones, and ones still missing members, hold nothing. At most
`settings.rank_gangs_checked` gangs are tested, highest first, to bound the cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from extender.policy.gang import GangState, gang_state, membership_generation, plan_gang
from extender.policy.model import ClusterSnapshot, FailedPlan, Reservation
from extender.policy.queue import GangQueue, queue_of
from extender.policy.ranking import JobRank, cluster_capacity, gang_rank
from extender.policy.resources import EMPTY, Resources, total
from extender.policy.settings import PolicySettings


def held_back_by(
    snapshot: ClusterSnapshot,
    state: GangState,
    plan: Sequence[Reservation],
    settings: PolicySettings,
    now: float,
) -> str | None:
    """Why the gang of `state` must let a higher-ranked gang go first, or None when it may start."""
    queue = queue_of(snapshot, settings)
    own = queue.rank(state.key, now, settings) or gang_rank(snapshot, next(iter(state.members)), now, settings)
    taken = _taken(plan)
    capacity = cluster_capacity(snapshot)
    checked = 0
    for rank in _going_first(queue, own, now, settings):
        if checked >= settings.rank_gangs_checked:
            break
        summary = queue.summaries[rank.subject]
        if not summary.waiting:
            continue
        checked += 1
        other = gang_state(snapshot, summary.origin)
        reason = _conflict(snapshot, other, rank, taken, capacity, settings, now)
        if reason is not None:
            return f"gang {state.key} waits: {reason}"
    return None


def _going_first(queue: GangQueue, own: JobRank, now: float, settings: PolicySettings) -> Iterator[JobRank]:
    """The waiting gangs that go before `own`, in rank order: those ranked above it that `_comes_first`
    lets through, then (when `own` is not starving) the starving gangs of its PriorityClass ranked below."""
    for rank in queue.waiting(now, settings):
        if rank.subject == own.subject:
            continue
        if not rank.outranks(own):
            break
        if _comes_first(rank, own):
            yield rank
    if not own.starving:
        yield from (
            rank
            for rank in queue.starving(now, settings)
            if rank.priority == own.priority and own.outranks(rank) and rank.subject != own.subject
        )


def _comes_first(rank: JobRank, own: JobRank) -> bool:
    """Whether the gang of `rank` goes before the one planning now. A starving gang goes before every
    non-starving gang of its PriorityClass or below, whatever their weights (aging is bounded, so this
    hold is what guarantees it starts); otherwise the rank order decides."""
    if rank.starving != own.starving and rank.priority == own.priority:
        return rank.starving
    return rank.outranks(own)


def _conflict(
    snapshot: ClusterSnapshot,
    other: GangState,
    rank: JobRank,
    taken: dict[str, Resources],
    capacity: Resources,
    settings: PolicySettings,
    now: float,
) -> str | None:
    remembered = snapshot.failed_plans.get(other.key)
    if remembered is not None and _still_valid(snapshot, other, remembered):
        fits_now = None
    else:
        fits_now = plan_gang(snapshot, other, settings, now)
    if fits_now is not None and fits_now.admitted:
        if _survives(snapshot, other, fits_now.reservations, taken):
            return None
        if plan_gang(snapshot, other, settings, now, freed=taken).admitted:
            return None
        return f"starting it would delay higher-ranked gang {other.key}"
    if rank.starving and _could_ever_fit(other, capacity):
        return f"capacity is held for starving gang {other.key} (waiting {rank.waited_s:.0f}s)"
    return None


def _still_valid(snapshot: ClusterSnapshot, state: GangState, failed: FailedPlan) -> bool:
    """A failed plan still holds while neither capacity has grown nor the gang's membership changed."""
    return (
        failed.capacity_generation == snapshot.capacity_generation
        and failed.membership_generation == membership_generation(snapshot, state)
    )


def _survives(
    snapshot: ClusterSnapshot, state: GangState, plan: Sequence[Reservation], taken: Mapping[str, Resources]
) -> bool:
    """Whether the other gang's own plan still fits once `taken` is reserved: then both can start, and
    there is no need to plan it again."""
    if any(pod.key in snapshot.reservations for members in state.members.values() for pod in members):
        return False
    needs: dict[str, Resources] = {}
    for reservation in plan:
        if reservation.node in taken:
            needs[reservation.node] = needs.get(reservation.node, EMPTY) + reservation.requests
    return all(need.fits_in(snapshot.free_on(node) + taken[node]) for node, need in needs.items())


def _taken(plan: Sequence[Reservation]) -> dict[str, Resources]:
    """The plan's reservations as negative freed capacity, for a dry run of what would be left."""
    taken: dict[str, Resources] = {}
    for reservation in plan:
        taken[reservation.node] = taken.get(reservation.node, EMPTY) - reservation.requests
    return taken


def _could_ever_fit(state: GangState, capacity: Resources) -> bool:
    demand = total(pod.requests for members in state.members.values() for pod in members if pod.pending)
    return demand.fits_in(capacity)
