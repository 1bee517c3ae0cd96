"""The gang queue: every gang's rank inputs and standing, kept up to date as events arrive.

Ranking every gang from scratch costs O(gangs × members) per decision, which grows with the number of
waiting gangs. Instead the model keeps one `GangSummary` per gang — what `weights.rank_of` and the
admission and preemption rules read: its job, PriorityClass value, size class, KOD2 base weight,
arrival, pending count, whether it is satisfied or complete, what its members hold — and re-derives it only for gangs an
event touched (the model knows which). A snapshot holds the resulting immutable `GangQueue`:
- `rank(key, now)` is O(1): aging is applied at `now` from the stored inputs;
- `waiting(now)` yields the gangs that wait unsatisfied in rank order, lazily: the static order (priority,
  size class, base weight, arrival, key) kept sorted as gangs change, merged with the few starving gangs,
  whose aged weights and classes depend on `now` (aging only ever raises a weight and lowers a class, so
  only they can move, and only up). The size class depends on the gang's demand and the cluster's
  capacity, never on the clock, so it is re-derived on the same events as the base weight;
- per-PriorityClass totals of what bound gangs and loose pods hold, and what elastic jobs hold beyond
  their minimum, so a preemption that nothing lower could make room for is refused in O(classes);
- the gangs whose TFJob may gain workers (`growable`) and those with a worker away from every PS node
  (`scattered`), so scale-out and consolidation plans on a cluster where no job may grow or move look
  at no job.
A summary is a pure function of the snapshot (`summarize`); the queue is a memo of them, never state a
decision depends on (`with_gang` adds the summary of a gang not submitted yet to a copy, for a what-if). A
gang whose members carry no creation time ranks last among equals (its arrival counts as the present,
which is later than any known arrival).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from extender.policy.core.frozenmap import with_entries
from extender.policy.core.resources import EMPTY, Resources, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.policy.rank.gang_summary import GangSummary, summarize
from extender.policy.rank.weights import JobRank, RankKey, cluster_capacity

Entry = TypeVar("Entry", tuple[RankKey, str], tuple[float, str])


@dataclass(frozen=True, slots=True)
class GangQueue:
    """Immutable: the summaries of every gang with members, and the wait queue in static rank order."""

    summaries: Mapping[str, GangSummary] = field(default_factory=dict)
    gang_of: Mapping[str, str] = field(default_factory=dict)
    """PodGroup key → the key of the gang it defines."""
    order: tuple[tuple[RankKey, str], ...] = ()
    """(static key, gang key) of every gang that `ages`, sorted."""
    by_arrival: tuple[tuple[float, str], ...] = ()
    """(arrival, gang key) of the same gangs with a known arrival, sorted: the starving ones come first."""
    held_by_priority: Mapping[int, Resources] = field(default_factory=dict)
    """PriorityClass value → requests of the bound members of its gangs plus its bound loose pods."""
    surplus_by_priority: Mapping[int, Resources] = field(default_factory=dict)
    """PriorityClass value → what its elastic jobs hold beyond their minimum."""
    weights: tuple[float, ...] | None = None
    """The weight settings the base weights were computed with (see `weight_inputs`)."""
    loose: Mapping[str, PodView] = field(default_factory=dict)
    """Pods without a gang that hold a node, by key."""
    partly_bound: frozenset[str] = frozenset()
    """Gangs with members holding nodes while they wait unsatisfied (half placed)."""
    growable: frozenset[str] = frozenset()
    """Gangs whose TFJob may gain workers (`GangSummary.growable`): all scale-out has to look at."""
    scattered: frozenset[str] = frozenset()
    """Gangs with a worker away from every PS node (`GangSummary.scattered`): all consolidation has to
    look at."""

    def summary_of_group(self, group: str) -> GangSummary | None:
        key = self.gang_of.get(group)
        return self.summaries.get(key) if key is not None else None

    def rank(self, key: str, now: float, settings: PolicySettings) -> JobRank | None:
        summary = self.summaries.get(key)
        return None if summary is None else summary.rank(now, settings)

    def starving(self, now: float, settings: PolicySettings) -> list[JobRank]:
        """The gangs waiting beyond the starvation limit at `now`, highest rank first."""
        cut = bisect.bisect_left(self.by_arrival, (now - settings.starvation_limit_s, ""))
        ranks = (self.summaries[key].rank(now, settings) for _, key in self.by_arrival[:cut])
        return sorted((rank for rank in ranks if rank.starving), key=lambda rank: rank.sort_key)

    def waiting(
        self, now: float, settings: PolicySettings, starving: Sequence[JobRank] | None = None
    ) -> Iterator[JobRank]:
        """Every gang that `ages` (pending, unsatisfied), highest rank first, at `now`. `starving`: what
        `starving(now, settings)` answers, when the caller has it."""
        if starving is None:
            starving = self.starving(now, settings)
        moved = {rank.subject for rank in starving}
        steady = (self.summaries[key].rank(now, settings) for _, key in self.order if key not in moved)
        yield from heapq.merge(starving, steady, key=lambda rank: rank.sort_key)

    def loose_pods_below(self, snapshot: ClusterSnapshot, priority: int) -> list[PodView]:
        """The pods without a gang, holding a node, of a priority below `priority`."""
        lower = [value for value, held in self.held_by_priority.items() if value < priority and held]
        if not lower:
            return []
        return [pod for pod in self.loose.values() if pod.priority < priority]

    def freeable_below(self, priority: int) -> Resources:
        """At most what a gang of this PriorityClass could free: everything held at lower priorities, and
        the elastic surplus of its own class."""
        lower = total(held for value, held in self.held_by_priority.items() if value < priority)
        return lower + self.surplus_by_priority.get(priority, EMPTY)

    def with_gang(self, summary: GangSummary) -> GangQueue:
        """This queue with one gang more, a new one with no member on a node (what `POST /debug/what-if`
        asks about): in the wait queue when it `ages`, and among the growable gangs when it is."""
        order, by_arrival = list(self.order), list(self.by_arrival)
        if summary.ages:
            bisect.insort(order, (summary.static_key(), summary.key))
            if summary.arrival:
                bisect.insort(by_arrival, (summary.arrival, summary.key))
        return replace(
            self,
            summaries=with_entries(self.summaries, {summary.key: summary}),
            gang_of=with_entries(self.gang_of, {summary.origin: summary.key}),
            order=tuple(order),
            by_arrival=tuple(by_arrival),
            growable=self.growable | {summary.key} if summary.growable else self.growable,
        )


def weight_inputs(settings: PolicySettings) -> tuple[float, ...]:
    """The settings a summary's base weight depends on."""
    return (
        settings.default_weight,
        settings.weight_scale,
        settings.weight_offset,
        settings.weight_min_share,
        settings.size_class_ratio,
    )


