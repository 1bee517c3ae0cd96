"""Offline mode: fill the model from a snapshot file instead of an API server.

The file is a `/debug/state` dump or any YAML / JSON of Kubernetes objects. Every kind counts as synced
once loaded. Objects the model cannot read are reported, all of them, as one `SnapshotFileError`.
"""

from __future__ import annotations

from pathlib import Path

from extender.policy.ledger import LedgerChange
from extender.state.kinds import BY_KIND
from extender.state.manifests import SnapshotFileError, load_objects
from extender.state.store import ClusterState


def load_snapshot_file(state: ClusterState, path: Path) -> int:
    """Load `path` into `state`; returns how many objects were loaded."""
    by_kind, reservations = load_objects(path)
    rejected_before = state.rejected_objects
    for kind in BY_KIND:
        state.replace(kind, by_kind[kind])
        state.mark_synced(kind)
    rejected = state.rejected_objects - rejected_before
    if rejected:
        raise SnapshotFileError(f"{path}: " + "; ".join(list(state.recent_rejections)[-rejected:]))
    state.commit(LedgerChange(reserve=tuple(reservations)), decided_on=None)
    return sum(len(objects) for objects in by_kind.values())
