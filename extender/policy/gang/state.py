"""Where a gang stands before planning: its PodGroups, its members, whether it is satisfied (pure).

A gang is the set of PodGroups that must start together: one PodGroup, or every PodGroup named in its
GangGroup annotation. `gang_state` gathers its PodGroups and the members that count (unfinished, not
deleting, past every scheduling gate) and says whether the extender leaves it alone (`left_alone`); the
planner (`planner`), ranking and preemption all start from this one view.

`standing_failed_plan` is the failed-plan memo's one rule. A failed plan is reused while neither capacity
has grown nor the gang's membership changed; `filter` pins the member it asks about to kube-scheduler's
candidates, so for a `filter` call it is reused only when the call offers no node outside the ones it was
tried on (the same nodes in any order, or fewer): a call offering another node plans again. The readers
that plan the gang on the whole cluster and have no candidates at hand — whether a higher-ranked gang fits
now (`admission`, `backfill`) and what a gang waits for (`standing`, the queue and `explain`) — take the
last failure as it is while the generations hold, and the views show where it was tried
(`FailedPlan.tried_on`): kube-scheduler's candidates are the nodes its own filters let that member onto,
so a whole-cluster plan would mostly fail the same way, and the next `filter` call for a member, on the
nodes it is really offered, replaces the record or admits the gang.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan
from extender.policy.core.views import GangKey, GroupView, PodView
from extender.policy.gang.left_alone import LEFT_TO_DRA, leftover_reason, needs_dra
from extender.policy.gang.room import roomy_nodes as roomy_nodes  # re-exported: victims imports it from here


@dataclass(frozen=True, slots=True)
class GangState:
    """Where a gang stands before planning."""

    key: GangKey
    """Sorted, comma-joined keys of the gang's PodGroups."""
    groups: tuple[GroupView, ...]
    missing: tuple[str, ...]
    """Group keys with pods but no PodGroup object yet."""
    members: Mapping[str, tuple[PodView, ...]]
    """Group key → its unfinished, not-deleting members past every scheduling gate."""
    leftover: str = ""
    """Why the gang is a leftover of a finished, failed, suspended or deleted TFJob (`left_alone`), or ""."""
    left_to_dra: bool = False
    """A member has resource claims: the gang is left to kube-scheduler's DRA plugin (`left_alone`)."""

    @property
    def left_alone(self) -> bool:
        """The extender ranks, plans and holds nothing for this gang."""
        return bool(self.leftover) or self.left_to_dra

    @property
    def left_alone_reason(self) -> str:
        """Why the extender holds nothing for this gang, or "" when it manages it."""
        return f"gang {self.key}: {LEFT_TO_DRA}" if self.left_to_dra else self.leftover


def gang_keys(snapshot: ClusterSnapshot, group_key: str) -> tuple[str, ...]:
    """The PodGroups that start together with `group_key` (itself included), sorted."""
    group = snapshot.groups.get(group_key)
    if group is None or not group.gang_group:
        return (group_key,)
    return tuple(sorted({group_key, *group.gang_group}))


def gang_state(snapshot: ClusterSnapshot, group_key: str) -> GangState:
    keys = gang_keys(snapshot, group_key)
    groups = tuple(snapshot.groups[key] for key in keys if key in snapshot.groups)
    missing = tuple(key for key in keys if key not in snapshot.groups)
    members = {
        key: tuple(
            sorted(
                (
                    pod
                    for pod_key in snapshot.group_members.get(key, frozenset())
                    if (pod := snapshot.pods.get(pod_key)) is not None
                    and not pod.terminating
                    and pod.phase != "Failed"
                    and not pod.scheduling_gated
                ),
                key=lambda pod: pod.name,
            )
        )
        for key in keys
    }
    gang = GangKey.of(keys)
    every_member = [pod for pods in members.values() for pod in pods]
    return GangState(
        gang,
        groups,
        missing,
        members,
        leftover=leftover_reason(snapshot, gang, groups, every_member),
        left_to_dra=needs_dra(every_member),
    )


def membership_generation(snapshot: ClusterSnapshot, state: GangState) -> int:
    return max((snapshot.group_generations.get(key, 0) for key in state.members), default=0)


def standing_failed_plan(
    snapshot: ClusterSnapshot, state: GangState, offered: Sequence[str] | None = None
) -> FailedPlan | None:
    """The gang's remembered failed plan while it still holds: neither capacity has grown nor membership
    changed since it was tried, so planning again would fail the same way. With `offered` (a `filter`
    call's candidate nodes, which the asking member is pinned to), only while none of them is a node the
    plan was not tried on; without, the last failure on whichever nodes it was tried (see the module's
    docstring)."""
    failed = snapshot.failed_plans.get(state.key)
    if (
        failed is not None
        and failed.capacity_generation == snapshot.capacity_generation
        and failed.membership_generation == membership_generation(snapshot, state)
        and (offered is None or failed.covers(offered))
    ):
        return failed
    return None


def admitted_count(snapshot: ClusterSnapshot, members: Sequence[PodView]) -> int:
    """Members that already hold a place: bound, succeeded, or reserved by a live plan."""
    return sum(1 for pod in members if pod.node_name or pod.finished or pod.key in snapshot.reservations)


def is_satisfied(snapshot: ClusterSnapshot, state: GangState) -> bool:
    """Every group of the gang already has `minMember` members placed or reserved, or keeps its quorum
    while replacements of lost members wait (`replacements_only`)."""
    return not state.missing and all(
        admitted_count(snapshot, members := state.members[group.key]) >= group.min_member
        or replacements_only(snapshot, members, group.min_member)
        for group in state.groups
    )


def replacements_only(snapshot: ClusterSnapshot, members: Sequence[PodView], min_member: int) -> bool:
    """The group has started and its pending members are all replacements: some member runs, every pending
    one was created after the group's first member was bound and after every member holding a node was
    created (a pod its controller recreated after a node failure or an eviction), and with them the group
    reaches `minMember`. Such a member joins alone, like a
    surplus one: the rest of its gang runs already, and holding it for the whole gang would never end."""
    holding = [pod for pod in members if pod.holds_node]
    started = min((pod.scheduled_at for pod in holding if pod.scheduled_at), default=0.0)
    if not started or not any(pod.phase == "Running" for pod in holding):
        return False
    newest_running = max(started, *(pod.created for pod in holding))
    pending = [pod for pod in members if pod.pending]
    if not pending or any(pod.created <= newest_running for pod in pending):
        return False
    return admitted_count(snapshot, members) + len(pending) >= min_member


def waiting_reason(state: GangState) -> str | None:
    """Why the gang cannot be planned yet (a group or members not created), or None."""
    if state.missing:
        return f"gang {state.key}: waiting for PodGroup {', '.join(state.missing)} to be created"
    short = [
        f"{group.key} {len(state.members[group.key])}/{group.min_member}"
        for group in state.groups
        if len(state.members[group.key]) < group.min_member
    ]
    if short:
        return f"gang {state.key}: waiting for members to be created ({', '.join(short)})"
    return None
