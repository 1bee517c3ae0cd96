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


def test_the_same_candidate_list_is_decoded_once_into_one_tuple() -> None:
    first = wire.parse_extender_args(body(make_pod("a", cpu="1"), NAMES))
    again = wire.parse_extender_args(body(make_pod("b", cpu="2"), NAMES))
    assert first.node_names == tuple(NAMES)
    assert again.node_names is first.node_names
    assert again.pod["metadata"]["name"] == "b"


def test_a_nested_node_names_key_is_not_taken_for_the_candidates() -> None:
    wire.parse_extender_args(body(make_pod("a"), NAMES))
    pod = make_pod("tricky")
    pod["metadata"]["annotations"] = {"x": "y"}
    tricky = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["node-000"]})[:-1]
    tricky += b',"Extra":{"NodeNames":' + orjson.dumps(NAMES) + b"}}"
    parsed = wire.parse_extender_args(tricky)
    assert parsed.node_names == ("node-000",)


def test_another_spelling_of_the_key_before_the_remembered_member_wins_as_go_decodes_it() -> None:
    wire.parse_extender_args(body(make_pod("a"), NAMES))
    both = body(make_pod("a"), NAMES, nodenames=["node-007"])
    assert wire.parse_extender_args(both).node_names == (*NAMES,)


def test_repeated_names_in_a_remembered_list_are_answered_once() -> None:
    doubled = [*NAMES, *NAMES[:10]]
    assert wire.parse_extender_args(body(make_pod("a"), doubled)).node_names == tuple(NAMES)
    assert wire.parse_extender_args(body(make_pod("b"), doubled)).node_names == tuple(NAMES)


@pytest.mark.parametrize(
    ("before", "message"),
    [(b'{"Pod":[],"Nodes":null,', "Pod must be an object"), (b'{"Nodes":null,', "Pod is missing")],
)
def test_a_bad_body_ending_with_a_remembered_list_is_refused_as_before(before: bytes, message: str) -> None:
    wire.parse_extender_args(body(make_pod("a"), NAMES))
    with pytest.raises(wire.WireError, match=message):
        wire.parse_extender_args(before + b'"NodeNames":' + orjson.dumps(NAMES) + b"}")


def test_a_body_cut_inside_the_pod_is_refused_as_before() -> None:
    wire.parse_extender_args(body(make_pod("a"), NAMES))
    broken = b'{"Pod":{"metadata":{"name":"x"},"Nodes":null,"NodeNames":' + orjson.dumps(NAMES) + b"}"
    with pytest.raises(wire.WireError, match="not JSON"):
        wire.parse_extender_args(broken)
