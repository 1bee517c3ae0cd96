"""Offline mode: fill the model from a snapshot file instead of an API server.

The file is a `/debug/state` dump or any YAML / JSON of Kubernetes objects. Every kind counts as synced
once loaded. Objects the model cannot read are reported, all of them, as one `SnapshotFileError`.
Into an empty model the file's objects are fed one at a time as they are parsed, so no more than one raw
object is alive at a time; a model that already holds objects gets each kind replaced whole (objects the
file lacks are dropped).
"""

from __future__ import annotations

from pathlib import Path

from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import Reservation
from extender.state.dump_format import SnapshotFileError
from extender.state.kinds import BY_KIND
from extender.state.manifest_files import iter_objects, load_objects
from extender.state.store import ClusterState


def load_snapshot_file(state: ClusterState, path: Path) -> int:
    """Load `path` into `state`; returns how many objects were loaded."""
    rejected_before = state.rejected_objects
    if _is_empty(state):
        count, reservations = _stream_into(state, path)
    else:
        by_kind, reservations = load_objects(path)
        for kind in BY_KIND:
            state.replace(kind, by_kind[kind])
        count = sum(len(objects) for objects in by_kind.values())
    for kind in BY_KIND:
        state.mark_synced(kind)
    rejected = state.rejected_objects - rejected_before
    if rejected:
        raise SnapshotFileError(f"{path}: " + "; ".join(list(state.recent_rejections)[-rejected:]))
    state.commit(LedgerChange(reserve=tuple(reservations)), decided_on=None)
    return count


def _is_empty(state: ClusterState) -> bool:
    snapshot = state.snapshot()
    return not (
        state.synced_kinds()
        or snapshot.nodes
        or snapshot.pods
        or snapshot.groups
        or snapshot.jobs
        or snapshot.priority_classes
        or snapshot.network_topology is not None
    )


def _stream_into(state: ClusterState, path: Path) -> tuple[int, list[Reservation]]:
    count = 0
    reservations: list[Reservation] = []
    for entry in iter_objects(path):
        if isinstance(entry, list):
            reservations += entry
            continue
        kind, obj = entry
        state.apply(kind, "ADDED", obj)
        count += 1
    return count, reservations
