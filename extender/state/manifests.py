"""The model written back out as minimal Kubernetes manifests, and snapshot files read back in.

`dump_state` turns a snapshot into a `kind: List` holding one manifest per node, pod, PodGroup, TFJob,
PriorityClass and the ClusterNetworkTopology — only the fields the model reads, so the dump is small —
plus the reservations ledger.
`load_objects` reads such a dump, or any YAML / JSON file of Kubernetes objects (several documents, or a
`kind: List` as `kubectl get -o yaml` prints it), and sorts the objects into model kinds. Reading a dump
back gives the same snapshot views: the round trip is exact.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import orjson
import yaml

from extender.policy.frozenmap import FrozenMap
from extender.policy.model import (
    NODE_LAYER,
    ClusterSnapshot,
    GroupView,
    JobView,
    NetworkLayer,
    NodeView,
    PodView,
    Reservation,
    Role,
)
from extender.policy.resources import EMPTY, PODS, Resources
from extender.state import convert, workload_api
from extender.state.kinds import BY_KIND, Kind, kind_of_manifest

T = TypeVar("T")
DUMP_EXTENSION_KEY = "tfjobExtender"
"""Top-level key of a dump holding what is not a Kubernetes object: generation and reservations."""


class SnapshotFileError(ValueError):
    """A cluster snapshot file that cannot be read; the message says where and why."""


def _time(seconds: float) -> str | None:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if seconds else None


def _meta(name: str, namespace: str | None, created: float, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if created:
        meta["creationTimestamp"] = _time(created)
    meta.update({key: value for key, value in extra.items() if value})
    return meta


def node_manifest(node: NodeView) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(node.name, None, 0.0, labels=dict(node.labels)),
        "spec": {"unschedulable": True} if not node.schedulable else {},
        "status": {"allocatable": node.allocatable.to_quantities()},
    }


def pod_manifest(pod: PodView, snapshot: ClusterSnapshot) -> dict[str, Any]:
    labels: dict[str, str] = {}
    scheduling_group: dict[str, str] = {}
    if pod.group:
        group = snapshot.groups.get(pod.group)
        api_group = group.api_group if group is not None else ""
        if api_group == workload_api.API_GROUP:
            scheduling_group["podGroupName"] = pod.group.split("/")[1]
        else:
            legacy = api_group == "scheduling.sigs.k8s.io"
            labels[convert.LEGACY_POD_GROUP_LABELS[0] if legacy else convert.POD_GROUP_LABEL] = pod.group.split("/")[1]
    owners = []
    if pod.job:
        job_name = pod.job.split("/", 1)[1]
        labels[convert.JOB_NAME_LABEL] = job_name
        job = snapshot.jobs.get(pod.job)
        owners.append(
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "TFJob",
                "name": job_name,
                "uid": job.uid if job else "",
                "controller": True,
            }
        )
    if pod.role is not Role.NONE:
        labels[convert.REPLICA_TYPE_LABEL] = pod.role.value
    if pod.role is not Role.NONE or pod.index:
        labels[convert.REPLICA_INDEX_LABEL] = str(pod.index)
    index = pod.topology_index
    meta = _meta(
        pod.name,
        pod.namespace,
        pod.created,
        uid=pod.uid,
        labels=labels,
        annotations={convert.NETWORK_TOPOLOGY_INDEX_ANNOTATION: str(index)} if index is not None else {},
        ownerReferences=owners,
        deletionTimestamp=_time(pod.created or 1.0) if pod.terminating else None,
    )
    requests = (pod.requests - Resources({PODS: 1})).to_quantities()
    spec: dict[str, Any] = {
        "schedulerName": pod.scheduler_name,
        "priority": pod.priority,
        "preemptionPolicy": pod.preemption_policy,
        "containers": [{"name": "main", "resources": {"requests": requests}}],
    }
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if scheduling_group:
        spec["schedulingGroup"] = scheduling_group
    status: dict[str, Any] = {"phase": pod.phase}
    if pod.scheduled_at:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": _time(pod.scheduled_at)}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def group_manifest(group: GroupView) -> dict[str, Any]:
    annotations = {convert.GANG_GROUPS_ANNOTATION: json.dumps(list(group.gang_group))} if group.gang_group else {}
    if group.gather:
        rules = [{"layer": rule.layer, "strategy": rule.strategy.value} for rule in group.gather]
        annotations[convert.NETWORK_TOPOLOGY_SPEC_ANNOTATION] = json.dumps({"gatherStrategy": rules})
    if group.plan:
        nodes = {name: node for name, node, _ in group.plan}
        uids = {name: uid for name, _, uid in group.plan}
        annotations[convert.GANG_PLAN_ANNOTATION] = convert.plan_annotation(nodes, group.plan_expires, uids)
    metadata = _meta(group.name, group.namespace, group.created, annotations=annotations)
    if group.api_group == workload_api.API_GROUP:
        return workload_api.podgroup_manifest(group, metadata)
    spec: dict[str, Any] = {"minMember": group.min_member}
    if group.schedule_timeout_s:
        spec["scheduleTimeoutSeconds"] = int(group.schedule_timeout_s)
    if group.min_resources:
        spec["minResources"] = group.min_resources.to_quantities()
    return {
        "apiVersion": f"{group.api_group}/v1alpha1",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }


def job_manifest(job: JobView) -> dict[str, Any]:
    replica_specs = {
        role.value.capitalize() if role is not Role.PS else "PS": {
            "replicas": count,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "tensorflow",
                            "resources": {
                                "requests": (job.role_requests.get(role, EMPTY) - Resources({PODS: 1})).to_quantities()
                            },
                        }
                    ]
                }
            },
        }
        for role, count in job.replicas.items()
    }
    spec: dict[str, Any] = {"tfReplicaSpecs": replica_specs, "enableDynamicWorker": job.enable_dynamic_worker}
    if job.priority_class:
        spec["runPolicy"] = {"schedulingPolicy": {"priorityClass": job.priority_class}}
    workers = job.replicas.get(Role.WORKER, 0)
    annotations = (
        {
            convert.MIN_WORKERS_ANNOTATION: str(job.min_workers),
            convert.MAX_WORKERS_ANNOTATION: str(job.max_workers),
        }
        if (job.min_workers, job.max_workers) != (workers, workers)
        else {}
    )
    if job.scaled_at:
        annotations[convert.SCALED_AT_ANNOTATION] = f"{job.scaled_at:.3f}"
    if job.consolidated_at:
        annotations[convert.CONSOLIDATED_AT_ANNOTATION] = f"{job.consolidated_at:.3f}"
    if job.worker_plan:
        annotations[convert.WORKER_PLAN_ANNOTATION] = convert.plan_annotation(
            dict(job.worker_plan), job.worker_plan_expires
        )
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": _meta(job.name, job.namespace, job.created, uid=job.uid, annotations=annotations),
        "spec": spec,
    }


def network_topology_manifest(layers: tuple[NetworkLayer, ...]) -> dict[str, Any]:
    """The ClusterNetworkTopology `default` declaring `layers` (top first) above the node layer."""
    spec: list[dict[str, Any]] = []
    parent = ""
    for layer in (*layers, NetworkLayer(NODE_LAYER, ())):
        entry: dict[str, Any] = {"topologyLayer": layer.name}
        if parent:
            entry["parentTopologyLayer"] = parent
        if layer.label_keys:
            entry["labelKey"] = list(layer.label_keys)
        spec.append(entry)
        parent = layer.name
    return {
        "apiVersion": BY_KIND[Kind.NETWORK_TOPOLOGY].api_version,
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": convert.NETWORK_TOPOLOGY_NAME},
        "spec": {"networkTopologySpec": spec},
    }


def reservation_record(reservation: Reservation) -> dict[str, Any]:
    return {
        "pod": reservation.pod,
        "group": reservation.group,
        "node": reservation.node,
        "requests": reservation.requests.to_quantities(),
        "expiresAt": reservation.expires_at,
    }


def dump_state(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The whole model as a `kind: List` of minimal manifests plus the reservations ledger."""
    items = [manifest for manifest in _manifests(snapshot) if manifest is not PAUSE]
    return {"apiVersion": "v1", "kind": "List", "items": items, **_extension(snapshot)}


