"""Room held for starving gangs: where each will start, so that everything else can be backfilled.

The highest-ranked waiting starving gangs — `starving_reservations` of them, or up to
`rank_gangs_checked` with `starving_backfill` off — hold: each goes before every gang of its
PriorityClass that does not hold, whatever their rank. A holding gang that cannot be planned now gets a
reservation of the room its minimum needs (every group's `minMember`, PS first) on the nodes that clear
soonest: those running the fewest jobs, then the least free now (so little room sits idle while it
waits), each counted at its whole allocatable, the pods one cannot take going to the next. Other
gangs' plans go around that room while they fit elsewhere, or beside it in what it does not need, so
that it fills up as what runs there leaves; whether a gang that fits only by taking it may
(`keeps_out`, by `starving_hold`): by default the gangs that arrived after the holding gang began to
starve are kept out until they starve themselves, so a stream of new gangs cannot take each piece as it
frees, while no gang is kept out for longer than one starvation limit. Room is counted per resource: a
plan that asks for no GPU never conflicts with GPUs held on a node. Holding gangs reserve in rank
order, each from what the ones before it left; the next starving gang holds once one of them has
started, so a long queue of starving gangs does not hold the whole cluster. A gang too large for the
whole cluster holds nothing (it could never start).

The starving gangs come from the gang queue (`GangQueue.starving`), so finding the holders costs what
the starving gangs number, not the cluster; the reservation is only computed for a holder that cannot
be planned now (a failed plan still valid is not planned again). Pure: the snapshot, the queue and
`now` are the inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np

from extender.policy.core.resources import EMPTY, Resources, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.policy.gang.placement import role_order
from extender.policy.gang.planner import GangVerdict, plan_gang
from extender.policy.gang.state import GangState, gang_state, standing_failed_plan
from extender.policy.rank.queue import GangQueue
from extender.policy.rank.weights import JobRank

Holds = dict[str, Resources]
"""Node → the room held on it for starving gangs."""

Verdicts = MutableMapping[str, GangVerdict | None]
"""Gang key → its plan on the snapshot as it is (None: a failed plan still valid says it does not fit),
shared by the checks of one decision so that no gang is planned twice."""


@dataclass(frozen=True, slots=True)
class Holders:
    """The starving gangs that hold room, highest rank first, and their keys."""

    ranks: tuple[JobRank, ...] = ()
    subjects: frozenset[str] = frozenset()


NO_HOLDERS = Holders()


def holding_gangs(queue: GangQueue, starving: Sequence[JobRank], settings: PolicySettings) -> Holders:
    """The starving gangs that hold room now: the highest-ranked waiting ones among `starving`
    (`GangQueue.starving`, highest rank first), `starving_reservations` of them (up to
    `rank_gangs_checked` with `starving_backfill` off). A starving gang climbs in rank as it waits, so each
    one gets to hold in bounded time."""
    limit = settings.starving_reservations if settings.starving_backfill else settings.rank_gangs_checked
    holding: list[JobRank] = []
    for rank in starving:
        if len(holding) >= limit:
            break
        if queue.summaries[rank.subject].waiting:
            holding.append(rank)
    return Holders(tuple(holding), frozenset(rank.subject for rank in holding)) if holding else NO_HOLDERS


def keeps_out(holder: JobRank, own: JobRank, settings: PolicySettings) -> bool:
    """Whether room held for the starving gang ranked `holder` keeps out the gang ranked `own`, which fits
    only by taking it (`starving_hold`)."""
    if settings.starving_hold == "block":
        return True
    if settings.starving_hold == "steer":
        return False
    return not own.starving and own.arrival > holder.arrival + settings.starvation_limit_s


def goes_before(rank: JobRank, own: JobRank, holders: Holders) -> bool:
    """A holding gang goes before every gang of its PriorityClass that does not hold, whatever their
    rank; otherwise the rank order decides."""
    if rank.priority == own.priority and (rank.subject in holders.subjects) != (own.subject in holders.subjects):
        return rank.subject in holders.subjects
    return rank.outranks(own)


def plan_now(
    snapshot: ClusterSnapshot, state: GangState, settings: PolicySettings, now: float, verdicts: Verdicts
) -> GangVerdict | None:
    """The gang's plan on the snapshot as it is, or None when a failed plan that still holds says it does
    not fit; remembered in `verdicts`."""
    if state.key in verdicts:
        return verdicts[state.key]
    verdict = None if standing_failed_plan(snapshot, state) is not None else plan_gang(snapshot, state, settings, now)
    verdicts[state.key] = verdict
    return verdict


def starving_holds(
    snapshot: ClusterSnapshot,
    queue: GangQueue,
    holders: Holders,
    own: JobRank,
    settings: PolicySettings,
    now: float,
    capacity: Resources,
    verdicts: Verdicts,
) -> Holds:
    """The room held against the gang ranked `own`: the reservations of the holding gangs that go before it
    and cannot be planned now; empty with `starving_backfill` off (holding gangs then hold all capacity)."""
    holds: Holds = {}
    if not settings.starving_backfill:
        return holds
    for rank in holders.ranks:
        if rank.subject == own.subject or not goes_before(rank, own, holders):
            continue
        state = gang_state(snapshot, queue.summaries[rank.subject].origin)
        if not could_ever_fit(state, capacity):
            continue
        verdict = plan_now(snapshot, state, settings, now, verdicts)
        if verdict is not None and verdict.admitted:
            continue
        for node, room in reserved_room(snapshot, state, holds).items():
            holds[node] = holds.get(node, EMPTY) + room
    return holds


def reserved_room(snapshot: ClusterSnapshot, state: GangState, held: Mapping[str, Resources]) -> Holds:
    """Where the gang's minimum goes once the nodes that clear soonest have cleared: node → what it needs
    there. Nodes are taken in order of how few jobs run on them (a node clears when its last job leaves, so
    fewer jobs clear sooner; a node whose job leaves moves to the front, so the reservation only ever gains
    room), then how little of them is free now (room occupied until the handover is room nobody waits
    on), then name; each counts its allocatable less what `held` already keeps there, and pods (PS first)
    go where they fit and may go. Pods that fit nowhere are left out."""
    pods = _minimum_pods(snapshot, state)
    if not pods:
        return {}
    table = snapshot.capacity
    rows = np.flatnonzero(table.schedulable)
    free = table.idleness(rows, table.available[rows])
    order = rows[np.lexsort((table.name_rank()[rows], free, table.jobs[rows]))]
    room: dict[str, Resources] = {}
    needs: Holds = {}
    for pod in pods:
        for name in (table.names[row] for row in order.tolist()):
            left = room.get(name)
            if left is None:
                left = room[name] = snapshot.nodes[name].node.allocatable - held.get(name, EMPTY)
            if pod.requests.fits_in(left) and pod.selects(snapshot.nodes[name].node):
                room[name] = left - pod.requests
                needs[name] = needs.get(name, EMPTY) + pod.requests
                break
    return needs


def takes_held_room(snapshot: ClusterSnapshot, planned: Mapping[str, Resources], holds: Holds) -> str | None:
    """The first node (by name) where `planned` (node → requests) does not fit beside what is held there,
    counted per requested resource; None when the plan leaves every hold whole."""
    for node in sorted(planned):
        held = holds.get(node)
        if held is None:
            continue
        state = snapshot.nodes.get(node)
        if state is None or not planned[node].fits_in(state.available - held):
            return node
    return None


def could_ever_fit(state: GangState, capacity: Resources) -> bool:
    """Whether the gang's pending members fit in the whole cluster's capacity."""
    demand = total(pod.requests for members in state.members.values() for pod in members if pod.pending)
    return demand.fits_in(capacity)


def least_room_needed(snapshot: ClusterSnapshot, state: GangState) -> Resources:
    """A lower bound of the room the gang needs to start, whatever the plan: per group, as many pending
    members as its `minMember` still lacks, each resource counted over the members asking least of it."""
    amounts: dict[str, int] = {}
    for lacking, pending in _lacking(snapshot, state):
        for name in {name for pod in pending for name in pod.requests.names()}:
            amounts[name] = amounts.get(name, 0) + sum(sorted(pod.requests.get(name) for pod in pending)[:lacking])
    return Resources(amounts)


def _minimum_pods(snapshot: ClusterSnapshot, state: GangState) -> list[PodView]:
    """Per group, the pending members its `minMember` still needs, PS first."""
    return [pod for lacking, pending in _lacking(snapshot, state) for pod in role_order(pending)[:lacking]]


def _lacking(snapshot: ClusterSnapshot, state: GangState) -> Iterator[tuple[int, list[PodView]]]:
    """Per group that lacks members to reach its `minMember` (placed, finished or reserved), how many, and
    its pending members not reserved."""
    for group in state.groups:
        members = state.members[group.key]
        placed = sum(1 for pod in members if pod.node_name or pod.finished or pod.key in snapshot.reservations)
        if group.min_member > placed:
            pending = [pod for pod in members if pod.pending and pod.key not in snapshot.reservations]
            yield group.min_member - placed, pending


__all__ = [
    "NO_HOLDERS",
    "Holders",
    "Holds",
    "Verdicts",
    "could_ever_fit",
    "goes_before",
    "holding_gangs",
    "keeps_out",
    "least_room_needed",
    "plan_now",
    "reserved_room",
    "starving_holds",
    "takes_held_room",
]
