"""Fuzzing every verb and debug route: no internal error, no 5xx, and nothing a request does changes the
known-good answers or what `/debug/state` round-trips. The verbs are answered in process and through the
verb listener, the debug routes through the observe listener (and the verb listener answers them with a
JSON 404). `benchmarks/fuzz.py` runs the same payloads over HTTP at length."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.api.app import make_service
from extender.api.verbs import Service, answer
from extender.config import Settings
from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import cluster
from tests.contract.listeners import ListenerClient, client_of
from tests.fuzz.payloads import Request, comparable, fuzz_cluster, known_good, payload, warm_up

VERB_CASES = 2000
"""Payloads answered in process (`verbs.answer`, what the verb listener calls) per run of the suite."""
HTTP_CASES = 500
"""Payloads of every kind sent through the listeners (verbs and debug routes) per run of the suite;
`benchmarks/fuzz.py --requests N` sends N over HTTP at length."""
VERBS = ("filter", "prioritize", "preempt")
PROBES = ("/healthz", "/readyz")


class Fuzzed:
    def __init__(self, client: ListenerClient, service: Service) -> None:
        self.client = client
        self.service = service
        self.state = service.state

    def send(self, request: Request) -> tuple[int, bytes]:
        """A verb to the verb listener, anything else to the observe listener (and to the verb listener, which
        must answer it with JSON: a probe, or a 404)."""
        if request.verb is not None:
            response = self.client.verbs.request(request.method, request.path, content=request.body)
            return response.status_code, response.content
        elsewhere = self.client.verbs.request(request.method, request.path, content=request.body)
        assert elsewhere.status_code < 500 and elsewhere.headers["content-type"] == "application/json", request
        if request.path.split("?", 1)[0] not in PROBES:
            assert elsewhere.status_code == 404, (request, elsewhere.content[:300])
        response = self.client.observe.request(request.method, request.path, content=request.body)
        return response.status_code, response.content


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[Fuzzed, list[tuple[Request, bytes]]]]:
    service = make_service(Settings(), cluster(*fuzz_cluster()), lambda: 1_800_000_000.0)
    with client_of(service) as client:
        target = Fuzzed(client, service)
        for request in warm_up():
            target.send(request)
        answers = [(request, comparable(request, target.send(request)[1])) for request in known_good()]
        yield target, answers


def check(request: Request, status: int, body: bytes) -> None:
    """What every reply must be: below 500; for a verb a 200 JSON reply of its own shape, never an
    internal error."""
    assert status < 500, (request, body[:300])
    if request.verb is None:
        return
    assert status == 200, request
    reply: Any = orjson.loads(body)
    if request.verb == "prioritize":
        assert isinstance(reply, list), reply
    else:
        assert isinstance(reply, dict) and "internal error" not in reply.get("Error", ""), reply


def internal_errors(service: Service) -> float:
    registry = service.metrics.registry
    return sum(
        registry.get_sample_value("tfjob_extender_decisions_total", {"verb": verb, "outcome": "error"}) or 0.0
        for verb in VERBS
    )


def fuzzing(cases: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return settings(
        max_examples=cases,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@fuzzing(VERB_CASES)
@given(rng=st.randoms(use_true_random=False))
def test_no_verb_payload_gets_an_internal_error(
    fuzzed: tuple[Fuzzed, list[tuple[Request, bytes]]], rng: random.Random
) -> None:
    target, _ = fuzzed
    request = payload(rng)
    if request.verb is not None:
        check(request, 200, answer(target.service, request.verb, request.body))


@fuzzing(HTTP_CASES)
@given(rng=st.randoms(use_true_random=False))
def test_no_request_gets_an_internal_error_or_a_5xx(
    fuzzed: tuple[Fuzzed, list[tuple[Request, bytes]]], rng: random.Random
) -> None:
    target, _ = fuzzed
    request = payload(rng)
    check(request, *target.send(request))


def test_the_known_good_answers_and_the_model_survive_the_fuzz(
    fuzzed: tuple[Fuzzed, list[tuple[Request, bytes]]], tmp_path: Path
) -> None:
    target, answers = fuzzed
    assert internal_errors(target.service) == 0
    for request, reply in answers:
        assert comparable(request, target.send(request)[1]) == reply, request
    assert target.state.rejected_objects == 0
    dump = target.client.get("/debug/state").content
    path = tmp_path / "state.json"
    path.write_bytes(dump)
    loaded = ClusterState()
    load_snapshot_file(loaded, path)
    assert orjson.loads(dump) == dump_state(loaded.snapshot()) | {"tfjobExtender": orjson.loads(dump)["tfjobExtender"]}
    assert dump_state(target.state.snapshot()) == orjson.loads(dump)
