"""The fast wire codec (`extender.api.wire`) held equal to the wire models (`extender.api.wire_models`).

For generated requests kube-scheduler could send, both accept and read the same values; for requests
broken in one member, both refuse (the fast path with its `WireError`, never another exception); for
arbitrary JSON at the members the extender reads, they agree. What the encoders write validates against
the reply models and survives a round trip through them. The differences the models' docstring lists
are tested below as exceptions, each stating what differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from extender.api import verbs, wire, wire_models
from extender.policy.core.decisions import FilterDecision, PreemptDecision, ScoreDecision
from tests.unit.api.wire_payloads import (
    COUNTS,
    TOO_MANY_NAMES,
    VALID_NAMES,
    VALID_UIDS,
    arbitrary_extender_args,
    arbitrary_preemption_args,
    broken_extender_args,
    broken_preemption_args,
    extender_args,
    preemption_args,
)

Parsed = TypeVar("Parsed")
Model = TypeVar("Model", bound=BaseModel)
EXAMPLES = 200


def fast(parse: Callable[[bytes], Parsed], body: bytes) -> Parsed | None:
    """What the fast path reads from `body`, or None when it refuses it with a `WireError` (any other
    exception fails the test)."""
    try:
        return parse(body)
    except wire.WireError:
        return None


def validated(model: type[Model], body: bytes) -> Model | None:
    try:
        return model.model_validate_json(body)
    except ValidationError:
        return None


def parsed_args(body: bytes) -> wire.ExtenderArgs | None:
    """The fast path's reading, the same each time the body comes (the second sighting remembers the
    candidate list, the third reads it from the memo)."""
    readings = [fast(wire.parse_extender_args, body) for _ in range(3)]
    assert readings[1:] == readings[:-1]
    return readings[0]


def assert_same_args(parsed: wire.ExtenderArgs, model: wire_models.ExtenderArgs) -> None:
    """The fast path reads the pod, the candidates without repeats (the first kept) and, in the `Nodes`
    form, the first Node object of each name."""
    assert parsed.pod == model.pod
    if model.node_names is not None:
        assert parsed.node_names == tuple(dict.fromkeys(model.node_names))
    elif model.nodes is not None:
        first: dict[str, wire_models.Node] = {}
        for node in model.nodes.items or []:
            first.setdefault(node.metadata.name, node)
        assert parsed.node_names is None and parsed.item_names == tuple(first)
        assert parsed.nodes == [node.model_dump(by_alias=True) for node in first.values()]
    else:
        assert parsed.node_names is None and parsed.nodes is None and parsed.candidates == ()


def assert_same_victims(parsed: wire.PreemptionArgs, model: wire_models.ExtenderPreemptionArgs) -> None:
    """The fast path reads the pod and, per node, the victims' UIDs in order and the PDB violations (null:
    0); a null entry reads as no victims and no count. With both forms in one body (kube-scheduler sends
    one) the fast path reads the meta form and then the full one over it: acceptance is compared, not this."""
    assert parsed.pod == model.pod
    meta, full = model.node_name_to_meta_victims, model.node_name_to_victims
    if meta is not None and full is not None:
        return
    victims: dict[str, list[str]] = {}
    violations: dict[str, int] = {}
    for node, entry in (meta or {}).items():
        victims[node] = [pod.uid for pod in entry.pods or []] if entry else []
        if entry:
            violations[node] = entry.num_pdb_violations or 0
    for node, full_entry in (full or {}).items():
        victims[node] = [pod.metadata.uid for pod in full_entry.pods or []] if full_entry else []
        if full_entry:
            violations[node] = full_entry.num_pdb_violations or 0
    assert parsed.victims == victims
    assert parsed.pdb_violations == violations


def body_of(document: Any) -> bytes:
    """`document` as Go's encoder writes it: compact UTF-8 (and any integer, as orjson would not)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=extender_args())
def test_a_valid_filter_request_is_accepted_and_read_alike_by_both(document: dict[str, Any]) -> None:
    body = body_of(document)
    model = validated(wire_models.ExtenderArgs, body)
    parsed = parsed_args(body)
    assert model is not None and parsed is not None
    assert_same_args(parsed, model)


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=broken_extender_args())
def test_a_filter_request_broken_in_one_member_is_refused_by_both(document: Any) -> None:
    body = body_of(document)
    assert validated(wire_models.ExtenderArgs, body) is None
    assert parsed_args(body) is None


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=arbitrary_extender_args())
def test_both_agree_on_any_filter_request(document: dict[str, Any]) -> None:
    body = body_of(document)
    model = validated(wire_models.ExtenderArgs, body)
    parsed = parsed_args(body)
    assert (model is None) == (parsed is None), (model, parsed)
    if model is not None and parsed is not None:
        assert_same_args(parsed, model)


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=preemption_args())
def test_a_valid_preempt_request_is_accepted_and_read_alike_by_both(document: dict[str, Any]) -> None:
    body = body_of(document)
    model = validated(wire_models.ExtenderPreemptionArgs, body)
    parsed = fast(wire.parse_preemption_args, body)
    assert model is not None and parsed is not None
    assert_same_victims(parsed, model)


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=broken_preemption_args())
def test_a_preempt_request_broken_in_one_member_is_refused_by_both(document: Any) -> None:
    body = body_of(document)
    assert validated(wire_models.ExtenderPreemptionArgs, body) is None
    assert fast(wire.parse_preemption_args, body) is None


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=arbitrary_preemption_args())
def test_both_agree_on_any_preempt_request(document: dict[str, Any]) -> None:
    body = body_of(document)
    model = validated(wire_models.ExtenderPreemptionArgs, body)
    parsed = fast(wire.parse_preemption_args, body)
    assert (model is None) == (parsed is None), (model, parsed)
    if model is not None and parsed is not None:
        assert_same_victims(parsed, model)


