"""Events on waiting pods saying what their gang waits for, written by the preemption loop's side-effect seam.

`filter` and `prioritize` are queries and change nothing, so the reason a gang waits reaches its pods
from the loop instead: each tick (that found the model changed) the first `wait_event_gangs_per_tick`
gangs (`PreemptionLoopSettings`) of `policy.rank.standing.explain_queue` are explained, and each gang whose
reason *kind* changed gets one Event per pending member (at most `wait_event_pods_per_gang`), with the
stable reason string of `WaitKind` (e.g. `GangWaitingForRoom`) and the message a person reads. The same kind
with a new message (e.g. the best plan now places one pod more) is written again only after
`wait_event_repeat_after_s`, so a busy queue cannot flood the API server. Gangs that left the queue are
forgotten.
The PodGroup dialects this extender follows have no status field for such a message (the coscheduling
`PodGroupStatus` has phase and counts only, and Kubernetes' own PodGroup status belongs to
kube-scheduler), so the reason is not written on PodGroups; `/debug/queue` and `explain` show it there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice

from extender.loops.actuator import Actuator
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GangKey
from extender.policy.gang.state import gang_state
from extender.policy.rank.standing import Standing, WaitKind, explain_queue


@dataclass
class WaitEventReporter:
    actuator: Actuator
    settings: PolicySettings
    loop_settings: PreemptionLoopSettings
    """How many gangs are looked at per tick, how many pods of each get the Event, how soon a changed
    message is written again (`wait_event_*`)."""
    _written: dict[str, tuple[WaitKind, str, float]] = field(default_factory=dict)
    """Gang → (kind, message, when) last written."""

    def report(self, snapshot: ClusterSnapshot, now: float) -> list[Standing]:
        """Write the Events due at `now`; returns the gangs they were written for."""
        written = []
        gangs = self.loop_settings.wait_event_gangs_per_tick
        standings = list(islice(explain_queue(snapshot, self.settings, now, gangs), gangs))
        for standing in standings:
            wait = standing.wait
            if wait.kind is WaitKind.NOT_EXAMINED or not self._due(standing, now):
                continue
            members = gang_state(snapshot, GangKey(standing.gang).first).members.values()
            pending = sorted(pod.key for pods in members for pod in pods if pod.pending)
            for pod in pending[: self.loop_settings.wait_event_pods_per_gang]:
                self.actuator.record_event("Pod", pod, wait.kind.value, wait.message)
            self._written[standing.gang] = (wait.kind, wait.message, now)
            written.append(standing)
        alive = {standing.gang for standing in standings}
        self._written = {gang: last for gang, last in self._written.items() if gang in alive}
        return written

    def _due(self, standing: Standing, now: float) -> bool:
        last = self._written.get(standing.gang)
        if last is None:
            return True
        kind, message, at = last
        if kind is not standing.wait.kind:
            return True
        return message != standing.wait.message and now - at >= self.loop_settings.wait_event_repeat_after_s
