"""Rank order between waiting gangs: who may start now without delaying a higher-ranked gang.

kube-scheduler pops pods in its own order (pod priority, then age), not in our rank order, so a member of
a lower-ranked gang often reaches `filter` first. Its plan is admitted only if it delays no higher-ranked
waiting gang:
- a higher-ranked gang that fits now must still fit once this plan is reserved (both start);
- a higher-ranked gang that does not fit now cannot use the capacity either, so the lower one may take
  it (backfill);
- the highest-ranked STARVING gangs (`starving_reservations`; see `backfill`) hold capacity against every
  other gang of their PriorityClass or below, whatever their rank: the room their minimum needs on the
  nodes that clear soonest, which fills up as what runs there leaves; a plan that leaves that room
  whole starts (backfill). With `starving_backfill` off every starving gang holds all capacity that frees
  up. A starving gang too large for the whole cluster holds nothing back (it could never start).
Only waiting gangs count: satisfied ones, and ones still missing members, hold nothing. At most
`settings.rank_gangs_checked` gangs are tested, highest first, to bound the cost.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.policy.backfill import Holds, goes_before, holding_gangs, starving_holds, takes_held_room
from extender.policy.gang import GangState, gang_state, is_satisfied, plan_gang, waiting_reason
from extender.policy.model import ClusterSnapshot, Reservation
from extender.policy.ranking import JobRank, cluster_capacity, gang_rank, rank_gangs
from extender.policy.resources import EMPTY, Resources, total
from extender.policy.settings import PolicySettings


def held_back_by(
    snapshot: ClusterSnapshot,
    state: GangState,
    plan: Sequence[Reservation],
    settings: PolicySettings,
    now: float,
    holds: Holds | None = None,
    ranks: Sequence[JobRank] | None = None,
) -> str | None:
    """Why the gang of `state` must let a higher-ranked gang go first, or None when it may start. `holds`
    is the room held against it for starving gangs and `ranks` every gang's rank (`rank_gangs`), when the
    caller has them (`held_for_starving`)."""
    if ranks is None:
        ranks = rank_gangs(snapshot, now, settings)
    own = next((rank for rank in ranks if rank.subject == state.key), None)
    if own is None:
        own = gang_rank(snapshot, next(iter(state.members)), now, settings)
    taken = _taken(plan)
    capacity = cluster_capacity(snapshot)
    holding = holding_gangs(snapshot, ranks, settings)
    if holds is None:
        holds = starving_holds(snapshot, ranks, own, settings, now, capacity, holding)
    checked = 0
    for rank in ranks:
        if checked >= settings.rank_gangs_checked:
            break
        if rank.subject == own.subject or not goes_before(rank, own, holding):
            continue
        other = gang_state(snapshot, rank.subject.split(",")[0])
        if not _waiting(snapshot, other):
            continue
        checked += 1
        reason = _conflict(
            snapshot, other, rank, taken, capacity, settings, now, holds if rank.subject in holding else None
        )
        if reason is not None:
            return f"gang {state.key} waits: {reason}"
    return None


def _waiting(snapshot: ClusterSnapshot, state: GangState) -> bool:
    has_pending = any(pod.pending for members in state.members.values() for pod in members)
    return has_pending and waiting_reason(state) is None and not is_satisfied(snapshot, state)


def _conflict(
    snapshot: ClusterSnapshot,
    other: GangState,
    rank: JobRank,
    taken: dict[str, Resources],
    capacity: Resources,
    settings: PolicySettings,
    now: float,
    holds: Holds | None,
) -> str | None:
    """Why a plan taking `taken` conflicts with the waiting gang `other` that goes before it; `holds` is the
    room held for starving gangs when `other` is one that holds, else None."""
    fits_now = plan_gang(snapshot, other, settings, now).admitted
    if fits_now:
        if plan_gang(snapshot, other, settings, now, freed=taken).admitted:
            return None
        return f"starting it would delay higher-ranked gang {other.key}"
    if holds is not None and _could_ever_fit(other, capacity):
        held = f"capacity is held for starving gang {other.key} (waiting {rank.waited_s:.0f}s)"
        if not settings.starving_backfill:
            return held
        node = takes_held_room(snapshot, {name: EMPTY - left for name, left in taken.items()}, holds)
        return None if node is None else f"{held} on {node}"
    return None


def held_for_starving(
    snapshot: ClusterSnapshot, state: GangState, settings: PolicySettings, now: float, ranks: Sequence[JobRank]
) -> Holds:
    """The room held against the gang of `state` for the starving gangs that go before it (see `backfill`):
    the planner leaves it out, so a lower-ranked gang is planned around it. `ranks`: `rank_gangs`."""
    own = next((rank for rank in ranks if rank.subject == state.key), None)
    if own is None:
        own = gang_rank(snapshot, next(iter(state.members)), now, settings)
    holding = holding_gangs(snapshot, ranks, settings)
    return starving_holds(snapshot, ranks, own, settings, now, cluster_capacity(snapshot), holding)


def _taken(plan: Sequence[Reservation]) -> dict[str, Resources]:
    """The plan's reservations as negative freed capacity, for a dry run of what would be left."""
    taken: dict[str, Resources] = {}
    for reservation in plan:
        taken[reservation.node] = taken.get(reservation.node, EMPTY) - reservation.requests
    return taken


def _could_ever_fit(state: GangState, capacity: Resources) -> bool:
    demand = total(pod.requests for members in state.members.values() for pod in members if pod.pending)
    return demand.fits_in(capacity)
