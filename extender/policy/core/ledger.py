"""A change to the gang ledger, and whether it still holds on a model that moved on since it was decided.

Every decision that reserves capacity — a filter admitting a gang, the preemption loop holding freed room
for a gang, the scaler counting on nodes for new or moved workers — is made on one snapshot and applied
to the model later, possibly after other events and other commits. `ClusterState.commit` applies a
`LedgerChange` at once when nothing changed since its snapshot; otherwise it asks `still_holds` on the
current state: the gangs it plans for must have the members they had, and every node it reserves on
must still have the room (counting as free what the change itself releases or replaces, and the room
of the pods it is removing). A change that no longer holds is refused and the caller decides again, so
two plans are never reserved on the same room. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan, Reservation
from extender.policy.core.views import GangKey, PreemptionRecord


@dataclass(frozen=True, slots=True)
class LedgerChange:
    """What a decision changes in the model: plans to drop, reservations to hold, a failure to remember."""

    release_groups: tuple[str, ...] = ()
    """PodGroups whose gang's plan is dropped."""
    reserve: tuple[Reservation, ...] = ()
    failed_plan: FailedPlan | None = None
    leaving: frozenset[str] = frozenset()
    """Pods being removed for this plan (preemption victims): their room counts as free for it."""
    preemption: PreemptionRecord | None = None
    """A preemption carried out for a gang, to remember with the plan."""
    forget_preemption: str = ""
    """A gang whose preemption was abandoned: its record is dropped, and none of its victims counts as
    leaving any more."""

    def __bool__(self) -> bool:
        return bool(
            self.release_groups
            or self.reserve
            or self.failed_plan is not None
            or self.preemption is not None
            or self.forget_preemption
        )

    @property
    def groups(self) -> frozenset[str]:
        """The PodGroups (or other reservation owners) the change plans for."""
        failed = GangKey(self.failed_plan.gang).groups if self.failed_plan is not None else ()
        return frozenset({*self.release_groups, *(r.group for r in self.reserve), *failed})


def still_holds(snapshot: ClusterSnapshot, change: LedgerChange, decided_on: int) -> bool:
    """Whether `change`, decided on the model at generation `decided_on`, may be applied to `snapshot`."""
    if any(snapshot.group_generations.get(group, 0) > decided_on for group in change.groups):
        return False
    added: dict[str, Resources] = {}
    released = {
        key
        for group in change.release_groups
        for key in snapshot.group_members.get(group, frozenset())
        if key in snapshot.reservations
    }
    for reservation in change.reserve:
        added[reservation.node] = added.get(reservation.node, EMPTY) + reservation.requests
    for key in released | {r.pod for r in change.reserve}:
        held = snapshot.reservations.get(key)
        if held is not None and held.node in added:
            added[held.node] = added[held.node] - held.requests
    for key in change.leaving:
        pod = snapshot.pods.get(key)
        if pod is not None and pod.holds_node and pod.node_name in added:
            added[pod.node_name] = added[pod.node_name] - pod.requests
    for node, amount in added.items():
        available = snapshot.free_on(node)
        if node not in snapshot.nodes or any(
            value > 0 and value > available.get(name) for name, value in amount.items()
        ):
            return False
    return True
