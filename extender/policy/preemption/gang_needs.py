"""What a preemptor gang still needs, and whether it may take anything at all (pure).

A gang may take room from other jobs only when it is complete (every PodGroup there, with its members
created), has pending members none of which says `preemptionPolicy: Never`, and the victims of its last
preemption are gone. What it needs is counted per PodGroup: the members still to place to reach
`minMember`, and a lower bound on what any plan that admits it places (the smallest requests among its
pending members), which the victim search's prefix sums are measured against.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from extender.policy.core.resources import Resources
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.policy.gang.state import GangState, waiting_reason


def ineligible_reason(
    snapshot: ClusterSnapshot, state: GangState, pending: Sequence[PodView], terminating: Iterable[str]
) -> str | None:
    """Why the gang may not take anything from other jobs now, or None."""
    waiting = waiting_reason(state)
    if waiting is not None:
        return waiting
    if not pending:
        return f"gang {state.key} has no pending member"
    never = [pod.name for pod in pending if pod.preemption_policy == "Never"]
    if never:
        return f"gang {state.key}: preemptionPolicy Never on {', '.join(sorted(never))}"
    still = sorted(key for key in terminating if (pod := snapshot.pods.get(key)) is not None and pod.terminating)
    if still:
        return f"gang {state.key}: victims of its last preemption are still terminating ({', '.join(still)})"
    return None


def still_needed(state: GangState) -> list[tuple[int, tuple[PodView, ...]]]:
    """Per PodGroup of the gang: how many more members a plan must place to reach `minMember`, and the
    pending members it may choose them from."""
    needs = []
    for group in state.groups:
        members = state.members[group.key]
        placed = sum(1 for pod in members if pod.node_name or pod.finished)
        needs.append((max(0, group.min_member - placed), tuple(pod for pod in members if pod.pending)))
    return needs


def least_demand(needs: Sequence[tuple[int, Sequence[PodView]]]) -> Resources:
    """A lower bound on what any plan admitting the gang places: per group and per resource, the sum of the
    `k` smallest requests among its pending members (a plan may leave members beyond the minimum out)."""
    amounts: dict[str, int] = {}
    for count, pods in needs:
        if count <= 0:
            continue
        for name in set().union(*(pod.requests.names() for pod in pods)):
            smallest_k = sorted(pod.requests.get(name) for pod in pods)[:count]
            amounts[name] = amounts.get(name, 0) + sum(smallest_k)
    return Resources(amounts)
