"""Who may act: one active scaler cluster-wide.

A `LeaderElector` is asked once per tick whether this instance holds the leadership, which also renews it;
only the holder plans and acts. The Kubernetes implementation is a `coordination.k8s.io` Lease
(`extender.k8s.lease`); `AlwaysLeader` serves a single instance and tests.
"""

from __future__ import annotations

from typing import Protocol


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