def queue_of(snapshot: ClusterSnapshot, settings: PolicySettings) -> GangQueue:
    """The snapshot's queue when it was built with these weight settings, else one built afresh."""
    queue = snapshot.queue
    if isinstance(queue, GangQueue) and queue.weights == weight_inputs(settings):
        return queue
    return build_queue(snapshot, settings)


def build_queue(snapshot: ClusterSnapshot, settings: PolicySettings) -> GangQueue:
    """The queue of `snapshot` built from scratch: what the model's incremental builder
    (`extender.state.queue_builder`) keeps up to date event by event, and must equal."""
    capacity = cluster_capacity(snapshot)
    summaries: dict[str, GangSummary] = {}
    gang_of: dict[str, str] = {}
    for origin in sorted(snapshot.group_members):
        summary = summarize(snapshot, origin, capacity, settings)
        if summary is None:
            continue
        gang_of[origin] = summary.key
        if summary.key not in summaries:
            summaries[summary.key] = summary if summary.origin == origin else replace(summary, origin=origin)
    held: dict[int, Resources] = {}
    surplus: dict[int, Resources] = {}
    for summary in summaries.values():
        add_to(held, summary.priority, summary.bound)
        add_to(surplus, summary.priority, summary.surplus)
    loose = {key: pod for key, pod in snapshot.pods.items() if not pod.group and pod.holds_node}
    for pod in loose.values():
        add_to(held, pod.priority, pod.requests)
    ageing = [summary for summary in summaries.values() if summary.ages]
    return GangQueue(
        summaries=summaries,
        gang_of=gang_of,
        order=tuple(sorted((summary.static_key(), summary.key) for summary in ageing)),
        by_arrival=tuple(sorted((summary.arrival, summary.key) for summary in ageing if summary.arrival)),
        held_by_priority=held,
        surplus_by_priority=surplus,
        weights=weight_inputs(settings),
        loose=loose,
        partly_bound=frozenset(summary.key for summary in ageing if summary.bound_pods),
        growable=frozenset(summary.key for summary in summaries.values() if summary.growable),
        scattered=frozenset(summary.key for summary in summaries.values() if summary.scattered),
    )


def add_to(totals: dict[int, Resources], priority: int, amount: Resources, *, sign: int = 1) -> None:
    """Add (`sign` +1) or take away (-1) `amount` in `totals[priority]`, dropping a total that reaches zero."""
    if not amount:
        return
    held = totals.get(priority, EMPTY)
    updated = held + amount if sign > 0 else held - amount
    if updated:
        totals[priority] = updated
    else:
        totals.pop(priority, None)
