"""The gang reservations ledger inside the cluster model: `ReservationBook` holds a reservation (charging it
to its node), drops one, releases a whole gang's plan (every PodGroup its GangGroup links), imports the plan a
PodGroup's annotation carries for its pending members (again once a node it names and the model did not know
yet arrives: a process lists its kinds in parallel), drops such a plan when the preemption it came with is
withdrawn, and settles a reservation once its pod is bound or gone.
It is a part of `ClusterState`, split out to keep that class readable: it reads and writes the model's maps
under the model's lock and never takes it itself; `ClusterState` supplies the maps and `_refresh_node`.
"""

from __future__ import annotations

import heapq

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.snapshot import Reservation
from extender.policy.core.views import GroupView, JobView, NodeView, PodView
from extender.policy.gang.left_alone import group_left_over
from extender.state.queue_builder import QueueBuilder


class ReservationBook:
    """Reservation bookkeeping of `ClusterState` (see the module docstring); the maps are `ClusterState`'s."""

    _queue: QueueBuilder
    _generation: int
    _capacity_generation: int
    _node_views: dict[str, NodeView]
    _pods: CowMap[str, PodView]
    _groups: CowMap[str, GroupView]
    _jobs: CowMap[str, JobView]
    _group_members: CowMap[str, frozenset[str]]
    _reservations: CowMap[str, Reservation]
    _reserved_by_node: CowMap[str, Resources]
    _expiries: list[tuple[float, str]]
    _released_until: dict[str, float]
    _plans_awaiting_node: dict[str, set[str]]

    def _refresh_node(self, name: str) -> None:
        raise NotImplementedError

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

    def _reserve(self, reservation: Reservation) -> None:
        if reservation.pod in self._reservations:
            self._drop_reservation(reservation.pod)
        self._reservations.set(reservation.pod, reservation)
        self._touch_reserved(reservation)
        held = self._reserved_by_node.get(reservation.node) or EMPTY
        self._reserved_by_node.set(reservation.node, held + reservation.requests)
        self._refresh_node(reservation.node)
        heapq.heappush(self._expiries, (reservation.expires_at, reservation.pod))

    def _drop_reservation(self, pod_key: str) -> None:
        held = self._reservations.delete(pod_key)
        if held is None:
            return
        self._touch_reserved(held)
        remaining = (self._reserved_by_node.get(held.node) or EMPTY) - held.requests
        if remaining:
            self._reserved_by_node.set(held.node, remaining)
        else:
            self._reserved_by_node.delete(held.node)
        self._refresh_node(held.node)

    def _touch_reserved(self, reservation: Reservation) -> None:
        pod = self._pods.get(reservation.pod)
        self._queue.touch(reservation.group, pod.group if pod is not None else "")

    def _import_plan(self, group: str, *, only: str | None = None) -> None:
        """Hold the plan written on the PodGroup (annotation `tfjob-extender.io/plan`) for its pending members
        the model knows (or just `only`). A plan this model already holds a later one for, or released, is
        not taken again. Imported plans were decided by the process that wrote them: they are held as
        they are, like the reservations of a dump."""
        view = self._groups.get(group)
        if view is None or not view.plan or view.plan_expires <= self._released_until.get(group, 0.0):
            return
        if group_left_over(view, self._jobs, jobs_synced=False):
            return
        for name, node, uid in view.plan:
            key = f"{view.namespace}/{name}"
            if only is not None and key != only:
                continue
            pod = self._pods.get(key)
            held = self._reservations.get(key)
            if node not in self._node_views:
                self._plans_awaiting_node.setdefault(node, set()).add(group)
                continue
            if pod is None or pod.uid != uid or not pod.pending:
                continue
            if held is None or held.expires_at < view.plan_expires:
                self._reserve(Reservation(key, group, node, pod.requests, view.plan_expires))

    def _import_plans_awaiting(self, node: str) -> None:
        """Import again the plans that named `node` before the model knew it."""
        for group in sorted(self._plans_awaiting_node.pop(node, ())):
            self._import_plan(group)

    def _forget_plan_awaiting(self, group: str) -> None:
        """A PodGroup gone: no node's arrival imports its plan any more."""
        for node in [node for node, groups in self._plans_awaiting_node.items() if group in groups]:
            self._plans_awaiting_node[node].discard(group)
            if not self._plans_awaiting_node[node]:
                del self._plans_awaiting_node[node]

    def _release_withdrawn_plan(self, view: GroupView) -> None:
        """Drop the plan a PodGroup carried with a preemption that was then abandoned, if it is still the
        plan held (a plan made for the gang since is kept)."""
        for name, node, _ in view.plan:
            held = self._reservations.get(f"{view.namespace}/{name}")
            if held is not None and held.node == node and held.expires_at == view.plan_expires:
                self._release_group(held.group)
                return

    def _release_group(self, group: str) -> int:
        """Drop the plan of `group`'s whole gang (every PodGroup of its GangGroup); returns the count dropped."""
        gang = self._gang_of(group)
        held = {key for g in gang for key in self._group_members.get(g) or frozenset() if key in self._reservations}
        held.update(r.pod for r in self._reservations.values() if r.group in gang)
        for key in held:
            reservation = self._reservations.get(key)
            if reservation is not None:
                until = max(self._released_until.get(reservation.group, 0.0), reservation.expires_at)
                self._released_until[reservation.group] = until
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
