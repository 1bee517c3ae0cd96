"""Hypothesis strategies for extender requests: as kube-scheduler sends them, broken in one member, and
arbitrary JSON at the members the extender reads.

A document is a plain dict, encoded by the test; `ABSENT` as a member's value leaves the member out.
Valid documents vary what the contract allows: null or absent members, either candidate form (or both, or
neither), repeated names, nodes and pods with fields the extender does not read, unknown members, the order
of members. Broken documents break exactly one thing the contract does not allow. The opaque parts (pods, the rest
of a Node) hold only JSON a Go encoder writes: finite doubles and 64-bit integers, no lone surrogates.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from extender.api.wire import CANDIDATES_MAX, INT64_MAX, UID_MAX_CHARS

Obj = dict[str, Any]
ABSENT = object()
"""A member's value that leaves the member out of the document."""

VALID_NAMES = st.one_of(
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?){0,2}", fullmatch=True),
    st.sampled_from(["node-0", "a", "0", "x" * 253, "gpu-node-1.zone-a.example.com", "1-2.3"]),
)
BAD_NAMES = st.sampled_from([
    "", "A", "Node-1", "node_1", "-a", "a-", ".a", "a.", "a..b", "a.-b", "a-.b", "x" * 254, "é", "node-1\n",
    " a", "a/b",
])  # fmt: skip
ANY_NAMES = VALID_NAMES | BAD_NAMES | st.text(alphabet="az09-._A\n é", max_size=5)
"""Names valid or not, for the members where the two sides must agree on which is which."""