def names_only(names: list[str]) -> dict[str, Any]:
    return {"Pod": {}, "NodeNames": names}


def node_objects(names: list[str]) -> dict[str, Any]:
    return {"Pod": {}, "Nodes": {"items": [{"metadata": {"name": name}} for name in names]}}


def meta_victims(names: list[str]) -> dict[str, Any]:
    return {"Pod": {}, "NodeNameToMetaVictims": dict.fromkeys(names)}


@pytest.mark.parametrize(
    ("model", "parse", "document"),
    [
        (wire_models.ExtenderArgs, wire.parse_extender_args, names_only),
        (wire_models.ExtenderArgs, wire.parse_extender_args, node_objects),
        (wire_models.ExtenderPreemptionArgs, wire.parse_preemption_args, meta_victims),
    ],
)
def test_one_candidate_over_the_bound_is_refused_by_both(
    model: type[BaseModel], parse: Callable[[bytes], object], document: Callable[[list[str]], dict[str, Any]]
) -> None:
    over = body_of(document(TOO_MANY_NAMES))
    assert validated(model, over) is None and fast(parse, over) is None
    within = body_of(document(TOO_MANY_NAMES[:-1]))
    assert validated(model, within) is not None and fast(parse, within) is not None


def round_trip(model: type[BaseModel], body: bytes) -> Any:
    """The reply as kube-scheduler decodes it, after validation against `model` and encoding back."""
    return orjson.loads(model.model_validate_json(body).model_dump_json(by_alias=True))


@settings(max_examples=EXAMPLES, deadline=None)
@given(document=extender_args(), data=st.data())
def test_a_filter_reply_is_an_extender_filter_result(document: dict[str, Any], data: st.DataObject) -> None:
    args = wire.parse_extender_args(body_of(document))
    candidates = args.candidates
    kept = data.draw(st.lists(st.booleans(), min_size=len(candidates), max_size=len(candidates)))
    feasible = tuple(name for name, keep in zip(candidates, kept, strict=True) if keep)
    rejected = [name for name in candidates if name not in feasible]
    hopeless = data.draw(st.sets(st.sampled_from(rejected))) if rejected else set()
    reasons = st.text(max_size=20)
    failed = {name: data.draw(reasons) for name in rejected if name not in hopeless}
    decision = FilterDecision("fit", "", feasible, failed, {name: data.draw(reasons) for name in hopeless})
    body = wire.encode_filter(decision, args)
    assert round_trip(wire_models.ExtenderFilterResult, body) == orjson.loads(body)
    reply = wire_models.ExtenderFilterResult.model_validate_json(body)
    if args.node_names is not None:
        assert reply.node_names == list(feasible) and reply.nodes is None
    else:
        assert reply.node_names is None and reply.nodes is not None
        sent = dict(zip(candidates, args.nodes or [], strict=True))
        assert [node.model_dump(by_alias=True) for node in reply.nodes.items or []] == [sent[n] for n in feasible]
    assert (reply.failed_nodes, reply.failed_and_unresolvable_nodes) == (
        ({}, {}) if feasible else (decision.failed, decision.unresolvable)
    )
    assert reply.error == ""


@settings(max_examples=EXAMPLES, deadline=None)
@given(hosts=st.lists(VALID_NAMES, unique=True, max_size=8), as_tuple=st.booleans(), data=st.data())
def test_a_prioritize_reply_is_a_host_priority_list(hosts: list[str], as_tuple: bool, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.integers(0, 10), min_size=len(hosts), max_size=len(hosts)))
    decision = ScoreDecision("scored", "", tuple(hosts) if as_tuple else hosts, values)
    body = wire.encode_scores(decision)
    assert round_trip(wire_models.HostPriorityList, body) == orjson.loads(body)
    listed = [(entry.host, entry.score) for entry in wire_models.HostPriorityList.model_validate_json(body).root]
    assert len(dict(listed)) == len(listed)
    assert all(decision.scores[host] == score for host, score in listed)
    assert all(score == 0 for host, score in decision.scores.items() if host not in dict(listed))


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    victims=st.dictionaries(VALID_NAMES, st.lists(VALID_UIDS, min_size=1, max_size=3).map(tuple), max_size=4),
    data=st.data(),
)
def test_a_preempt_reply_is_an_extender_preemption_result(
    victims: dict[str, tuple[str, ...]], data: st.DataObject
) -> None:
    violations = {node: data.draw(COUNTS) for node in victims if data.draw(st.booleans())}
    body = wire.encode_preemption(PreemptDecision("passthrough", "", victims, violations))
    assert round_trip(wire_models.ExtenderPreemptionResult, body) == orjson.loads(body)
    reply = wire_models.ExtenderPreemptionResult.model_validate_json(body).node_name_to_meta_victims or {}
    assert {node: tuple(pod.uid for pod in entry.pods or []) for node, entry in reply.items()} == victims
    assert {node: entry.num_pdb_violations for node, entry in reply.items()} == {
        node: violations.get(node, 0) for node in victims
    }