def priority_class_manifest(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


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


def parse_reservations(document: Mapping[str, Any]) -> list[Reservation]:
    try:
        records = (document.get(DUMP_EXTENSION_KEY) or {}).get("reservations") or []
        return [
            Reservation(r["pod"], r["group"], r["node"], Resources.parse(r["requests"]), float(r["expiresAt"]))
            for r in records
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise SnapshotFileError(f"{DUMP_EXTENSION_KEY}.reservations: malformed record ({error})") from error


YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it (several times faster, and its nodes are smaller)."""
JSON_CHUNK_CHARS = 1 << 20
"""A JSON file is read this many characters at a time."""
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_YAML_ITEMS_KEY = re.compile(r"items:[ \t]*(#.*)?$")


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
            documents = _json_documents(path)
            first = next(documents, None)
            if first is not None:
                yield first
                yield from documents
                return
            return
    except _NotJson:
        pass  # a YAML flow mapping, not JSON: read as YAML below
    except OSError as error:
        raise SnapshotFileError(f"{path}: {error}") from error
    yield from _yaml_documents(path)


class _NotJson(Exception):
    """The file's first document is not JSON (nothing has been handed out yet)."""


def _list_extension(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {DUMP_EXTENSION_KEY: fields.get(DUMP_EXTENSION_KEY) or {}}


class _JsonStream:
    """JSON values read one at a time from a file, through a window of text that slides along it."""

    def __init__(self, path: Path, handle: Any) -> None:
        self.path = path
        self.handle = handle
        self.text = ""
        self.pos = 0
        self.consumed = 0
        self.eof = False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.handle.read(JSON_CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.consumed += self.pos
        self.text = self.text[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            match = _JSON_SPACE.match(self.text, self.pos)
            self.pos = match.end() if match else self.pos
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            self.fail(f"expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as error:
                if self._more():
                    continue  # the value may run on past the window
                self.fail(error.msg, self.consumed + error.pos)
            if end >= len(self.text) and self._more():
                continue  # a number may go on in the next window
            self.pos = end
            return value

    def fail(self, message: str, at: int | None = None) -> NoReturn:
        position = self.consumed + self.pos if at is None else at
        raise SnapshotFileError(f"{self.path}: not valid JSON: {message} at character {position}")


def _json_documents(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("r", encoding="utf-8-sig") as handle:
        stream = _JsonStream(path, handle)
        position = 0
        handed_out = False
        while char := stream.peek():
            position += 1
            if char != "{":
                raise SnapshotFileError(f"{path}: document {position} is not a mapping")
            stream.pos += 1
            fields: dict[str, Any] = {}
            listed = False
            if stream.peek() == "}":
                stream.pos += 1
            else:
                while True:
                    try:
                        key = stream.value()
                    except SnapshotFileError as error:
                        if not handed_out:
                            raise _NotJson from error
                        raise
                    if not isinstance(key, str):
                        stream.fail("expected a key")
                    stream.expect(":")
                    if key == "items" and stream.peek() == "[":
                        listed = True
                        for item in _json_array(stream):
                            handed_out = True
                            yield item
                    else:
                        fields[key] = stream.value()
                    if _json_separator(stream, "}"):
                        break
            handed_out = True
            if listed or str(fields.get("kind", "")).endswith("List"):
                yield from (item for item in fields.get("items") or [] if isinstance(item, dict))
                yield _list_extension(fields)
            else:
                yield fields


def _json_array(stream: _JsonStream) -> Iterator[dict[str, Any]]:
    """The mappings of the array starting at the stream's position, parsed one at a time."""
    stream.pos += 1
    if stream.peek() == "]":
        stream.pos += 1
        return
    while True:
        item = stream.value()
        if isinstance(item, dict):
            yield item
        if _json_separator(stream, "]"):
            return


def _json_separator(stream: _JsonStream, closing: str) -> bool:
    """Past a ',' (False) or the `closing` bracket (True)."""
    char = stream.peek()
    if char not in (",", closing):
        stream.fail(f"expected ',' or {closing!r}")
    stream.pos += 1
    return char == closing


_YAML_STR = "tag:yaml.org,2002:str"
_YAML_MAP = "tag:yaml.org,2002:map"
_YAML_SEQ = "tag:yaml.org,2002:seq"
_YAML_MERGE = "tag:yaml.org,2002:merge"


class _Loader(YAML_LOADER):  # type: ignore[valid-type,misc]
    """The safe loader with a quicker resolver: libyaml calls back into Python to resolve every node's tag,
    and that was a third of the parse. Same tags: plain scalars go through the same implicit resolvers,
    looked up by first character; there are no path resolvers to follow."""

    _implicit: dict[str, list[tuple[str, Any]]] = {
        first: [*resolvers, *YAML_LOADER.yaml_implicit_resolvers.get(None, [])]
        for first, resolvers in YAML_LOADER.yaml_implicit_resolvers.items()
        if first is not None
    }
    _wildcard: list[tuple[str, Any]] = list(YAML_LOADER.yaml_implicit_resolvers.get(None, []))

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, pattern in self._implicit.get(value[:1], self._wildcard):
                    if pattern.match(value):
                        return tag
            return _YAML_STR
        return _YAML_MAP if kind is yaml.MappingNode else _YAML_SEQ

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


def _yaml_load(path: Path, text: str, where: str) -> Any:
    """One YAML document, as `yaml.safe_load` reads it; plain maps, sequences and strings (nearly every node of
    a Kubernetes object) are built directly, anything else by the safe constructor."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _yaml_build(loader, node)
    except yaml.YAMLError as error:
        raise SnapshotFileError(f"{path}: {where}{error}") from error
    except TypeError as error:  # a mapping or sequence used as a key
        raise SnapshotFileError(f"{path}: {where}{error}") from error
    finally:
        loader.dispose()


def _yaml_build(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    kind = node.__class__
    if kind is yaml.ScalarNode:
        return node.value if node.tag == _YAML_STR else loader.construct_object(node)
    if kind is yaml.MappingNode and node.tag == _YAML_MAP:
        built = {}
        for key, value in node.value:
            if key.tag == _YAML_MERGE:
                return loader.construct_object(node, deep=True)
            built[_yaml_build(loader, key)] = _yaml_build(loader, value)
        return built
    if kind is yaml.SequenceNode and node.tag == _YAML_SEQ:
        return [_yaml_build(loader, child) for child in node.value]
    return loader.construct_object(node, deep=True)


def _yaml_documents(path: Path) -> Iterator[dict[str, Any]]:
    """YAML documents; a `kind: List` written as kubectl writes it (`items:` at the margin, each item a `- `
    entry at the margin) has its items cut out of the text and parsed one at a time."""
    position = 0
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            rest: list[str] = []
            item: list[str] = []
            item_line = 0
            in_items = listed = False
            for number, line in enumerate(handle, start=1):
                if in_items:
                    if line.startswith("-") and line[1:2] in (" ", "\t", "\n", "\r", ""):
                        if item:
                            yield from _yaml_item(path, item, item_line)
                        item, item_line, listed = [" " + line[1:]], number, True
                        continue
                    if not line.strip() or line[0] in " \t#":
                        item.append(line)
                        continue
                    in_items = False
                    if item:
                        yield from _yaml_item(path, item, item_line)
                        item = []
                marker = line.startswith(("---", "...")) and line[3:4] in (" ", "\t", "\n", "\r", "")
                if marker and (listed or any(text.strip() and text[0] not in "#%" for text in rest)):
                    position += 1
                    yield from _yaml_document(path, rest, listed, position)
                    rest, listed = [], False
                    if line.startswith("..."):
                        continue
                rest.append(line)
                if _YAML_ITEMS_KEY.match(line):
                    in_items = True
            if item:
                yield from _yaml_item(path, item, item_line)
            position += 1
            yield from _yaml_document(path, rest, listed, position)
    except OSError as error:
        raise SnapshotFileError(f"{path}: {error}") from error


def _yaml_item(path: Path, lines: list[str], first_line: int) -> Iterator[dict[str, Any]]:
    item = _yaml_load(path, "".join(lines), f"the list item at line {first_line}: ")
    if isinstance(item, dict):
        yield item


def _yaml_document(path: Path, lines: list[str], listed: bool, position: int) -> Iterator[dict[str, Any]]:
    documents = _yaml_load(path, "".join(lines), "")
    if documents is None and not listed:
        return
    if not isinstance(documents, dict):
        raise SnapshotFileError(f"{path}: document {position} is not a mapping")
    if listed or str(documents.get("kind", "")).endswith("List"):
        yield from (item for item in documents.get("items") or [] if isinstance(item, dict))
        yield _list_extension(documents)
    else:
        yield documents


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
