"""Files of Kubernetes objects read into model kinds: `iter_documents` reads any YAML or JSON file (several
documents, or a `kind: List` as `kubectl get -o yaml` prints it, or a `/debug/state` dump) one document at a
time, choosing the JSON or YAML reader by the first character; `iter_objects` and `load_objects` sort the
documents into model kinds (unknown kinds are skipped) and pick up any saved reservations.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from extender.policy.core.snapshot import Reservation
from extender.state.dump_format import DUMP_EXTENSION_KEY, SnapshotFileError, parse_reservations
from extender.state.json_documents import NotJson, json_documents
from extender.state.kinds import BY_KIND, Kind, kind_of_manifest
from extender.state.yaml_documents import yaml_documents


def read_documents(path: Path) -> list[dict[str, Any]]:
    """Every document of a YAML or JSON file, flattened out of `kind: List` wrappers."""
    return list(iter_documents(path))


def iter_documents(path: Path) -> Iterator[dict[str, Any]]:
    """Every document of a YAML or JSON file (JSON is YAML), flattened out of `kind: List` wrappers, one at a
    time: a list's items are parsed and handed out one by one, so the file is never held whole, as text or
    as objects. A list's own fields other than its items follow its items as one `{DUMP_EXTENSION_KEY: ...}`
    record. A top-level `items` array is taken for a list's items whatever the `kind` says."""
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            head = handle.read(4096).lstrip(" \t\r\n")
        if head.startswith(("{", "[")):
            documents = json_documents(path)
            first = next(documents, None)
            if first is not None:
                yield first
                yield from documents
                return
            return
    except NotJson:
        pass  # a YAML flow mapping, not JSON: read as YAML below
    except OSError as error:
        raise SnapshotFileError(f"{path}: {error}") from error
    yield from yaml_documents(path)


def iter_objects(path: Path) -> Iterator[tuple[Kind, dict[str, Any]] | list[Reservation]]:
    """The file's objects of model kinds, one at a time with their kind (unknown kinds are skipped), and
    any saved reservations, as a list."""
    for document in iter_documents(path):
        if DUMP_EXTENSION_KEY in document:
            yield parse_reservations(document)
            continue
        kind = kind_of_manifest(str(document.get("apiVersion", "")), str(document.get("kind", "")))
        if kind is not None:
            yield kind, document


def load_objects(path: Path) -> tuple[dict[Kind, list[dict[str, Any]]], list[Reservation]]:
    """Objects of the file per model kind (unknown kinds are skipped), and any saved reservations."""
    by_kind: dict[Kind, list[dict[str, Any]]] = {kind: [] for kind in BY_KIND}
    reservations: list[Reservation] = []
    for entry in iter_objects(path):
        if isinstance(entry, list):
            reservations += entry
        else:
            by_kind[entry[0]].append(entry[1])
    return by_kind, reservations
