"""The model's gang queue, kept up to date event by event: only the gangs an event touched are summarised again.

`rank.queue.build_queue` builds the same `GangQueue` from scratch in O(gangs × members); the cluster model
(`store`) instead marks the PodGroups a change touches and calls `refresh` once per snapshot, which
re-derives the summaries of those gangs alone and keeps the static rank order and the per-PriorityClass
totals sorted and summed as gangs change. Not thread-safe: the model calls it under its lock.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import TypeVar

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GangKey, PodView
from extender.policy.rank.gang_summary import GangSummary, summarize
from extender.policy.rank.queue import GangQueue, add_to, weight_inputs
from extender.policy.rank.weights import RankKey, cluster_capacity, dominant_share, job_weight, size_class

Entry = TypeVar("Entry", tuple[RankKey, str], tuple[float, str])


class QueueBuilder:
    """Keeps a `GangQueue` up to date: re-summarises only the gangs of the PodGroups marked as touched.

    The model marks a PodGroup touched when a member, the PodGroup, the member's TFJob or a member's
    reservation changes, and everything touched when a PriorityClass or the cluster's capacity (which
    every weight is normalised against) changes; `refresh` then brings the queue up to date with one
    snapshot. Not thread-safe: the model calls it under its lock.
    """

    def __init__(self, settings: PolicySettings) -> None:
        self._settings = settings
        self._summaries: CowMap[str, GangSummary] = CowMap()
        self._origins: dict[str, set[str]] = {}
        """Gang key → the PodGroups whose annotation defines it."""
        self._key_of_origin: CowMap[str, str] = CowMap()
        self._gangs_with: dict[str, set[str]] = {}
        """PodGroup key → the gangs it belongs to."""
        self._order: list[tuple[RankKey, str]] = []
        self._by_arrival: list[tuple[float, str]] = []
        self._held: dict[int, Resources] = {}
        self._surplus: dict[int, Resources] = {}
        self._loose: dict[int, Resources] = {}
        self._loose_pods: CowMap[str, PodView] = CowMap()
        self._partly_bound: set[str] = set()
        self._growable: set[str] = set()
        self._scattered: set[str] = set()
        self._touched: set[str] = set()
        self._everything = True
        self._weights = False
        self._capacity: Resources | None = None
        """What weights are normalised against, summed again only when the capacity changed."""
        self._order_changed = True
        self._counted_loose = False
        """Whether `_loose` has been derived from a snapshot once (events keep it up to date after that)."""
        self._frozen: GangQueue | None = None

    def touch(self, *groups: str) -> None:
        self._touched.update(group for group in groups if group)
        self._frozen = None

    def touch_everything(self) -> None:
        self._everything = True
        self._capacity = None
        self._frozen = None

    def touch_weights(self) -> None:
        """The cluster's capacity changed: every base weight and size class is normalised again (nothing
        else is)."""
        self._weights = True
        self._frozen = None

    def loose_pod(self, old: PodView | None, new: PodView | None) -> None:
        """A pod without a gang changed: keep what loose pods hold per priority."""
        if not self._counted_loose:
            return
        for pod, sign in ((old, -1), (new, +1)):
            if pod is not None and not pod.group and pod.holds_node:
                add_to(self._loose, pod.priority, pod.requests, sign=sign)
                if sign > 0:
                    self._loose_pods.set(pod.key, pod)
                else:
                    self._loose_pods.delete(pod.key)
                self._frozen = None

    def refresh(self, snapshot: ClusterSnapshot) -> GangQueue:
        if self._frozen is not None and not self._touched and not self._everything and not self._weights:
            return self._frozen
        if not self._counted_loose:
            self._loose = {}
            self._loose_pods.clear()
            for pod in snapshot.pods.values():
                if not pod.group and pod.holds_node:
                    add_to(self._loose, pod.priority, pod.requests)
                    self._loose_pods.set(pod.key, pod)
            self._counted_loose = True
        if self._everything:
            origins = set(self._key_of_origin) | set(snapshot.group_members)
            self._everything = False
        else:
            origins = set(self._touched)
            for group in self._touched:
                for key in self._gangs_with.get(group, ()):
                    origins |= self._origins.get(key, set())
        self._touched.clear()
        if origins or self._weights:
            if self._weights or self._capacity is None:
                self._capacity = cluster_capacity(snapshot)
            capacity = self._capacity
            for origin in origins:
                self._update(snapshot, origin, capacity)
            if self._weights:
                self._reweigh(snapshot, capacity)
        held = dict(self._held)
        for priority, amount in self._loose.items():
            held[priority] = held.get(priority, EMPTY) + amount
        previous = self._frozen
        if self._order_changed or previous is None:
            order, by_arrival = tuple(self._order), tuple(self._by_arrival)
            self._order_changed = False
        else:
            order, by_arrival = previous.order, previous.by_arrival
        self._frozen = GangQueue(
            summaries=self._summaries.freeze(),
            gang_of=self._key_of_origin.freeze(),
            order=order,
            by_arrival=by_arrival,
            held_by_priority=held,
            surplus_by_priority=dict(self._surplus),
            weights=weight_inputs(self._settings),
            loose=self._loose_pods.freeze(),
            partly_bound=frozenset(self._partly_bound),
            growable=_frozen(self._growable, previous.growable if previous else None),
            scattered=_frozen(self._scattered, previous.scattered if previous else None),
        )
        return self._frozen

    def _reweigh(self, snapshot: ClusterSnapshot, capacity: Resources) -> None:
        self._weights = False
        for summary in list(self._summaries.values()):
            job = snapshot.jobs.get(summary.job) if summary.job else None
            weight = self._settings.default_weight if job is None else job_weight(job, capacity, self._settings)
            size = size_class(dominant_share(summary.demand, capacity), self._settings)
            if weight != summary.base_weight or size != summary.size_class:
                self._put(replace(summary, base_weight=weight, size_class=size))

    def _update(self, snapshot: ClusterSnapshot, origin: str, capacity: Resources) -> None:
        summary = summarize(snapshot, origin, capacity, self._settings) if origin in snapshot.group_members else None
        old_key = self._key_of_origin.delete(origin)
        if old_key is not None:
            sharing = self._origins.get(old_key, set())
            sharing.discard(origin)
            moved = summary is None or summary.key != old_key
            stored = self._summaries.get(old_key)
            if not sharing and moved:
                self._drop(old_key)
            elif sharing and moved and stored is not None and stored.origin == origin:
                self._put(replace(stored, origin=min(sharing)))
        if summary is not None:
            self._key_of_origin.set(origin, summary.key)
            sharing = self._origins.setdefault(summary.key, set())
            sharing.add(origin)
            first = min(sharing)
            self._put(summary if summary.origin == first else replace(summary, origin=first))

    def _put(self, summary: GangSummary) -> None:
        if summary.key in self._summaries:
            self._drop(summary.key, keep_origins=True)
        self._summaries.set(summary.key, summary)
        for group in GangKey(summary.key).groups:
            self._gangs_with.setdefault(group, set()).add(summary.key)
        if summary.ages:
            bisect.insort(self._order, (summary.static_key(), summary.key))
            self._order_changed = True
            if summary.arrival:
                bisect.insort(self._by_arrival, (summary.arrival, summary.key))
        add_to(self._held, summary.priority, summary.bound)
        add_to(self._surplus, summary.priority, summary.surplus)
        if summary.ages and summary.bound_pods:
            self._partly_bound.add(summary.key)
        if summary.growable:
            self._growable.add(summary.key)
        if summary.scattered:
            self._scattered.add(summary.key)

    def _drop(self, key: str, *, keep_origins: bool = False) -> None:
        summary = self._summaries.delete(key)
        if not keep_origins:
            self._origins.pop(key, None)
        if summary is None:
            return
        for group in GangKey(key).groups:
            gangs = self._gangs_with.get(group)
            if gangs is not None:
                gangs.discard(key)
                if not gangs:
                    del self._gangs_with[group]
        if summary.ages:
            _remove_sorted(self._order, (summary.static_key(), key))
            self._order_changed = True
            if summary.arrival:
                _remove_sorted(self._by_arrival, (summary.arrival, key))
        add_to(self._held, summary.priority, summary.bound, sign=-1)
        add_to(self._surplus, summary.priority, summary.surplus, sign=-1)
        self._partly_bound.discard(key)
        self._growable.discard(key)
        self._scattered.discard(key)


def _frozen(keys: set[str], previous: frozenset[str] | None) -> frozenset[str]:
    """`keys` frozen, or the previous queue's set when they did not change (no copy per snapshot)."""
    return previous if previous is not None and previous == keys else frozenset(keys)


def _remove_sorted(items: list[Entry], item: Entry) -> None:
    at = bisect.bisect_left(items, item)
    if at < len(items) and items[at] == item:
        del items[at]
