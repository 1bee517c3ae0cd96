"""Rank order between waiting gangs: who may start now without delaying a higher-ranked gang.

kube-scheduler pops pods in its own order (pod priority, then age), not in our rank order, so a member of
a lower-ranked gang often reaches `filter` first. Its plan is admitted only if it delays no higher-ranked
waiting gang:
- a higher-ranked gang that fits now must still fit once this plan is reserved (both start);
- a higher-ranked gang that does not fit now cannot use the capacity either, so the lower one may take
  it (backfill);
- the highest-ranked STARVING gangs (`starving_reservations`; see `backfill`) hold capacity against every
  other gang of their PriorityClass, whatever their rank: the room their minimum needs on the nodes that
  clear soonest, which fills up as what runs there leaves. Every plan goes around that room where it
  can; whether one that fits only by taking it may start is `backfill.keeps_out`'s (`starving_hold`).
  With `starving_backfill` off every starving gang (up to `rank_gangs_checked`) holds all capacity that
  frees up, and keeps everything else out of it. A starving gang too large for the whole cluster holds
  nothing back (it could never start).
Only waiting gangs count: satisfied ones, and ones still missing members, hold nothing. At most
`settings.rank_gangs_checked` gangs are tested, highest first, to bound the cost.
`plan_in_rank` plans a gang around the room held against it and `admissible_plan` adds the held-back
check: `filter` and the preemption loop (which reserves the plan of a gang that may start now, before
kube-scheduler's backoff lets its pods back in) decide with the same two calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.gang.planner import GangVerdict, plan_gang
from extender.policy.gang.state import GangState, gang_state
from extender.policy.rank.backfill import (
    NO_HOLDERS,
    Holders,
    Holds,
    Verdicts,
    could_ever_fit,
    goes_before,
    holding_gangs,
    keeps_out,
    plan_now,
    starving_holds,
    takes_held_room,
)
from extender.policy.rank.queue import GangQueue, queue_of
from extender.policy.rank.ranking import JobRank, cluster_capacity, gang_rank


@dataclass(frozen=True, slots=True)
class Precedence:
    """Where a gang planning now stands among the waiting gangs: worked out once per decision and shared
    by the plan (which leaves `holds` out) and the held-back check."""

    queue: GangQueue
    own: JobRank
    starving: tuple[JobRank, ...]
    """Every starving gang, highest rank first (`GangQueue.starving`)."""
    holders: Holders
    holds: Holds
    """The room held against this gang for starving gangs that go before it (see `backfill`)."""
    capacity: Resources
    verdicts: Verdicts = field(default_factory=dict)


def precedence_of(snapshot: ClusterSnapshot, state: GangState, settings: PolicySettings, now: float) -> Precedence:
    """The precedence of the gang of `state` at `now`."""
    queue = queue_of(snapshot, settings)
    own = queue.rank(state.key, now, settings) or gang_rank(snapshot, next(iter(state.members)), now, settings)
    starving = tuple(queue.starving(now, settings))
    holders = holding_gangs(queue, starving, settings) if starving else NO_HOLDERS
    capacity = cluster_capacity(snapshot)
    verdicts: Verdicts = {}
    holds = starving_holds(snapshot, queue, holders, own, settings, now, capacity, verdicts) if starving else {}
    return Precedence(queue, own, starving, holders, holds, capacity, verdicts)


def plan_in_rank(
    snapshot: ClusterSnapshot,
    state: GangState,
    settings: PolicySettings,
    now: float,
    *,
    pinned: Mapping[str, frozenset[str]] | None = None,
) -> tuple[GangVerdict, Precedence]:
    """The gang's plan around the room held for starving gangs that go before it, with its precedence.
    When it fits only in that room, the plan that takes it: `held_back_by` then names the hold it takes."""
    precedence = precedence_of(snapshot, state, settings, now)
    verdict = plan_gang(snapshot, state, settings, now, pinned=pinned, freed=_kept_out(precedence.holds))
    if precedence.holds and not verdict.admitted:
        verdict = plan_gang(snapshot, state, settings, now, pinned=pinned)
    return verdict, precedence


def admissible_plan(snapshot: ClusterSnapshot, state: GangState, settings: PolicySettings, now: float) -> GangVerdict:
    """The plan the gang may reserve now (admitted, delaying no gang that goes before it), else the verdict
    that says why not: for a gang that fits but yields, not admitted with the plan it would have taken."""
    verdict, precedence = plan_in_rank(snapshot, state, settings, now)
    if not verdict.admitted:
        return verdict
    yielding = held_back_by(snapshot, state, verdict.reservations, settings, now, precedence)
    if yielding is None:
        return verdict
    return GangVerdict(verdict.gang, False, yielding, verdict.reservations)


def _kept_out(holds: Holds) -> dict[str, Resources] | None:
    """The room held for starving gangs as negative freed capacity, so a plan goes around it."""
    return {node: EMPTY - room for node, room in holds.items()} or None


def held_back_by(
    snapshot: ClusterSnapshot,
    state: GangState,
    plan: Sequence[Reservation],
    settings: PolicySettings,
    now: float,
    precedence: Precedence | None = None,
) -> str | None:
    """Why the gang of `state` must let a higher-ranked gang go first, or None when it may start.
    `precedence`: the caller's `precedence_of` the gang, when it has it."""
    if precedence is None:
        precedence = precedence_of(snapshot, state, settings, now)
    queue = precedence.queue
    taken = _taken(plan)
    checked = 0
    for rank in _going_first(queue, precedence, now, settings):
        if checked >= settings.rank_gangs_checked:
            break
        summary = queue.summaries[rank.subject]
        if not summary.waiting:
            continue
        checked += 1
        other = gang_state(snapshot, summary.origin)
        holds = precedence.holds if rank.subject in precedence.holders.subjects else None
        reason = _conflict(snapshot, other, rank, taken, precedence, settings, now, holds)
        if reason is not None:
            return f"gang {state.key} waits: {reason}"
    return None


