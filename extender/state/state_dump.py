"""The whole model written out: `dump_state` turns a snapshot into a `kind: List` of one minimal manifest per
node, pod, PodGroup, TFJob, PriorityClass and the ClusterNetworkTopology, plus the reservations ledger under
`DUMP_EXTENSION_KEY`; `dump_state_chunks` streams the same document as JSON in pieces, sorting each bucket of
the snapshot's maps on its own and merging them, so the HTTP layer can let other work run between pieces.
Reading a dump back (`extender.state.manifest_files`) gives the same snapshot views.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import orjson

from extender.policy.core.frozenmap import FrozenMap
from extender.policy.core.snapshot import ClusterSnapshot
from extender.state.dump_format import DUMP_EXTENSION_KEY, reservation_record
from extender.state.view_manifests import (
    group_manifest,
    job_manifest,
    network_topology_manifest,
    node_manifest,
    pod_manifest,
    priority_class_manifest,
    workload_priority_class_manifest,
)

T = TypeVar("T")


def dump_state(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The whole model as a `kind: List` of minimal manifests plus the reservations ledger."""
    items = [manifest for manifest in _manifests(snapshot) if manifest is not PAUSE]
    return {"apiVersion": "v1", "kind": "List", "items": items, **_extension(snapshot)}


def _extension(snapshot: ClusterSnapshot) -> dict[str, Any]:
    reservations = [reservation_record(r) for _, r in sorted(snapshot.reservations.items())]
    return {DUMP_EXTENSION_KEY: {"generation": snapshot.generation, "reservations": reservations}}


PAUSE = None
"""Yielded by the paced walks between two steps of work that produce no object."""


def dump_state_chunks(snapshot: ClusterSnapshot, objects_per_chunk: int) -> Iterator[bytes]:
    """`dump_state` as JSON text in pieces of at most `objects_per_chunk` objects each (some pieces empty),
    in the same order, so a caller can let other work run between pieces: objects are sorted bucket by
    bucket of the snapshot's maps and merged, never in one long sort of 100 000 names."""
    yield b'{"apiVersion":"v1","kind":"List","items":['
    first = True
    batch: list[dict[str, Any]] = []
    for manifest in _manifests(snapshot, paced=True):
        if manifest is not PAUSE:
            batch.append(manifest)
        if batch and (manifest is PAUSE or len(batch) >= objects_per_chunk):
            yield (b"" if first else b",") + orjson.dumps(batch)[1:-1]
            first, batch = False, []
        elif manifest is PAUSE:
            yield b""
    if batch:
        yield (b"" if first else b",") + orjson.dumps(batch)[1:-1]
    yield b"]," + orjson.dumps(_extension(snapshot))[1:]


def _manifests(snapshot: ClusterSnapshot, *, paced: bool = False) -> Iterator[dict[str, Any] | None]:
    """Every object's manifest, kind by kind, each kind sorted by key; with `paced`, PAUSE between steps."""
    walk = _paced_sorted if paced else _sorted
    yield from _mapped(node_manifest, (None if n is None else n.node for n in walk(snapshot.nodes)))
    yield from _mapped(lambda pod: pod_manifest(pod, snapshot), walk(snapshot.pods))
    yield from _mapped(group_manifest, walk(snapshot.groups))
    yield from _mapped(job_manifest, walk(snapshot.jobs))
    for name, value in sorted(snapshot.priority_classes.items()):
        yield priority_class_manifest(name, value)
    for name, value in sorted(snapshot.workload_priority_classes.items()):
        yield workload_priority_class_manifest(name, value)
    if snapshot.network_topology is not None:
        yield network_topology_manifest(snapshot.network_topology)


def _mapped(render: Callable[[T], dict[str, Any]], items: Iterator[T | None]) -> Iterator[dict[str, Any] | None]:
    for item in items:
        yield PAUSE if item is None else render(item)


def _sorted(objects: Mapping[str, T]) -> Iterator[T | None]:
    for key in sorted(objects):
        yield objects[key]


def _paced_sorted(objects: Mapping[str, T]) -> Iterator[T | None]:
    """The values in key order: each bucket sorted on its own (PAUSE after each), then merged."""
    if not isinstance(objects, FrozenMap):
        yield from _sorted(objects)
        return
    runs: list[list[str]] = []
    for bucket in objects.buckets():
        runs.append(sorted(bucket))
        yield PAUSE
    for count, key in enumerate(heapq.merge(*runs), start=1):
        yield objects[key]
        if count % 1024 == 0:
            yield PAUSE
