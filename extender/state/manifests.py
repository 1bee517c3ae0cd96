"""The model written back out as minimal Kubernetes manifests, and snapshot files read back in: the names the
rest of the program uses, gathered from the modules that hold them. `view_manifests` renders one manifest per
view, `state_dump` the whole model as a `kind: List` (at once or streamed in pieces), `dump_format` the dump's
own record (generation, reservations) and `SnapshotFileError`, `manifest_files` reads YAML or JSON files of
objects (through `json_documents` and `yaml_documents`) into model kinds. Reading a dump back gives the same
snapshot views: the round trip is exact.
"""

from __future__ import annotations

from extender.state.dump_format import DUMP_EXTENSION_KEY, SnapshotFileError, parse_reservations, reservation_record
from extender.state.manifest_files import iter_documents, iter_objects, load_objects, read_documents
from extender.state.state_dump import dump_state, dump_state_chunks
from extender.state.view_manifests import (
    group_manifest,
    job_manifest,
    network_topology_manifest,
    node_manifest,
    pod_manifest,
    priority_class_manifest,
)

__all__ = [
    "DUMP_EXTENSION_KEY",
    "SnapshotFileError",
    "dump_state",
    "dump_state_chunks",
    "group_manifest",
    "iter_documents",
    "iter_objects",
    "job_manifest",
    "load_objects",
    "network_topology_manifest",
    "node_manifest",
    "parse_reservations",
    "pod_manifest",
    "priority_class_manifest",
    "read_documents",
    "reservation_record",
]