def _going_first(queue: GangQueue, precedence: Precedence, now: float, settings: PolicySettings) -> Iterator[JobRank]:
    """The waiting gangs that go before the one planning, in rank order: those ranked above it that
    `goes_before` lets through, then (when it does not hold) the holding gangs of its PriorityClass ranked
    below it."""
    own, holders = precedence.own, precedence.holders
    for rank in queue.waiting(now, settings, precedence.starving):
        if rank.subject == own.subject:
            continue
        if not rank.outranks(own):
            break
        if goes_before(rank, own, holders):
            yield rank
    if own.subject not in holders.subjects:
        yield from (
            rank
            for rank in holders.ranks
            if rank.priority == own.priority and own.outranks(rank) and rank.subject != own.subject
        )


def _conflict(
    snapshot: ClusterSnapshot,
    other: GangState,
    rank: JobRank,
    taken: dict[str, Resources],
    precedence: Precedence,
    settings: PolicySettings,
    now: float,
    holds: Holds | None,
) -> str | None:
    """Why a plan taking `taken` conflicts with the waiting gang `other` that goes before it; `holds` is the
    room held for starving gangs when `other` is one that holds, else None."""
    fits_now = plan_now(snapshot, other, settings, now, precedence.verdicts)
    if fits_now is not None and fits_now.admitted:
        if _survives(snapshot, other, fits_now.reservations, taken):
            return None
        if plan_gang(snapshot, other, settings, now, freed=taken).admitted:
            return None
        return f"starting it would delay higher-ranked gang {other.key}"
    if holds is not None and could_ever_fit(other, precedence.capacity):
        held = f"capacity is held for starving gang {other.key} (waiting {rank.waited_s:.0f}s)"
        if not settings.starving_backfill:
            return held
        if not keeps_out(rank, precedence.own, settings):
            return None
        node = takes_held_room(snapshot, {name: EMPTY - left for name, left in taken.items()}, holds)
        return None if node is None else f"{held} on {node}"
    return None


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
