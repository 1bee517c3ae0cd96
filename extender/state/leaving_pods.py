"""Which pods a recorded preemption is removing and still hold their node, per PodGroup.

A preemption is recorded before its victims are evicted, and a victim gang's controller recreates each
evicted pod under the same name at once. Until every victim of the old incarnation is gone, a recreated
member would find its gang short of members and be placed again — into the room freed for the
preemptor. `filter` therefore turns away every member of a group that still has victims holding their
node (`ClusterSnapshot.leaving`). The index is kept as events arrive: recording (or forgetting) a
preemption touches its victims, a pod event touches that pod; victims are told apart from their
recreations by UID. Not thread-safe: `ClusterState` calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.views import PodView, PreemptionRecord


class LeavingPods:
    def __init__(self) -> None:
        self._victims: dict[str, str] = {}
        """UID of a recorded victim → the gang whose preemption removes it (until its pod is seen gone)."""
        self._by_group: CowMap[str, frozenset[str]] = CowMap()
        """PodGroup → keys of its victims that still hold their node."""

    def record(self, record: PreemptionRecord, pods: CowMap[str, PodView]) -> None:
        """Count the victims of a preemption just recorded."""
        for uid in record.victim_uids:
            self._victims[uid] = record.gang
        for key in record.victims:
            pod = pods.get(key)
            if pod is not None and pod.uid in record.victim_uids:
                self.pod_changed(None, pod)

    def forget(self, record: PreemptionRecord, pods: CowMap[str, PodView]) -> None:
        """Stop counting the victims of an abandoned preemption."""
        for key in record.victims:
            pod = pods.get(key)
            if pod is not None and self._victims.get(pod.uid) == record.gang:
                self._drop(pod)
        for uid in record.victim_uids:
            if self._victims.get(uid) == record.gang:
                del self._victims[uid]

    def pod_changed(self, old: PodView | None, new: PodView | None) -> None:
        """Follow one pod event."""
        if old is not None and old.uid in self._victims and (new is None or new.uid != old.uid or not new.holds_node):
            self._drop(old)
            if new is None or new.uid != old.uid or new.finished:
                del self._victims[old.uid]
        if new is not None and new.uid in self._victims and new.holds_node and new.group:
            held = self._by_group.get(new.group) or frozenset()
            if new.key not in held:
                self._by_group.set(new.group, held | {new.key})

    def freeze(self) -> Mapping[str, frozenset[str]]:
        return self._by_group.freeze()

    def _drop(self, pod: PodView) -> None:
        held = self._by_group.get(pod.group) or frozenset()
        if pod.key not in held:
            return
        if len(held) == 1:
            self._by_group.delete(pod.group)
        else:
            self._by_group.set(pod.group, held - {pod.key})
