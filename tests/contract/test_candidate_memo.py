"""Candidate lists decoded once: the same `NodeNames` bytes give the same tuple, and a body shaped any
other way is decoded whole, with the same result as before it was remembered."""

from __future__ import annotations

import orjson
import pytest

from extender.api import wire
from tests.builders import make_pod

NAMES = [f"node-{index:03d}" for index in range(100)]


def body(pod: dict[str, object], names: list[str], **extra: object) -> bytes:
    return orjson.dumps({"Pod": pod, "Nodes": None, **extra, "NodeNames": names})


def remember(names: list[str]) -> None:
    """Have the extender remember `names` decoded: a list is kept when it comes a second time."""
    for name in ("first", "second"):
        wire.parse_extender_args(body(make_pod(name), names))


def test_a_candidate_list_that_comes_again_is_remembered_as_one_tuple() -> None:
    first = wire.parse_extender_args(body(make_pod("a", cpu="1"), NAMES))
    second = wire.parse_extender_args(body(make_pod("b", cpu="2"), NAMES))
    third = wire.parse_extender_args(body(make_pod("c", cpu="3"), NAMES))
    assert first.node_names == second.node_names == tuple(NAMES)
    assert third.node_names is second.node_names
    assert third.pod["metadata"]["name"] == "c"


def test_a_list_seen_once_is_not_remembered() -> None:
    """kube-scheduler rotates where each pod's filtering starts: lists in an order never seen again are
    decoded and answered, never kept."""
    kept = len(wire._candidate_lists)
    for start in range(5):
        rotated = NAMES[start:] + NAMES[:start]
        assert wire.parse_extender_args(body(make_pod(f"p{start}"), rotated)).node_names == tuple(rotated)
    assert len(wire._candidate_lists) == kept


def test_a_nested_node_names_key_is_not_taken_for_the_candidates() -> None:
    remember(NAMES)
    pod = make_pod("tricky")
    pod["metadata"]["annotations"] = {"x": "y"}
    tricky = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["node-000"]})[:-1]
    tricky += b',"Extra":{"NodeNames":' + orjson.dumps(NAMES) + b"}}"
    parsed = wire.parse_extender_args(tricky)
    assert parsed.node_names == ("node-000",)


def test_another_spelling_of_the_key_before_the_remembered_member_wins_as_go_decodes_it() -> None:
    remember(NAMES)
    both = body(make_pod("a"), NAMES, nodenames=["node-007"])
    assert wire.parse_extender_args(both).node_names == (*NAMES,)


def test_repeated_names_in_a_remembered_list_are_answered_once() -> None:
    doubled = [*NAMES, *NAMES[:10]]
    assert wire.parse_extender_args(body(make_pod("a"), doubled)).node_names == tuple(NAMES)
    assert wire.parse_extender_args(body(make_pod("b"), doubled)).node_names == tuple(NAMES)
    assert wire.parse_extender_args(body(make_pod("c"), doubled)).node_names == tuple(NAMES)


@pytest.mark.parametrize(
    ("before", "message"),
    [(b'{"Pod":[],"Nodes":null,', "Pod must be an object"), (b'{"Nodes":null,', "Pod is missing")],
)
def test_a_bad_body_ending_with_a_remembered_list_is_refused_as_before(before: bytes, message: str) -> None:
    remember(NAMES)
    with pytest.raises(wire.WireError, match=message):
        wire.parse_extender_args(before + b'"NodeNames":' + orjson.dumps(NAMES) + b"}")


def test_a_body_cut_inside_the_pod_is_refused_as_before() -> None:
    remember(NAMES)
    broken = b'{"Pod":{"metadata":{"name":"x"},"Nodes":null,"NodeNames":' + orjson.dumps(NAMES) + b"}"
    with pytest.raises(wire.WireError, match="not JSON"):
        wire.parse_extender_args(broken)
