"""The cluster model: the only mutable state, fed by watch events and read through immutable snapshots.

`ClusterState` applies one event in time proportional to what it touches (one pod moves one node's usage
and one group's membership), keeps the gang reservations ledger, and hands readers a `ClusterSnapshot`
built from copy-on-write maps: taking one costs O(buckets), and it is cached until the next change.
Two counters drive the failed-plan memo: `capacity_generation` moves only when free capacity may have
grown, and each PodGroup's membership generation moves when its members or its spec change.
All methods are thread-safe (one lock); nothing here performs I/O or reads a clock.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from extender.policy.frozenmap import CowMap
from extender.policy.model import (
    ClusterSnapshot,
    FailedPlan,
    GroupView,
    JobView,
    NetworkLayer,
    NodeLabelsEpoch,
    NodeState,
    NodeView,
    PodView,
    PreemptionRecord,
    Reservation,
)
from extender.policy.resources import EMPTY, Resources
from extender.state import convert
from extender.state.feed import EventType
from extender.state.kinds import BY_KIND, Kind

log = logging.getLogger(__name__)

GROUP_KINDS = (Kind.PODGROUP_K8S, Kind.PODGROUP, Kind.PODGROUP_SIGS)
"""The three PodGroup dialects; when several define the same namespace/name, the first listed wins."""


class ClusterState:
    """Watch-fed model of nodes, pods, PodGroups, TFJobs and PriorityClasses, plus gang reservations."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._capacity_generation = 0
        self._synced: set[Kind] = set()
        self._node_views: dict[str, NodeView] = {}
        self._usage: dict[str, tuple[Resources, frozenset[str]]] = {}
        self._nodes: CowMap[str, NodeState] = CowMap()
        self._pods: CowMap[str, PodView] = CowMap()
        self._groups_by_kind: dict[Kind, dict[str, GroupView]] = {kind: {} for kind in GROUP_KINDS}
        self._groups: CowMap[str, GroupView] = CowMap()
        self._group_members: CowMap[str, frozenset[str]] = CowMap()
        self._group_generations: CowMap[str, int] = CowMap()
        self._jobs: CowMap[str, JobView] = CowMap()
        self._job_members: CowMap[str, frozenset[str]] = CowMap()
        self._priority_classes: CowMap[str, int] = CowMap()
        self._reservations: CowMap[str, Reservation] = CowMap()
        self._reserved_by_node: CowMap[str, Resources] = CowMap()
        self._failed_plans: CowMap[str, FailedPlan] = CowMap()
        self._preemptions: CowMap[str, PreemptionRecord] = CowMap()
        self._network_topology: tuple[NetworkLayer, ...] | None = None
        self._labels_epoch = NodeLabelsEpoch()
        self._expiries: list[tuple[float, str]] = []
        self._keys: dict[Kind, set[str]] = {kind: set() for kind in Kind}
        self._snapshot: ClusterSnapshot | None = None
        self.rejected_objects = 0
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

    def observe_pod(self, obj: Mapping[str, Any]) -> None:
        """Take a pod kube-scheduler asked about before its watch event arrived (never overrides one)."""
        with self._lock:
            if convert.object_key(obj, namespaced=True) not in self._keys[Kind.POD]:
                self._apply(Kind.POD, "ADDED", obj)

    def mark_synced(self, kind: Kind) -> None:
        with self._lock:
            self._synced.add(kind)

    def synced_kinds(self) -> frozenset[Kind]:
        with self._lock:
            return frozenset(self._synced)

    def is_synced(self) -> bool:
        with self._lock:
            return self._synced.issuperset(BY_KIND)

    # -- gang ledger ------------------------------------------------------------------------------------

    def commit_plan(
        self,
        *,
        release_groups: Iterable[str] = (),
        reserve: Sequence[Reservation] = (),
        failed_plan: FailedPlan | None = None,
    ) -> None:
        """Apply what gang admission decided: drop old plans, hold new ones, remember a failure."""
        with self._lock:
            for group in release_groups:
                self._release_group(group)
            for reservation in reserve:
                self._reserve(reservation)
            if reserve:
                for gang in {r.group for r in reserve}:
                    self._forget_failures_of(gang)
            if failed_plan is not None:
                self._failed_plans.set(failed_plan.gang, failed_plan)
            self._changed()

    def record_preemption(self, record: PreemptionRecord) -> None:
        """Remember a preemption carried out for a gang (its victims gate the next one)."""
        with self._lock:
            self._preemptions.set(record.gang, record)
            self._changed()

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
            if self._snapshot is None:
                self._snapshot = ClusterSnapshot(
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
                    preemptions=self._preemptions.freeze(),
                    network_topology=self._network_topology,
                    node_labels_epoch=self._labels_epoch,
                )
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
            self._set_pod(key, convert.pod_view(obj))
        elif kind in GROUP_KINDS:
            self._set_group(kind, key, convert.group_view(obj, BY_KIND[kind].api_version.split("/")[0]))
        elif kind is Kind.TFJOB:
            self._jobs.set(key, convert.job_view(obj))
            self._changed()
        elif kind is Kind.NETWORK_TOPOLOGY:
            self._set_network_topology(key, convert.network_layers(obj))
        else:
            self._priority_classes.set(key, convert.priority_class_value(obj))
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
            self._changed()
        elif kind is Kind.NETWORK_TOPOLOGY:
            self._set_network_topology(key, None)
        else:
            self._priority_classes.delete(key)
            self._changed()

    def _set_network_topology(self, name: str, layers: tuple[NetworkLayer, ...] | None) -> None:
        """Only the object named `default` configures the layers; a change may let a failed plan succeed."""
        if name == convert.NETWORK_TOPOLOGY_NAME:
            self._network_topology = layers
            self._changed(capacity=True)

    def _set_node(self, name: str, view: NodeView | None) -> None:
        old = self._node_views.get(name)
        if view is None or old is None or old.labels != view.labels:
            self._labels_epoch = NodeLabelsEpoch()
        if view is None:
            self._node_views.pop(name, None)
            self._nodes.delete(name)
            self._changed()
            return
        self._node_views[name] = view
        self._refresh_node(name)
        grew = old is None or (view.schedulable and not old.schedulable) or old.allocatable != view.allocatable
        self._changed(capacity=grew)

    def _refresh_node(self, name: str) -> None:
        view = self._node_views.get(name)
        if view is None:
            return
        requested, pods = self._usage.get(name, (EMPTY, frozenset()))
        self._nodes.set(name, NodeState(view, requested, pods, self._reserved_by_node.get(name) or EMPTY))

    def _use(self, pod: PodView, sign: int) -> None:
        requested, pods = self._usage.get(pod.node_name, (EMPTY, frozenset()))
        if sign > 0:
            self._usage[pod.node_name] = (requested + pod.requests, pods | {pod.key})
        else:
            self._usage[pod.node_name] = (requested - pod.requests, pods - {pod.key})
        self._refresh_node(pod.node_name)

    def _set_pod(self, key: str, pod: PodView | None) -> None:
        old = self._pods.get(key)
        if old is not None and old.holds_node:
            self._use(old, -1)
        if pod is not None and pod.holds_node:
            self._use(pod, +1)
        freed = old is not None and old.holds_node and (pod is None or not pod.holds_node)
        if pod is None:
            self._pods.delete(key)
        else:
            self._pods.set(key, pod)
        self._index_member(self._group_members, old.group if old else "", pod.group if pod else "", key)
        self._index_member(self._job_members, old.job if old else "", pod.job if pod else "", key)
        released = self._settle_reservation(key, pod)
        for group in {old.group if old else "", pod.group if pod else ""} - {""}:
            if old is None or pod is None or _membership_changed(old, pod):
                self._bump_group(group)
        self._changed(capacity=freed or released)

    def _settle_reservation(self, key: str, pod: PodView | None) -> bool:
        """A bound pod consumes its reservation; a vanished one voids its whole gang's plan."""
        held = self._reservations.get(key)
        if held is None:
            return False
        if pod is None or pod.terminating or pod.finished:
            self._release_group(held.group)
            return True
        if pod.node_name:
            self._drop_reservation(key)
            return pod.node_name != held.node
        return False

    def _index_member(self, index: CowMap[str, frozenset[str]], old: str, new: str, key: str) -> None:
        if old == new:
            if new and key not in (index.get(new) or frozenset()):
                index.set(new, (index.get(new) or frozenset()) | {key})
            return
        if old:
            remaining = (index.get(old) or frozenset()) - {key}
            if remaining:
                index.set(old, remaining)
            else:
                index.delete(old)
        if new:
            index.set(new, (index.get(new) or frozenset()) | {key})

    def _bump_group(self, group: str) -> None:
        self._group_generations.set(group, self._generation + 1)

    def _set_group(self, kind: Kind, key: str, view: GroupView | None) -> None:
        if view is None:
            self._groups_by_kind[kind].pop(key, None)
        else:
            self._groups_by_kind[kind][key] = view
        merged = next((by_key[key] for by_key in self._groups_by_kind.values() if key in by_key), None)
        if merged is None:
            self._groups.delete(key)
            self._release_group(key)
        else:
            self._groups.set(key, merged)
        self._bump_group(key)
        self._changed(capacity=view is None)

    def _reserve(self, reservation: Reservation) -> None:
        if reservation.pod in self._reservations:
            self._drop_reservation(reservation.pod)
        self._reservations.set(reservation.pod, reservation)
        held = self._reserved_by_node.get(reservation.node) or EMPTY
        self._reserved_by_node.set(reservation.node, held + reservation.requests)
        self._refresh_node(reservation.node)
        heapq.heappush(self._expiries, (reservation.expires_at, reservation.pod))

    def _drop_reservation(self, pod_key: str) -> None:
        held = self._reservations.delete(pod_key)
        if held is None:
            return
        remaining = (self._reserved_by_node.get(held.node) or EMPTY) - held.requests
        if remaining:
            self._reserved_by_node.set(held.node, remaining)
        else:
            self._reserved_by_node.delete(held.node)
        self._refresh_node(held.node)

    def _release_group(self, group: str) -> int:
        """Drop the plan of `group`'s whole gang (every PodGroup of its GangGroup); returns the count dropped."""
        gang = self._gang_of(group)
        held = {key for g in gang for key in self._group_members.get(g) or frozenset() if key in self._reservations}
        held.update(r.pod for r in self._reservations.values() if r.group in gang)
        for key in held:
            self._drop_reservation(key)
        if held:
            self._capacity_generation = self._generation + 1
        return len(held)

    def _gang_of(self, group: str) -> set[str]:
        """`group` and the PodGroups a GangGroup annotation links it with, on its side or on theirs."""
        view = self._groups.get(group)
        gang = {group, *(view.gang_group if view is not None else ())}
        for reservation in self._reservations.values():
            other = self._groups.get(reservation.group)
            if other is not None and group in other.gang_group:
                gang.add(reservation.group)
        return gang

    def _forget_failures_of(self, group: str) -> None:
        for gang in [gang for gang in self._failed_plans if group in gang.split(",")]:
            self._failed_plans.delete(gang)


def _membership_changed(old: PodView, new: PodView) -> bool:
    return (
        old.node_name != new.node_name
        or old.phase != new.phase
        or old.terminating != new.terminating
        or old.group != new.group
        or old.requests != new.requests
    )
