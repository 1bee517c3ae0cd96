"""What would happen to a gang not submitted yet if it were submitted now: start now, wait, or never start.

The caller hands a snapshot that holds the gang already, its members pending (`state.would_be` builds one from
a TFJob manifest without touching the model), and this asks the rules the extender decides with:
- `standing.bigger_than_cluster`: its minimum asks more than every schedulable node together has, or one of
  its pods more than any one node has, and it would never start (known without planning it);
- else `admission.admissible_plan`, as `filter` and the preemption loop ask it: a plan that places every
  group's minimum and delays no gang that goes before it means it would start now, on the plan's nodes;
- else it would wait, with why (the planner's or the rank rule's words), what its pods ask against what
  the schedulable nodes have free in all, the resources it is short of, its place in the wait queue and
  what lower-ranked work holds that a preemption could free.
Pure: `now` is a parameter.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from extender.policy.core.resources import EMPTY, Resources, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.gang.state import gang_state
from extender.policy.rank.admission import admissible_plan
from extender.policy.rank.queue import queue_of
from extender.policy.rank.standing import bigger_than_cluster, free_capacity, waiting_positions


class Verdict(enum.Enum):
    """What would happen; the value is the stable word `POST /debug/what-if` answers with."""

    NOW = "now"
    WAIT = "wait"
    NEVER = "never"


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The verdict on one gang, with what it rests on."""

    verdict: Verdict
    gang: str
    reason: str
    """`NOW`: the plan found; `WAIT`: why it would wait; `NEVER`: why it can never start."""
    plan: tuple[tuple[str, str], ...] = ()
    """With `NOW`: (pod key, node) of the plan it would start with, by pod."""
    needed: Resources = EMPTY
    """What its pods ask, all together."""
    free: Resources = EMPTY
    """What the schedulable nodes have free, all together (after bound pods and reserved plans)."""
    freeable: Resources = EMPTY
    """With `WAIT`: what lower-ranked work holds that a preemption could free for it."""
    rank: int | None = None
    """Its 1-based place among the waiting gangs, were it to wait (None: it would not be in the queue)."""
    waiting: int = 0
    """The waiting gangs, it among them."""

    @property
    def nodes(self) -> tuple[str, ...]:
        """The nodes of the plan, sorted."""
        return tuple(sorted({node for _, node in self.plan}))

    @property
    def short_of(self) -> tuple[str, ...]:
        """The resources its pods ask more of than is free, sorted."""
        return self.needed.missing_names(self.free)


def what_if(snapshot: ClusterSnapshot, group_key: str, settings: PolicySettings, now: float) -> WhatIf:
    """The verdict on the gang of PodGroup `group_key` of `snapshot`, were it submitted at `now`."""
    state = gang_state(snapshot, group_key)
    queue = queue_of(snapshot, settings)
    summary = queue.summary_of_group(group_key)
    if summary is None:
        return WhatIf(Verdict.WAIT, state.key, state.left_alone_reason or f"gang {state.key} has no members")
    pending = [pod for members in state.members.values() for pod in members if pod.pending]
    positions = waiting_positions(queue, now, settings)
    needed = total(pod.requests for pod in pending)
    free = free_capacity(snapshot)
    base = WhatIf(
        Verdict.WAIT,
        summary.key,
        "",
        needed=needed,
        free=Resources({name: free.get(name) for name in needed.names()}),
        rank=positions.get(summary.key),
        waiting=len(positions),
    )
    never = bigger_than_cluster(snapshot, state, summary)
    if never is not None:
        return replace(base, verdict=Verdict.NEVER, reason=never)
    verdict = admissible_plan(snapshot, state, settings, now)
    if verdict.admitted:
        plan = tuple(sorted((held.pod, held.node) for held in verdict.reservations))
        return replace(base, verdict=Verdict.NOW, reason=verdict.reason, plan=plan)
    return replace(base, reason=verdict.reason, freeable=queue.freeable_below(summary.priority))
