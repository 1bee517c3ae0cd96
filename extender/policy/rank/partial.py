"""Gangs left half placed: completed, or released whole, never left partly bound.

A gang can end up with some members bound and the rest unplaceable — its plan lapsed while the extender
was down, or a higher-PriorityClass gang took the room meanwhile. Bound members then hold room the gang
cannot use, and nothing would ever change that. Once the earliest of them has been bound for longer than
the gang's plan timeout (the PodGroup's `scheduleTimeoutSeconds`, else the default), the preemption loop
resolves it:
- if the gang can be planned whole now, its plan is reserved (the room held first, so the rest of the
  gang is steered there the next time kube-scheduler tries its pods);
- otherwise its bound members are evicted together, with the reason, so the job can start again whole.
A gang with a reservation in force is being placed and is left alone. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.policy.gang.planner import GangVerdict, plan_gang, plan_timeout
from extender.policy.gang.state import gang_state
from extender.policy.rank.queue import queue_of


@dataclass(frozen=True, slots=True)
class PartialGang:
    gang: str
    origin: str
    """The PodGroup the gang is known by."""
    bound: tuple[PodView, ...]
    """Members holding a node (and not already being deleted)."""
    since: float
    """When the first of them was bound, seconds since the epoch."""
    verdict: GangVerdict
    """The gang's plan on the snapshot: reserve it if admitted, else release the gang."""

    def reason(self, now: float) -> str:
        if self.verdict.admitted:
            return f"gang {self.gang} partly bound for {now - self.since:.0f}s: its plan is reserved to complete it"
        return (
            f"gang {self.gang} partly bound for {now - self.since:.0f}s and it cannot be completed "
            f"({self.verdict.reason}): released whole so it can start again together"
        )


def overdue_partial_gangs(snapshot: ClusterSnapshot, now: float, settings: PolicySettings) -> Iterator[PartialGang]:
    """Gangs partly bound for longer than their plan timeout, with what to do about each."""
    queue = queue_of(snapshot, settings)
    for key in sorted(queue.partly_bound):
        summary = queue.summaries.get(key)
        if summary is None or summary.reserved:
            continue
        state = gang_state(snapshot, summary.origin)
        bound = tuple(pod for pods in state.members.values() for pod in pods if pod.holds_node and not pod.terminating)
        if not bound:
            continue
        since = min(pod.scheduled_at or pod.created for pod in bound)
        if since <= 0 or now - since <= plan_timeout(state.groups, settings):
            continue
        yield PartialGang(key, summary.origin, bound, since, plan_gang(snapshot, state, settings, now))
