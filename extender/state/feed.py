"""The narrow interface through which watch events reach the cluster model.

Informers (live API server), the snapshot loader (offline mode) and the simulator all feed the model
through these calls and nothing else, so the model never learns where its events come from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from extender.state.kinds import Kind

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


class ModelFeed(Protocol):
    def replace(self, kind: Kind, objects: Sequence[Mapping[str, Any]]) -> None:
        """Replace every object of `kind` with `objects` (a full list, as after a relist)."""

    def apply(self, kind: Kind, event_type: EventType, obj: Mapping[str, Any]) -> None:
        """Apply one watch event to the model."""

    def mark_synced(self, kind: Kind) -> None:
        """Record that `kind` has completed a full list."""

    def mark_unsynced(self, kind: Kind) -> None:
        """Record that `kind`'s watch broke: until it is listed again the model may have missed events."""
