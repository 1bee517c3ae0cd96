"""The kube-scheduler extender wire format, decoded and encoded by hand for speed.

kube-scheduler sends Go structs without JSON tags: PascalCase keys, every top-level field present and
possibly `null`, and it decodes replies case-insensitively, ignoring unknown keys. We mirror that: keys
are looked up exactly first, then case-insensitively; unknown keys are ignored; replies use the exact
PascalCase names. Scores are integers (Go's int64 rejects `5.0`). `Error` strings have `%` doubled
because kube-scheduler formats them with `fmt.Errorf`. Decoding uses orjson and no validation library:
this module sits on the serial path of every scheduling attempt.

Everything but the pod is validated here, and the pod by `state.convert` when the model does not know
it: a body holds at most `JSON_CONTAINERS_MAX` objects and lists (counted before decoding, so no body
within the size cap can make decoding allocate more than a few times its size), at most
`CANDIDATES_MAX` candidate nodes, node names by Kubernetes' rules (checked in one pass over all of
them), victim UIDs as bounded printable strings, PDB violation counts as int64. A body that breaks a
rule gets a `WireError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Any

import orjson

from extender.policy.core.decisions import FilterDecision, PreemptDecision, ScoreDecision
from extender.policy.core.memo import by_identity, keep
from extender.state.fields import is_dns_subdomain

Json = Mapping[str, Any]

JSON_CONTAINERS_MAX = 100_000
"""Objects and lists one request body may hold (a Pod has a few hundred; 5000 Node objects ~ 60 000)."""
CANDIDATES_MAX = 15_000
"""Candidate nodes one call may name (Kubernetes supports clusters of 5000 nodes)."""
UID_MAX_CHARS = 128
INT64_MAX = 2**63 - 1
VALID_NAMES_MEMO = 16_384
"""Node names remembered as valid before the memo starts afresh."""
_valid_node_names: set[str] = set()
CANDIDATE_LISTS_MEMO = 32
"""Distinct candidate lists kept decoded, by their raw bytes (kube-scheduler repeats a few, thousands of
times); the memo starts afresh beyond that."""
_candidate_lists: dict[bytes, tuple[str, ...]] = {}
SIGHTINGS_MEMO = 256
"""Candidate lists seen once, by the hash of their raw bytes, before the memo starts afresh: a list is
remembered decoded only when it comes a second time. kube-scheduler starts each pod's filtering at the node
after where the last one stopped, so while it filters every node (`percentageOfNodesToScore: 100`, a
gang's members one after another) the same candidates come in a new order each call, and checking a list
for the memo would cost as much as decoding it again, for a list never seen twice."""
_sighted: set[int] = set()
_NODE_NAMES_MEMBER = b'"NodeNames":'


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
    containers = body.count(b"{") + body.count(b"[")
    if containers > JSON_CONTAINERS_MAX:
        raise WireError(f"request body holds {containers} objects and lists (at most {JSON_CONTAINERS_MAX})")
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
    node_names: tuple[str, ...] | None
    """The candidates by name: the same tuple object for the same list sent again."""
    nodes: list[Json] | None
    item_names: tuple[str, ...] | None = None
    """The names of `nodes`, in their order."""

    @property
    def candidates(self) -> tuple[str, ...]:
        if self.node_names is not None:
            return self.node_names
        return self.item_names or ()


def parse_extender_args(body: bytes) -> ExtenderArgs:
    at = body.rfind(_NODE_NAMES_MEMBER)
    member = body[at:] if at > 0 else None
    remembered = None if member is None else _remembered_names(body[:at], member)
    document = decode(body) if remembered is None else remembered[1]
    pod = _pod(document)
    names = _candidate_names(document, member) if remembered is None else remembered[0]
    node_list = _mapping(document, "Nodes")
    items = None if node_list is None else field(node_list, "items")
    if items is not None and not isinstance(items, list):
        raise WireError("Nodes.items must be a list of Node objects")
    if names is None and node_list is not None:
        items, item_names = _distinct_nodes(items or [])
        return ExtenderArgs(pod, None, items, item_names)
    return ExtenderArgs(pod, names, items)


def _candidate_names(document: Json, member: bytes | None) -> tuple[str, ...] | None:
    """The document's `NodeNames`, valid and without repeats, remembered under the raw bytes of the body's
    last `NodeNames` member (None: the body has none past its first byte)."""
    names = field(document, "NodeNames")
    if names is None:
        return None
    if not isinstance(names, list) or not set(map(type, names)) <= {str}:
        raise WireError("NodeNames must be a list of strings or null")
    distinct = _node_names(names, "NodeNames")
    if member is not None:
        _remember_names(member, distinct)
    return distinct


def _remembered_names(before: bytes, member: bytes) -> tuple[tuple[str, ...], Json] | None:
    """For a body `before` + `member` whose last `NodeNames` member was decoded before (kube-scheduler
    encodes it last): those names, and the document decoded from what comes before the member; None for any
    other body (the caller decodes it whole, and reports what is wrong with it).

    The member is cut at the last `"NodeNames":`, which in valid JSON can only be a key; the rest, closed
    with `}`, decodes as an object only when that key sits at the top level — else the body goes the long
    way, as it does when the rest has another spelling of the key (Go's decoder matches keys by case)."""
    names = _candidate_lists.get(member)
    if names is None:
        return None
    head = before.rstrip()
    try:
        rest = decode(head[:-1] + b"}" if head.endswith(b",") else head + b"}")
    except WireError:
        return None
    if any(isinstance(key, str) and key.lower() == "nodenames" for key in rest):
        return None
    return names, rest


def _remember_names(member: bytes, names: tuple[str, ...]) -> None:
    """Keep `names`, valid and decoded, under the raw bytes of the body's last `NodeNames` member when
    that member comes a second time (see `SIGHTINGS_MEMO`) and, on its own, decodes to exactly the list the
    whole body did."""
    sighting = hash(member)
    if sighting not in _sighted:
        if len(_sighted) >= SIGHTINGS_MEMO:
            _sighted.clear()
        _sighted.add(sighting)
        return
    try:
        alone = orjson.loads(b"{" + member)
    except orjson.JSONDecodeError:
        return
    listed = alone.get("NodeNames") if isinstance(alone, dict) and len(alone) == 1 else None
    if not isinstance(listed, list) or not set(map(type, listed)) <= {str} or tuple(dict.fromkeys(listed)) != names:
        return
    keep(_candidate_lists, member, names, CANDIDATE_LISTS_MEMO)


def _node_names(names: list[str], where: str) -> tuple[str, ...]:
    """`names` without repeats (the first kept) when there are at most `CANDIDATES_MAX` and each is a
    node name Kubernetes allows. Names seen valid before are not checked again (kube-scheduler sends the
    same few thousand over and over); the memo holds at most `VALID_NAMES_MEMO` of them."""
    if len(names) > CANDIDATES_MAX:
        raise WireError(f"{where} names {len(names)} nodes (at most {CANDIDATES_MAX})")
    distinct = set(names)
    if not _valid_node_names.issuperset(distinct):
        unseen = distinct - _valid_node_names
        invalid = {name for name in unseen if not is_dns_subdomain(name)}
        if invalid:
            index, name = next((index, name) for index, name in enumerate(names) if name in invalid)
            raise WireError(f"{where}[{index}]={_shown(name)} is not a node name (a DNS-1123 subdomain)")
        if len(_valid_node_names) + len(unseen) > VALID_NAMES_MEMO:
            _valid_node_names.clear()
        _valid_node_names.update(unseen)
    return tuple(names) if len(distinct) == len(names) else tuple(dict.fromkeys(names))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _distinct_nodes(items: list[Any]) -> tuple[list[Json], tuple[str, ...]]:
    """Node objects with repeated names dropped (the first kept), and their names: each candidate is
    answered once."""
    try:
        orjson.dumps(items)
    except TypeError as error:
        raise WireError(f"Nodes.items cannot be echoed back in the reply: {error}") from None
    names: list[str] = []
    for index, node in enumerate(items):
        meta = node.get("metadata") if isinstance(node, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str):
            raise WireError(f"Nodes.items[{index}] must be a Node object with metadata.name")
        names.append(name)
    distinct = _node_names(names, "Nodes.items[].metadata.name")
    if len(distinct) == len(items):
        return items, distinct
    first: dict[str, Json] = {}
    for name, node in zip(names, items, strict=True):
        first.setdefault(name, node)
    return list(first.values()), tuple(first)


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
        _node_names(list(per_node), key)
        for node, entry in per_node.items():
            if entry is None:
                victims.setdefault(node, [])
                continue
            if not isinstance(entry, dict):
                raise WireError(f"{key}[{node}] must be an object")
            pods = field(entry, "Pods")
            if pods is None:
                pods = []
            elif not isinstance(pods, list):
                raise WireError(f"{key}[{node}].Pods must be a list or null")
            victims[node] = [uid_of(pod_entry, key, node) for pod_entry in pods]
            violations[node] = _int(field(entry, "NumPDBViolations"), f"{key}[{node}].NumPDBViolations")
    return PreemptionArgs(pod, victims, violations)


def _int(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise WireError(f"{where} must be an integer from 0 to {INT64_MAX}")
    return value


def _uid(uid: Any, where: str) -> str:
    if not isinstance(uid, str) or not uid or len(uid) > UID_MAX_CHARS or not uid.isprintable():
        raise WireError(f"{where} must be a printable string of 1 to {UID_MAX_CHARS} characters")
    return uid


def _meta_uid(entry: Any, key: str, node: str) -> str:
    return _uid(field(entry, "UID") if isinstance(entry, dict) else None, f"{key}[{node}].Pods[].UID")


def _full_pod_uid(entry: Any, key: str, node: str) -> str:
    meta = entry.get("metadata") if isinstance(entry, dict) else None
    return _uid(meta.get("uid") if isinstance(meta, dict) else None, f"{key}[{node}].Pods[].metadata.uid")


def go_safe(message: str) -> str:
    """kube-scheduler passes `Error` to fmt.Errorf: a bare `%` would be read as a format verb."""
    return message.replace("%", "%%")


def encode_filter(decision: FilterDecision, args: ExtenderArgs) -> bytes:
    """An ExtenderFilterResult. The per-node reasons go out only when no node is left: kube-scheduler reads
    them for its FitError and its preemption, which happen only then, and otherwise decodes them and sets a
    status per node for nothing — for a gang member steered to its planned node, a reason for every other
    candidate (about 70 bytes each), on every member (see docs/peers.md)."""
    kept = bool(decision.feasible)
    result: dict[str, Any] = {
        "NodeNames": None,
        "Nodes": None,
        "FailedNodes": {} if kept else dict(decision.failed),
        "FailedAndUnresolvableNodes": {} if kept else dict(decision.unresolvable),
        "Error": "",
    }
    if args.node_names is not None:
        result["NodeNames"] = list(decision.feasible)
    else:
        keep = set(decision.feasible)
        items = [node for node, name in zip(args.nodes or [], args.candidates, strict=True) if name in keep]
        result["Nodes"] = {"metadata": {}, "items": items}
    return orjson.dumps(result)


_HOST_ENTRY_PREFIXES: dict[str, bytes] = {}
"""Node name → `{"Host":"<name>","Score":` (JSON-escaped), so a reply is joined from ready-made pieces."""
_HOST_ENTRY_LIMIT = 16_384
"""Host entries kept ready before the cache starts afresh (a 253-character name costs ~350 bytes)."""
_HOST_LISTS_MEMO = 32
"""Candidate tuples whose entry prefixes are kept in order, ready to interleave with the scores."""
_host_lists: dict[int, tuple[tuple[object, ...], list[bytes]]] = {}
_SCORE_SUFFIXES = [b"%d}" % score for score in range(101)]
_SCORE_SUFFIXES_WITH_COMMA = [b"%d}," % score for score in range(101)]


def encode_scores(decision: ScoreDecision) -> bytes:
    """A HostPriorityList: one `{"Host", "Score"}` per scored node (integer scores, as Go's int64 needs).

    kube-scheduler adds up the hosts a list names and nothing for the others, so a host scoring 0 may be
    left out: when most do (a pod steered to its planned node), only the others are sent."""
    hosts, values = decision.hosts, decision.values
    if not values or min(values) < 0 or max(values) >= len(_SCORE_SUFFIXES):
        return orjson.dumps([{"Host": host, "Score": int(value)} for host, value in zip(hosts, values, strict=True)])
    if 2 * values.count(0) > len(values):
        kept = [value != 0 for value in values]
        hosts, values = tuple(compress(hosts, kept)), list(compress(values, kept))
        if not values:
            return b"[]"
    parts: list[bytes] = [b""] * (2 * len(values))
    parts[0::2] = _entry_prefixes(hosts)
    parts[1::2] = map(_SCORE_SUFFIXES_WITH_COMMA.__getitem__, values)
    parts[-1] = _SCORE_SUFFIXES[values[-1]]
    return b"[" + b"".join(parts) + b"]"


def _entry_prefixes(hosts: Sequence[str]) -> list[bytes]:
    """Each host's `{"Host":"<name>","Score":`, in order; remembered for a candidate tuple seen before."""
    if isinstance(hosts, tuple):
        return by_identity(_host_lists, hosts, _HOST_LISTS_MEMO, lambda: _prefixes_of(hosts))
    return _prefixes_of(hosts)


def _prefixes_of(hosts: Sequence[str]) -> list[bytes]:
    prefixes = _HOST_ENTRY_PREFIXES
    if len(prefixes) > _HOST_ENTRY_LIMIT:
        prefixes.clear()
    for host in hosts:
        if host not in prefixes:
            prefixes[host] = b'{"Host":' + orjson.dumps(host) + b',"Score":'
    return list(map(prefixes.__getitem__, hosts))


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