VALID_UIDS = st.one_of(
    st.uuids().map(str),
    st.text(st.characters(exclude_categories=("C", "Zl", "Zp")), min_size=1, max_size=UID_MAX_CHARS).filter(
        str.isprintable
    ),
    st.just("u" * UID_MAX_CHARS),
)
BAD_UIDS: st.SearchStrategy[Any] = st.sampled_from(
    ["", "u" * (UID_MAX_CHARS + 1), "\x00", "a\nb", "\u200b", "\x7f", 1, None, True, [], {}]
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
"""Any JSON a Go encoder writes."""
NOT_OBJECTS = st.sampled_from([[], [{}], "pod", "", 0, 1, 1.5, True, False])
NOT_LISTS = st.sampled_from([{}, {"a": 1}, "node-0", "", 0, 1, 1.5, True, False])
COUNTS = st.integers(0, INT64_MAX)
BAD_COUNTS = st.sampled_from([-1, INT64_MAX + 1, 2**64, 1.0, 1.5, "1", True, False, [], {}])
EXTRA_KEYS = st.sampled_from(["Extra", "kind", "apiVersion", "Nodes2", "X-Unknown"])
"""Unknown members: none spells a member's name in another case (the fast path would read it)."""


def opaque(exclude: str) -> st.SearchStrategy[Obj]:
    """An object's fields the extender does not read: any JSON under any key but `exclude`."""
    return st.dictionaries(st.text(max_size=5).filter(lambda key: key != exclude), JSON, max_size=3)


def pod_objects() -> st.SearchStrategy[Obj]:
    return st.fixed_dictionaries({"metadata": JSON}) | st.dictionaries(st.text(max_size=5), JSON, max_size=3)


def with_repeats(draw: st.DrawFn, items: list[Any]) -> list[Any]:
    """`items` with some of them repeated at random places (kube-scheduler may name a node twice)."""
    if not items:
        return items
    repeated = draw(st.lists(st.sampled_from(items), max_size=2))
    return draw(st.permutations(items + repeated)) if repeated else items


@st.composite
def node_objects(draw: st.DrawFn, name: str) -> Obj:
    metadata = draw(opaque("name")) | {"name": name}
    return draw(opaque("metadata")) | {"metadata": metadata}


def unset(draw: st.DrawFn) -> Any:
    """An unset member as kube-scheduler writes it (null), or as another client may (absent)."""
    return draw(st.sampled_from([None, None, ABSENT]))


def ordered(draw: st.DrawFn, members: Obj) -> Obj:
    """The members in kube-scheduler's order (its struct's), or now and then in another; extras added."""
    if draw(st.booleans()):
        members[draw(EXTRA_KEYS)] = draw(JSON)
    keys = list(members)
    if draw(st.integers(0, 3)) == 0:
        keys = draw(st.permutations(keys))
    return {key: members[key] for key in keys if members[key] is not ABSENT}


@st.composite
def extender_args(draw: st.DrawFn, form: str | None = None) -> Obj:
    """A valid ExtenderArgs document; `form`: "names", "nodes", "neither" or "both" (kube-scheduler sends
    names, or nodes when its extender is not `nodeCacheCapable`)."""
    form = form or draw(st.sampled_from(["names", "names", "nodes", "nodes", "neither", "both"]))
    names = with_repeats(
        draw, draw(st.lists(VALID_NAMES, min_size=1 if form == "names" else 0, max_size=5, unique=True))
    )
    node_list: Any = unset(draw)
    if form in ("nodes", "both"):
        items = [draw(node_objects(name)) for name in names]
        node_list = {"metadata": draw(st.just({}) | JSON), "items": items}
        if not items and draw(st.booleans()):
            node_list["items"] = None
    members = {
        "Pod": draw(pod_objects()),
        "Nodes": node_list,
        "NodeNames": names if form in ("names", "both") else unset(draw),
    }
    return ordered(draw, members)


@st.composite
def broken_extender_args(draw: st.DrawFn) -> Any:
    """An ExtenderArgs document with one member broken, or a body that is not an object at all."""
    where = draw(st.sampled_from(["Pod", "NodeNames", "NodeNames[]", "Nodes", "Nodes.items", "Nodes.items[]", "top"]))
    if where == "top":
        return draw(st.sampled_from([[], [{"Pod": {}}], "Pod", 1, None, True]))
    document = draw(extender_args("nodes" if where.startswith("Nodes") else "names"))
    if where == "Pod":
        document["Pod"] = draw(st.just(ABSENT) | st.none() | NOT_OBJECTS)
    elif where == "NodeNames":
        document["NodeNames"] = draw(NOT_LISTS)
    elif where == "NodeNames[]":
        bad: Any = draw(BAD_NAMES | st.sampled_from([1, None, [], {}, True]))
        document["NodeNames"] = draw(st.permutations([*document["NodeNames"], bad]))
    elif where == "Nodes":
        document["Nodes"] = draw(NOT_OBJECTS)
    elif where == "Nodes.items":
        document["Nodes"] = {"metadata": {}, "items": draw(NOT_LISTS)}
    else:
        bad_node = draw(
            st.sampled_from([None, 1, "node-0", [], {}, {"metadata": None}, {"metadata": []}, {"metadata": {}}])
            | st.sampled_from([{"metadata": {"name": 1}}, {"metadata": {"name": None}}, {"Metadata": {"name": "a"}}])
            | BAD_NAMES.map(lambda name: {"metadata": {"name": name}})
        )
        document["Nodes"] = {
            "metadata": {},
            "items": draw(st.permutations([*(document["Nodes"]["items"] or []), bad_node])),
        }
    return {key: value for key, value in document.items() if value is not ABSENT}


@st.composite
def arbitrary_extender_args(draw: st.DrawFn) -> Obj:
    """Any JSON, or nearly valid parts, at the members the extender reads: one candidate form at a time."""
    form = draw(st.sampled_from(["NodeNames", "Nodes"]))
    names = st.lists(ANY_NAMES | JSON, max_size=4)
    nodes = st.lists(
        ANY_NAMES.map(lambda name: {"metadata": {"name": name}}) | st.fixed_dictionaries({"metadata": JSON}) | JSON,
        max_size=3,
    )
    candidates = names if form == "NodeNames" else st.fixed_dictionaries({"items": nodes | JSON}) | JSON
    members = {"Pod": draw(pod_objects() | JSON), form: draw(candidates)}
    members["NodeNames" if form == "Nodes" else "Nodes"] = unset(draw)
    return ordered(draw, members)


@st.composite
def victims(draw: st.DrawFn, full: bool) -> Obj | None:
    """One node's victims: as full pods (`full`) or by UID; null now and then."""
    if draw(st.integers(0, 5)) == 0:
        return None
    uids = draw(st.lists(VALID_UIDS, max_size=3))
    pods: list[Obj]
    if full:
        pods = [draw(opaque("metadata")) | {"metadata": draw(opaque("uid")) | {"uid": uid}} for uid in uids]
    else:
        pods = [{"UID": uid} for uid in uids]
    empty_as_list = draw(st.booleans())
    entry: Obj = {"Pods": pods if pods or empty_as_list else unset(draw), "NumPDBViolations": draw(COUNTS)}
    if draw(st.integers(0, 4)) == 0:
        entry["NumPDBViolations"] = unset(draw)
    return {key: value for key, value in entry.items() if value is not ABSENT}


@st.composite
def preemption_args(draw: st.DrawFn, form: str | None = None) -> Obj:
    """An ExtenderPreemptionArgs document; `form`: "meta", "full", "neither" or "both"."""
    form = form or draw(st.sampled_from(["meta", "meta", "full", "full", "neither", "both"]))
    members: Obj = {"Pod": draw(pod_objects()), "NodeNameToVictims": unset(draw), "NodeNameToMetaVictims": unset(draw)}
    for key, full in (("NodeNameToVictims", True), ("NodeNameToMetaVictims", False)):
        if form == "both" or form == ("full" if full else "meta"):
            members[key] = draw(st.dictionaries(VALID_NAMES, victims(full), max_size=4))
    return ordered(draw, members)


@st.composite
def broken_preemption_args(draw: st.DrawFn) -> Any:
    """An ExtenderPreemptionArgs document with one thing broken, or a body that is not an object."""
    where = draw(st.sampled_from(["Pod", "map", "node", "entry", "Pods", "Pods[]", "UID", "NumPDBViolations", "top"]))
    if where == "top":
        return draw(st.sampled_from([[], "Pod", 1, None, False]))
    full = draw(st.booleans())
    key = "NodeNameToVictims" if full else "NodeNameToMetaVictims"
    document = draw(preemption_args("full" if full else "meta"))
    if where == "Pod":
        document["Pod"] = draw(st.just(ABSENT) | st.none() | NOT_OBJECTS)
        return {name: value for name, value in document.items() if value is not ABSENT}
    if where == "map":
        document[key] = draw(NOT_OBJECTS)
        return document
    per_node = document[key]
    if where == "node":
        per_node[draw(BAD_NAMES)] = draw(victims(full))
        return document
    node = draw(VALID_NAMES)
    entry = draw(victims(full)) or {}
    per_node[node] = entry
    if where == "entry":
        per_node[node] = draw(NOT_OBJECTS)
    elif where == "Pods":
        entry["Pods"] = draw(NOT_LISTS)
    elif where == "NumPDBViolations":
        entry["NumPDBViolations"] = draw(BAD_COUNTS)
    else:
        pods = entry.get("Pods") or []
        uid = draw(BAD_UIDS)
        bad_pod: Any
        if where == "Pods[]":
            without_uid: Obj = {"spec": {}} if full else {"Name": "a"}
            bad_pod = draw(st.sampled_from([None, 1, "p", [], {}, without_uid]))
        else:
            bad_pod = {"metadata": {"uid": uid}} if full else {"UID": uid}
        entry["Pods"] = draw(st.permutations([*pods, bad_pod]))
    return document


@st.composite
def arbitrary_preemption_args(draw: st.DrawFn) -> Obj:
    """Any JSON, or nearly valid parts, at the members the extender reads."""
    full = draw(st.booleans())
    pod = st.fixed_dictionaries({"UID": ANY_NAMES | VALID_UIDS | JSON}) | JSON
    if full:
        pod = st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"uid": VALID_UIDS | JSON}) | JSON}) | JSON
    entry = st.fixed_dictionaries({"Pods": st.lists(pod, max_size=2) | JSON, "NumPDBViolations": COUNTS | JSON})
    per_node = st.dictionaries(ANY_NAMES, entry | JSON, max_size=3) | JSON
    members: Obj = {
        "Pod": draw(pod_objects() | JSON),
        "NodeNameToVictims": unset(draw),
        "NodeNameToMetaVictims": unset(draw),
    }
    members["NodeNameToVictims" if full else "NodeNameToMetaVictims"] = draw(per_node)
    return ordered(draw, members)


TOO_MANY_NAMES = [f"node-{index}" for index in range(CANDIDATES_MAX + 1)]
"""One candidate more than a call may name."""
