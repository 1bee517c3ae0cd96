"""Who may act: one active scaler cluster-wide.

A `LeaderElector` is asked once per tick whether this instance holds the leadership, which also renews it;
only the holder plans and acts. The Kubernetes implementation is a `coordination.k8s.io` Lease
(`extender.k8s.lease`); `AlwaysLeader` serves a single instance and tests. Both tell their `LeaseStatus`
(asked yet? leading? the last failure), which a loop process's readiness reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

TickRole = Literal["leader", "follower"]
"""What a loop was at one tick: the leader acts, a follower only counts the tick."""


def tick_role(leading: bool) -> TickRole:
    return "leader" if leading else "follower"


@dataclass(frozen=True, slots=True)
class LeaseStatus:
    """Where this instance stands in the leader election, for `/readyz`."""

    identity: str
    lease: str
    """`namespace/name` of the Lease ("" when there is none to take)."""
    answered: bool
    """Whether the API server has answered at least once whether this instance leads."""
    leading: bool
    error: str | None = None
    """Why the last attempt failed (None: it was answered)."""

    @property
    def role(self) -> str:
        return "leader" if self.leading else "standby"


class LeaderElector(Protocol):
    identity: str

    def holds(self) -> bool:
        """Acquire or renew the leadership; True while this instance holds it."""

    def release(self) -> None:
        """Give the leadership up at once (on a clean stop), so another instance need not wait it out."""


class AlwaysLeader:
    def __init__(self, identity: str = "single") -> None:
        self.identity = identity

    def holds(self) -> bool:
        return True

    def release(self) -> None:
        return None

    def status(self) -> LeaseStatus:
        return LeaseStatus(self.identity, "", answered=True, leading=True)
