"""The cluster model: the only mutable state, fed by watch events and read through immutable snapshots.

`ClusterState` applies one event in time proportional to what it touches (one pod moves one node's usage
and one group's membership), keeps the gang reservations ledger, and hands readers a `ClusterSnapshot`
built from copy-on-write maps: taking one costs O(buckets), and it is cached until the next change.
Two counters drive the failed-plan memo: `capacity_generation` moves only when free capacity may have
grown, and each PodGroup's membership generation moves when its members or its spec change (the memo
also carries the candidate nodes it was planned from, which `filter` compares; the model keeps the last
failure per gang, replaced by the next, dropped when the gang reserves a plan).
The settings' managed namespaces (`PolicySettings.managed_namespaces`) are applied here, once: a TFJob or a
PodGroup elsewhere is not modelled, and a pod elsewhere is modelled without its gang, so it holds its node
and is placed as a pod of no gang, and nothing downstream (queue, plans, preemption, scaler, suspension,
native gangs) ever acts on it.
All methods are thread-safe (one lock); nothing here performs I/O or reads a clock. The reservation
bookkeeping (hold, drop, release a gang, import a PodGroup's plan) is `ReservationBook`, in `reservation_book`;
the preemptions known and their leaving pods are `PreemptionRecords`; node usage and member indexes are in
`membership`.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.ledger import LedgerChange, still_holds
from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan, NodeLabelsEpoch, NodeState, Reservation
from extender.policy.core.views import GangKey, GroupView, JobView, NetworkLayer, NodeView, PodView, PreemptionRecord
from extender.policy.gang.left_alone import job_finished_reason
from extender.state import convert
from extender.state.capacity import CapacityLedger
from extender.state.feed import EventType
from extender.state.kinds import BY_KIND, Kind
from extender.state.leaving_pods import LeavingPods
from extender.state.membership import NodeUsage, index_member, membership_changed
from extender.state.preemption_records import PreemptionRecords
from extender.state.queue_builder import QueueBuilder
from extender.state.reservation_book import ReservationBook

log = logging.getLogger(__name__)

GROUP_KINDS = (Kind.PODGROUP_K8S, Kind.PODGROUP, Kind.PODGROUP_SIGS)
"""The three PodGroup dialects; when several define the same namespace/name, the first listed wins."""


class ClusterState(ReservationBook, PreemptionRecords):
    """Watch-fed model of nodes, pods, PodGroups, TFJobs and PriorityClasses, plus gang reservations."""

    def __init__(self, settings: PolicySettings | None = None) -> None:
        self._lock = threading.Lock()
        self._settings = settings or PolicySettings()
        self._queue = QueueBuilder(self._settings)
        self._generation = 0
        self._capacity_generation = 0
        self._synced: set[Kind] = set()
        self._node_views: dict[str, NodeView] = {}
        self._usage = NodeUsage()
        self._nodes: CowMap[str, NodeState] = CowMap()
        self._capacity = CapacityLedger()
        self._pods: CowMap[str, PodView] = CowMap()
        self._groups_by_kind: dict[Kind, dict[str, GroupView]] = {kind: {} for kind in GROUP_KINDS}
        self._groups: CowMap[str, GroupView] = CowMap()
        self._group_members: CowMap[str, frozenset[str]] = CowMap()
        self._group_generations: CowMap[str, int] = CowMap()
        self._jobs: CowMap[str, JobView] = CowMap()
        self._job_members: CowMap[str, frozenset[str]] = CowMap()
        self._priority_classes: CowMap[str, int] = CowMap()
        self._workload_priority_classes: CowMap[str, int] = CowMap()
        self._reservations: CowMap[str, Reservation] = CowMap()
        self._reserved_by_node: CowMap[str, Resources] = CowMap()
        self._failed_plans: CowMap[str, FailedPlan] = CowMap()
        self._preemptions: CowMap[str, PreemptionRecord] = CowMap()
        self._leaving = LeavingPods()
        self._network_topology: tuple[NetworkLayer, ...] | None = None
        self._labels_epoch = NodeLabelsEpoch()
        self._expiries: list[tuple[float, str]] = []
        self._released_until: dict[str, float] = {}
        """PodGroup → the latest expiry of a plan released for it: a plan annotation no later than that is
        an echo of a released plan and is not held again."""
        self._plans_awaiting_node: dict[str, set[str]] = {}
        """Node → the PodGroups whose plan named it before the model knew it (imported again when it arrives)."""
        self._keys: dict[Kind, set[str]] = {kind: set() for kind in Kind}
        self._snapshot: ClusterSnapshot | None = None
        self.rejected_objects = 0
        self.refused_commits = 0
        """Decisions refused because the model changed under them in a way they did not survive."""
        """Objects skipped because they could not be read (see the log for each)."""
        self.last_rejection = ""
        self.recent_rejections: deque[str] = deque(maxlen=100)
        """Why the last (up to 100) skipped objects could not be read, oldest first."""

    # -- feed -------------------------------------------------------------------------------------------

    def apply(self, kind: Kind, event_type: EventType, obj: Mapping[str, Any]) -> None:
        with self._lock:
            self._apply(kind, event_type, obj)

    def replace(self, kind: Kind, objects: Sequence[Mapping[str, Any]]) -> None:
        with self._lock:
            fresh: dict[str, Mapping[str, Any]] = {}
            for obj in objects:
                try:
                    fresh[convert.object_key(obj, namespaced=BY_KIND[kind].namespaced)] = obj
                except convert.ConversionError as error:
                    self._reject(error)
            for key in self._keys[kind] - fresh.keys():
                self._keys[kind].discard(key)
                self._delete(kind, key)
            for obj in fresh.values():
                self._apply(kind, "MODIFIED", obj)

    def mark_synced(self, kind: Kind) -> None:
        with self._lock:
            self._synced.add(kind)
            if kind is Kind.TFJOB:
                self._queue.touch_everything()
                self._changed()

    def mark_unsynced(self, kind: Kind) -> None:
        with self._lock:
            self._synced.discard(kind)

    def synced_kinds(self) -> frozenset[Kind]:
        with self._lock:
            return frozenset(self._synced)

    def is_synced(self) -> bool:
        with self._lock:
            return self._synced.issuperset(BY_KIND)

    # -- gang ledger ------------------------------------------------------------------------------------

    def commit(self, change: LedgerChange, *, decided_on: int | None) -> bool:
        """Apply a change decided on the model at generation `decided_on`: at once if nothing changed
        since, else only if it still holds on the model as it is now (`ledger.still_holds`); returns
        whether it was applied. `decided_on=None` applies it unconditionally (restoring a dump, not a
        decision)."""
        with self._lock:
            stale = decided_on is not None and decided_on != self._generation
            if stale and not still_holds(self._take_snapshot(), change, decided_on or 0):
                self.refused_commits += 1
                return False
            for group in change.release_groups:
                self._release_group(group)
            for reservation in change.reserve:
                self._reserve(reservation)
            for gang in {r.group for r in change.reserve}:
                self._forget_failures_of(gang)
            if change.failed_plan is not None:
                self._failed_plans.set(change.failed_plan.gang, change.failed_plan)
            if change.forget_preemption:
                self._forget_preemption(change.forget_preemption, None)
            if change.preemption is not None:
                self._record_preemption(change.preemption)
            self._changed()
            return True

    def release_expired(self, now: float) -> int:
        """Release reservations whose plan timed out; returns how many were released."""
        with self._lock:
            released = 0
            while self._expiries and self._expiries[0][0] <= now:
                expires_at, pod_key = heapq.heappop(self._expiries)
                held = self._reservations.get(pod_key)
                if held is not None and held.expires_at == expires_at:
                    released += self._release_group(held.group)
            if released:
                self._changed()
            return released

    # -- readers ----------------------------------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        with self._lock:
            return self._take_snapshot()

    def _take_snapshot(self) -> ClusterSnapshot:
        """The current snapshot (the caller holds the lock)."""
        if self._snapshot is None:
            base = ClusterSnapshot(
                generation=self._generation,
                capacity_generation=self._capacity_generation,
                nodes=self._nodes.freeze(),
                pods=self._pods.freeze(),
                groups=self._groups.freeze(),
                group_members=self._group_members.freeze(),
                group_generations=self._group_generations.freeze(),
                jobs=self._jobs.freeze(),
                job_members=self._job_members.freeze(),
                reservations=self._reservations.freeze(),
                reserved_by_node=self._reserved_by_node.freeze(),
                failed_plans=self._failed_plans.freeze(),
                priority_classes=self._priority_classes.freeze(),
                workload_priority_classes=self._workload_priority_classes.freeze(),
                preemptions=self._preemptions.freeze(),
                leaving=self._leaving.freeze(),
                jobs_synced=Kind.TFJOB in self._synced,
                network_topology=self._network_topology,
                node_labels_epoch=self._labels_epoch,
                capacity=self._capacity.freeze(),
            )
            self._snapshot = replace(base, queue=self._queue.refresh(base))
        return self._snapshot

    def groups_of_kind(self, kind: Kind) -> list[GroupView]:
        """The PodGroups of one dialect (for dumps, which must keep each in its own API group)."""
        with self._lock:
            return list(self._groups_by_kind[kind].values())

    # -- internals --------------------------------------------------------------------------------------

    def _changed(self, *, capacity: bool = False) -> None:
        self._generation += 1
        if capacity:
            self._capacity_generation = self._generation
        self._snapshot = None

    def _reject(self, error: Exception) -> None:
        self.rejected_objects += 1
        self.last_rejection = str(error)
        self.recent_rejections.append(self.last_rejection)
        log.warning("skipping an object the model cannot read: %s", error)

    def _apply(self, kind: Kind, event_type: EventType, obj: Mapping[str, Any]) -> None:
        try:
            key = convert.object_key(obj, namespaced=BY_KIND[kind].namespaced)
            if (kind is Kind.TFJOB or kind in GROUP_KINDS) and not self._settings.manages(key):
                return
            if event_type == "DELETED":
                self._keys[kind].discard(key)
                self._delete(kind, key)
            else:
                self._upsert(kind, key, obj)
                self._keys[kind].add(key)
        except convert.ConversionError as error:
            self._reject(error)

    def _upsert(self, kind: Kind, key: str, obj: Mapping[str, Any]) -> None:
        if kind is Kind.NODE:
            self._set_node(key, convert.node_view(obj))
        elif kind is Kind.POD:
            pod = convert.pod_view(obj)
            self._set_pod(key, pod if self._settings.manages(key) else replace(pod, group="", group_in_spec=False))
        elif kind in GROUP_KINDS:
            self._set_group(kind, key, convert.group_view(obj, BY_KIND[kind].api_version.split("/")[0]))
        elif kind is Kind.TFJOB:
            self._jobs.set(key, convert.job_view(obj))
            self._touch_job(key)
            self._changed()
        elif kind is Kind.NETWORK_TOPOLOGY:
            self._set_network_topology(key, convert.network_layers(obj))
        elif kind is Kind.WORKLOAD_PRIORITY_CLASS:
            self._workload_priority_classes.set(key, convert.priority_class_value(obj))
            self._changed()
        else:
            self._priority_classes.set(key, convert.priority_class_value(obj))
            self._queue.touch_everything()
            self._changed()

    def _delete(self, kind: Kind, key: str) -> None:
        if kind is Kind.NODE:
            self._set_node(key, None)
        elif kind is Kind.POD:
            self._set_pod(key, None)
        elif kind in GROUP_KINDS:
            self._set_group(kind, key, None)
        elif kind is Kind.TFJOB:
            self._jobs.delete(key)
            self._touch_job(key)
            self._changed()
        elif kind is Kind.NETWORK_TOPOLOGY:
            self._set_network_topology(key, None)
        elif kind is Kind.WORKLOAD_PRIORITY_CLASS:
            self._workload_priority_classes.delete(key)
            self._changed()
        else:
            self._priority_classes.delete(key)
            self._queue.touch_everything()
            self._changed()

    def _set_network_topology(self, name: str, layers: tuple[NetworkLayer, ...] | None) -> None:
        """Only the object named `default` configures the layers; a change may let a failed plan succeed."""
        if name == convert.NETWORK_TOPOLOGY_NAME:
            self._network_topology = layers
            self._changed(capacity=True)

    def _touch_job(self, job: str) -> None:
        """The gangs of the job's pods (their weight, priority and arrival come from the job); a job that
        succeeded, failed or is suspended releases whatever plan its gangs hold (`left_alone`)."""
        view = self._jobs.get(job)
        finished = view is not None and bool(job_finished_reason(view))
        for key in self._job_members.get(job) or ():
            pod = self._pods.get(key)
            if pod is not None:
                self._queue.touch(pod.group)
                if finished and pod.group and key in self._reservations:
                    self._release_group(pod.group)

    def _set_node(self, name: str, view: NodeView | None) -> None:
        old = self._node_views.get(name)
        if view is None or old is None or (old.allocatable, old.schedulable) != (view.allocatable, view.schedulable):
            self._queue.touch_weights()
        if view is None or old is None or (old.labels, old.taints) != (view.labels, view.taints):
            self._labels_epoch = NodeLabelsEpoch()
        if view is None:
            self._node_views.pop(name, None)
            self._nodes.delete(name)
            self._capacity.drop_node(name)
            self._changed()
            return
        self._node_views[name] = view
        self._refresh_node(name)
        if old is None:
            self._import_plans_awaiting(name)
        grew = old is None or (view.schedulable and not old.schedulable) or old.allocatable != view.allocatable
        self._changed(capacity=grew)

    def _refresh_node(self, name: str) -> None:
        view = self._node_views.get(name)
        if view is None:
            return
        requested, pods = self._usage.on(name)
        state = NodeState(view, requested, pods, self._reserved_by_node.get(name) or EMPTY)
        self._nodes.set(name, state)
        self._capacity.set_node(name, view.allocatable, state.available, view.schedulable, self._usage.jobs_on(name))

    def _set_pod(self, key: str, pod: PodView | None) -> None:
        old = self._pods.get(key)
        for bound, sign in ((old, -1), (pod, +1)):
            if bound is not None and bound.holds_node:
                self._usage.add(bound, sign)
                self._refresh_node(bound.node_name)
        freed = old is not None and old.holds_node and (pod is None or not pod.holds_node)
        if pod is None:
            self._pods.delete(key)
        else:
            self._pods.set(key, pod)
        index_member(self._group_members, old.group if old else "", pod.group if pod else "", key)
        index_member(self._job_members, old.job if old else "", pod.job if pod else "", key)
        if old != pod:
            self._queue.touch(old.group if old else "", pod.group if pod else "")
            self._queue.loose_pod(old, pod)
            self._leaving.pod_changed(old, pod)
        released = self._settle_reservation(key, pod)
        if pod is not None and pod.group and pod.pending and key not in self._reservations:
            self._import_plan(pod.group, only=key)
        for group in {old.group if old else "", pod.group if pod else ""} - {""}:
            if old is None or pod is None or membership_changed(old, pod):
                self._bump_group(group)
        self._changed(capacity=freed or released)

    def _bump_group(self, group: str) -> None:
        self._group_generations.set(group, self._generation + 1)

    def _set_group(self, kind: Kind, key: str, view: GroupView | None) -> None:
        old = self._groups.get(key)
        if view is None:
            self._groups_by_kind[kind].pop(key, None)
        else:
            self._groups_by_kind[kind][key] = view
        merged = next((by_key[key] for by_key in self._groups_by_kind.values() if key in by_key), None)
        if merged is None:
            self._groups.delete(key)
            self._release_group(key)
            self._forget_preemptions_of(key)
            self._forget_plan_awaiting(key)
        else:
            self._groups.set(key, merged)
        self._queue.touch(key, *(old.gang_group if old else ()), *(merged.gang_group if merged else ()))
        if merged is not None and (old is None or (old.plan, old.plan_expires) != (merged.plan, merged.plan_expires)):
            self._import_plan(key)
        announced = old.preemption if old is not None else None
        if merged is not None and merged.preemption != announced:
            if announced is not None:
                self._forget_preemption(announced.gang, announced)
            if merged.preemption is not None:
                self._record_preemption(merged.preemption)
            elif announced is not None and old is not None:
                self._release_withdrawn_plan(old)
        self._bump_group(key)
        self._changed(capacity=view is None)

    def _forget_failures_of(self, group: str) -> None:
        for gang in [gang for gang in self._failed_plans if group in GangKey(gang).groups]:
            self._failed_plans.delete(gang)
