"""Request heads and pipelined requests within their caps: `tfjob-extender serve` as a process, attacked over
real sockets.

The head caps are set small by their flags (a 4 KiB line, a 16 KiB head, 40 header lines, on both
listeners). A request line over the cap is a 414; a header line over it, a head over its cap or one header
line too many is a 431 — each a JSON `{"error"}` after which the server closes the connection — and on a
verb path a 200 in the verb's reply shape with its `Error`. Then the attacks as they were measured before
the caps: ~100 MiB of small headers and a header line that never ends on the observe port, 150 MiB of
headers and an 85 MiB URL on the verb port, 1 000 pipelined filter calls from a client that never reads.
Each costs the server under 100 MB of resident memory, and kube-scheduler's filter calls are answered
promptly throughout.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.attackers import MiB, PipelinedFilters, growing_header_line, header_flood, long_url
from benchmarks.served_extender import FilterProbe, RssPeak, ServedExtender, served_extender
from tests.contract.listener_checks import (
    assert_filter_error,
    assert_json_error,
    assert_memory_bounded,
    assert_served_promptly,
    refused,
)

MAX_LINE_BYTES = 4096
MAX_HEAD_BYTES = 16 * 1024
MAX_HEADERS = 40
ATTACK_S = 3.0
CAPS = {
    "max-line-bytes": MAX_LINE_BYTES,
    "max-head-bytes": MAX_HEAD_BYTES,
    "max-headers": MAX_HEADERS,
    "head-timeout-s": 2,
}


@pytest.fixture(scope="module")
def served() -> Iterator[ServedExtender]:
    flags = [f"--{listener}-{name}={value}" for listener in ("verb", "observe") for name, value in CAPS.items()]
    with served_extender(*flags) as running:
        yield running


def head(request_line: str, *lines: str) -> bytes:
    return "\r\n".join([request_line, "host: extender", "content-length: 0", *lines, "", ""]).encode()


OVER_THE_CAPS = {
    "a header line over the line cap": [f"x-long: {'a' * MAX_LINE_BYTES}"],
    "a head over the head cap": [f"x-big-{number}: {'b' * 1000}" for number in range(MAX_HEAD_BYTES // 1000 + 2)],
    "a header line too many": [f"x-many-{number}: c" for number in range(MAX_HEADERS + 1)],
}


@pytest.mark.parametrize("cause", list(OVER_THE_CAPS))
@pytest.mark.parametrize(("listener", "path"), [("verb", "/healthz"), ("observe", "/metrics")])
def test_a_head_over_a_cap_is_a_json_431_and_the_connection_closed(
    served: ServedExtender, listener: str, path: str, cause: str
) -> None:
    reply, closed = refused(served.address(listener), head(f"GET {path} HTTP/1.1", *OVER_THE_CAPS[cause]))
    assert_json_error(reply, 431)
    assert closed, "the connection stays open after the refusal"


@pytest.mark.parametrize("cause", list(OVER_THE_CAPS))
def test_a_verb_call_whose_head_is_over_a_cap_gets_the_verbs_error_and_the_connection_closed(
    served: ServedExtender, cause: str
) -> None:
    reply, closed = refused(served.verb, head("POST /filter HTTP/1.1", *OVER_THE_CAPS[cause]))
    assert_filter_error(reply)
    assert closed, "the connection stays open after the refusal"


@pytest.mark.parametrize("listener", ["verb", "observe"])
def test_a_request_line_over_the_cap_is_a_json_414_and_the_connection_closed(
    served: ServedExtender, listener: str
) -> None:
    reply, closed = refused(served.address(listener), head(f"GET /healthz?q={'a' * MAX_LINE_BYTES} HTTP/1.1"))
    assert_json_error(reply, 414)
    assert closed, "the connection stays open after the refusal"


def test_100_mib_of_small_headers_to_the_observe_port_are_refused_431_at_no_cost(served: ServedExtender) -> None:
    assert served.observe is not None
    with RssPeak(served) as rss, FilterProbe(served.verb) as probe:
        outcome = header_flood(served.observe, budget_bytes=100 * MiB).run_for(ATTACK_S)
    assert_memory_bounded(rss)
    assert_served_promptly(probe)
    assert set(outcome.statuses) == {431}, outcome.summary()
    assert_json_error(outcome.first_replies[431], 431)


def test_a_header_line_that_never_ends_on_the_observe_port_is_refused_431_at_no_cost(served: ServedExtender) -> None:
    assert served.observe is not None
    with RssPeak(served) as rss, FilterProbe(served.verb) as probe:
        outcome = growing_header_line(served.observe).run_for(ATTACK_S)
    assert_memory_bounded(rss)
    assert_served_promptly(probe)
    assert set(outcome.statuses) == {431}, outcome.summary()
    assert_json_error(outcome.first_replies[431], 431)


def test_150_mib_of_headers_to_a_verb_get_the_verbs_error_at_no_cost(served: ServedExtender) -> None:
    with RssPeak(served) as rss, FilterProbe(served.verb) as probe:
        outcome = header_flood(served.verb, method="POST", path="/filter", budget_bytes=150 * MiB).run_for(ATTACK_S)
    assert_memory_bounded(rss)
    assert_served_promptly(probe)
    assert set(outcome.statuses) == {200}, outcome.summary()
    assert_filter_error(outcome.first_replies[200])


def test_an_85_mib_url_is_refused_414_at_no_cost(served: ServedExtender) -> None:
    with RssPeak(served) as rss, FilterProbe(served.verb) as probe:
        outcome = long_url(served.verb, budget_bytes=85 * MiB).run_for(ATTACK_S)
    assert_memory_bounded(rss)
    assert_served_promptly(probe)
    assert outcome.statuses == {414: 1}, outcome.summary()
    assert_json_error(outcome.first_replies[414], 414)


def test_pipelined_filters_from_a_client_that_never_reads_stop_being_read_and_cost_no_memory(
    served: ServedExtender,
) -> None:
    attacker = PipelinedFilters(served.verb, count=1000, candidates=15_000)
    whole = attacker.count * len(attacker.request)
    with RssPeak(served) as rss, FilterProbe(served.verb) as probe:
        outcome = attacker.run_for(ATTACK_S + 1)
    assert_memory_bounded(rss)
    assert_served_promptly(probe)
    assert outcome.bytes_sent < whole // 4, f"the server took {outcome.bytes_sent / MiB:.0f} MiB of the calls"
    assert outcome.idle_at_end_s >= 1, "the server still reads the connection"
