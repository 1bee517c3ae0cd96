"""The kube-scheduler extender wire format, decoded and encoded by hand for speed.

kube-scheduler sends Go structs without JSON tags: PascalCase keys, every top-level field present and
possibly `null`, and it decodes replies case-insensitively, ignoring unknown keys. We mirror that: keys
are looked up exactly first, then case-insensitively; unknown keys are ignored; replies use the exact
PascalCase names. Scores are integers (Go's int64 rejects `5.0`). `Error` strings have `%` doubled
because kube-scheduler formats them with `fmt.Errorf`. Decoding uses orjson and no validation library:
this module sits on the serial path of every scheduling attempt.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from extender.policy.decisions import FilterDecision, PreemptDecision, ScoreDecision

Json = Mapping[str, Any]


class WireError(ValueError):
    """A request that does not follow the extender contract; the message says what is wrong."""


def field(obj: Json, name: str) -> Any:
    """`obj[name]`, matching the key case-insensitively as Go's decoder does; None when absent."""
    if name in obj:
        return obj[name]
    lowered = name.lower()
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return None


def decode(body: bytes) -> Json:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise WireError(f"request body is not JSON: {error}") from error
    if not isinstance(document, dict):
        raise WireError("request body must be a JSON object")
    return document


def _mapping(obj: Json, name: str) -> Json | None:
    value = field(obj, name)
    if value is not None and not isinstance(value, dict):
        raise WireError(f"{name} must be an object or null")
    return value


def _pod(document: Json) -> Json:
    pod = _mapping(document, "Pod")
    if pod is None:
        raise WireError("Pod is missing")
    return pod


@dataclass(frozen=True, slots=True)
class ExtenderArgs:
    """The body of `filter` and `prioritize`: a pod and its candidate nodes, by name or in full."""

    pod: Json
    node_names: list[str] | None
    nodes: list[Json] | None

    @property
    def candidates(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        return [str((node.get("metadata") or {}).get("name", "")) for node in self.nodes or []]


def parse_extender_args(body: bytes) -> ExtenderArgs:
    document = decode(body)
    pod = _pod(document)
    names = field(document, "NodeNames")
    if names is not None:
        if not isinstance(names, list) or not set(map(type, names)) <= {str}:
            raise WireError("NodeNames must be a list of strings or null")
        if len(set(names)) != len(names):
            names = list(dict.fromkeys(names))
    node_list = _mapping(document, "Nodes")
    items = None if node_list is None else field(node_list, "items")
    if items is not None and (not isinstance(items, list) or not all(isinstance(n, dict) for n in items)):
        raise WireError("Nodes.items must be a list of Node objects")
    if names is None and node_list is not None:
        items = _distinct_nodes(items or [])
    return ExtenderArgs(pod, names, items)


def _distinct_nodes(items: list[Json]) -> list[Json]:
    """Node objects with repeated names dropped (the first kept): each candidate is answered once."""
    seen: set[str] = set()
    distinct = []
    for node in items:
        name = str((node.get("metadata") or {}).get("name", ""))
        if name not in seen:
            seen.add(name)
            distinct.append(node)
    return distinct


@dataclass(frozen=True, slots=True)
class PreemptionArgs:
    pod: Json
    victims: dict[str, list[str]]
    """Node → proposed victim UIDs, in kube-scheduler's order."""
    pdb_violations: dict[str, int]


def parse_preemption_args(body: bytes) -> PreemptionArgs:
    document = decode(body)
    pod = _pod(document)
    victims: dict[str, list[str]] = {}
    violations: dict[str, int] = {}
    for key, uid_of in (("NodeNameToMetaVictims", _meta_uid), ("NodeNameToVictims", _full_pod_uid)):
        per_node = _mapping(document, key) or {}
        for node, entry in per_node.items():
            if entry is None:
                victims.setdefault(node, [])
                continue
            if not isinstance(entry, dict):
                raise WireError(f"{key}[{node}] must be an object")
            pods = field(entry, "Pods") or []
            if not isinstance(pods, list):
                raise WireError(f"{key}[{node}].Pods must be a list")
            victims[node] = [uid_of(pod_entry, key, node) for pod_entry in pods]
            violations[node] = _int(field(entry, "NumPDBViolations"), f"{key}[{node}].NumPDBViolations")
    return PreemptionArgs(pod, victims, violations)


def _int(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{where} must be an integer")
    return value


def _meta_uid(entry: Any, key: str, node: str) -> str:
    uid = field(entry, "UID") if isinstance(entry, dict) else None
    if not isinstance(uid, str) or not uid:
        raise WireError(f"{key}[{node}].Pods entries need a UID")
    return uid


def _full_pod_uid(entry: Any, key: str, node: str) -> str:
    uid = ((entry.get("metadata") or {}) if isinstance(entry, dict) else {}).get("uid")
    if not isinstance(uid, str) or not uid:
        raise WireError(f"{key}[{node}].Pods entries need metadata.uid")
    return uid


def go_safe(message: str) -> str:
    """kube-scheduler passes `Error` to fmt.Errorf: a bare `%` would be read as a format verb."""
    return message.replace("%", "%%")


def encode_filter(decision: FilterDecision, args: ExtenderArgs) -> bytes:
    result: dict[str, Any] = {
        "NodeNames": None,
        "Nodes": None,
        "FailedNodes": dict(decision.failed),
        "FailedAndUnresolvableNodes": dict(decision.unresolvable),
        "Error": "",
    }
    if args.node_names is not None:
        result["NodeNames"] = list(decision.feasible)
    else:
        keep = set(decision.feasible)
        items = [node for node in args.nodes or [] if (node.get("metadata") or {}).get("name") in keep]
        result["Nodes"] = {"metadata": {}, "items": items}
    return orjson.dumps(result)


_HOST_ENTRY_PREFIXES: dict[str, bytes] = {}
"""Node name → `{"Host":"<name>","Score":` (JSON-escaped), so a reply is joined from ready-made pieces."""
_HOST_ENTRY_LIMIT = 65536
_SCORE_SUFFIXES = [b"%d}" % score for score in range(101)]


def encode_scores(decision: ScoreDecision) -> bytes:
    """A HostPriorityList: one `{"Host", "Score"}` per scored node (integer scores, as Go's int64 needs)."""
    prefixes = _HOST_ENTRY_PREFIXES
    if len(prefixes) > _HOST_ENTRY_LIMIT:
        prefixes.clear()
    for host in decision.hosts:
        if host not in prefixes:
            prefixes[host] = b'{"Host":' + orjson.dumps(host) + b',"Score":'
    values = decision.values
    if values and min(values) >= 0 and max(values) < len(_SCORE_SUFFIXES):
        entries = map(operator.add, map(prefixes.__getitem__, decision.hosts), map(_SCORE_SUFFIXES.__getitem__, values))
        return b"[" + b",".join(entries) + b"]"
    return orjson.dumps(
        [{"Host": host, "Score": int(value)} for host, value in zip(decision.hosts, values, strict=True)]
    )


def encode_preemption(decision: PreemptDecision) -> bytes:
    return orjson.dumps(
        {
            "NodeNameToMetaVictims": {
                node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": decision.pdb_violations.get(node, 0)}
                for node, uids in decision.victims.items()
            }
        }
    )


def encode_error(message: str, **empty_fields: Any) -> bytes:
    """A 200 body for a failed call: the verb's own fields left empty, and a readable `Error`."""
    return orjson.dumps({**empty_fields, "Error": go_safe(message)})