@settings(max_examples=EXAMPLES, deadline=None)
@given(message=st.text())
def test_an_error_reply_is_the_verbs_own_result_with_the_message_safe_for_go(message: str) -> None:
    filter_body = verbs.error_reply("filter", message)
    assert round_trip(wire_models.ExtenderFilterResult, filter_body) == orjson.loads(filter_body)
    assert wire_models.ExtenderFilterResult.model_validate_json(filter_body).error.replace("%%", "%") == message
    preempt_body = verbs.error_reply("preempt", message)
    # Exception: ExtenderPreemptionResult has no `Error` member; kube-scheduler ignores the one the
    # extender adds, so a failed preempt reads as no candidate, and the message is there for a person.
    assert round_trip(wire_models.ExtenderPreemptionResult, preempt_body) == {"NodeNameToMetaVictims": {}}
    assert orjson.loads(preempt_body)["Error"] == wire.go_safe(message)


def test_a_failed_prioritize_is_an_empty_host_priority_list() -> None:
    assert wire_models.HostPriorityList.model_validate_json(verbs.error_reply("prioritize", "failed")).root == []


@settings(max_examples=100, deadline=None)
@given(document=extender_args("names"), case=st.sampled_from([str.lower, str.upper, str.swapcase]))
def test_exception_the_fast_path_matches_keys_in_any_case_as_go_does(
    document: dict[str, Any], case: Callable[[str], str]
) -> None:
    """kube-scheduler writes the exact names, which is all the models take; Go's decoder and the fast path
    also match a key in another case when the exact name is absent."""
    recased = {case(key) if key in ("Pod", "Nodes", "NodeNames") else key: value for key, value in document.items()}
    assert validated(wire_models.ExtenderArgs, body_of(recased)) is None
    model = validated(wire_models.ExtenderArgs, body_of(document))
    parsed = parsed_args(body_of(recased))
    assert model is not None and parsed is not None
    assert_same_args(parsed, model)


@pytest.mark.parametrize(
    "items",
    [[{"metadata": {}}], [None, 1], [{"metadata": {"name": "Not-A-Node-Name"}}]],
    ids=["a node without a name", "not nodes", "a bad node name"],
)
def test_exception_with_both_candidate_forms_the_fast_path_reads_the_names_alone(items: list[Any]) -> None:
    """kube-scheduler fills one form, by `nodeCacheCapable`; given both, the fast path answers `NodeNames`
    and checks of `Nodes` only that its `items` is a list, while the models check both."""
    body = body_of({"Pod": {}, "Nodes": {"metadata": {}, "items": items}, "NodeNames": ["node-0"]})
    assert validated(wire_models.ExtenderArgs, body) is None
    parsed = parsed_args(body)
    assert parsed is not None and parsed.candidates == ("node-0",)
    refused = body_of({"Pod": {}, "Nodes": {"items": "node-1"}, "NodeNames": ["node-0"]})
    assert validated(wire_models.ExtenderArgs, refused) is None and parsed_args(refused) is None


@pytest.mark.parametrize(
    ("number", "read_by_the_fast_path"),
    [("NaN", None), ("Infinity", None), ("-Infinity", None), ("1e999", None), ("18446744073709551616", 2.0**64)],
)
def test_exception_numbers_no_go_encoder_writes_are_the_json_parsers_own(
    number: str, read_by_the_fast_path: float | None
) -> None:
    """Inside the opaque pod the models keep what pydantic's parser reads; orjson refuses NaN, the
    infinities and numbers beyond a double, and reads an integer beyond 64 bits as a double."""
    body = b'{"Pod": {"spec": {"priority": %s}}, "NodeNames": ["node-0"]}' % number.encode()
    assert validated(wire_models.ExtenderArgs, body) is not None
    parsed = parsed_args(body)
    read = None if parsed is None else parsed.pod["spec"]["priority"]
    assert read == read_by_the_fast_path and type(read) is type(read_by_the_fast_path)


def test_exception_the_fast_path_counts_brackets_before_decoding() -> None:
    """A bound on what one body costs: more than `JSON_CONTAINERS_MAX` bytes `{` and `[` anywhere, even in
    a string, are refused before decoding; a pod kube-scheduler sends holds a few hundred."""
    body = body_of({"Pod": {"metadata": {"name": "[" * (wire.JSON_CONTAINERS_MAX + 1)}}, "NodeNames": ["node-0"]})
    assert validated(wire_models.ExtenderArgs, body) is not None
    assert parsed_args(body) is None
