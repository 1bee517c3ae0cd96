"""Time and rate on the listeners: `tfjob-extender serve` as a process, held up by slow clients over real sockets.

Every time limit is set short by its flag, on both listeners. A connection that sends nothing, or whose
TLS handshake stalls, is closed after the first-byte timeout; a head begun but not complete within the
head timeout is a 408 (on a verb path, the verb's `Error`), however steadily its bytes trickle in; so is a
body not complete within the body timeout; an idle connection between requests is closed after the
keep-alive time. Hundreds of idle and trickling connections to the observe port, from a process allowed
256 open files, leave kube-scheduler's new connections to the verb listener served promptly. New
connections are accepted at the listener's rate and the observe listener answers requests at its own.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.attackers import SlowClients
from benchmarks.raw_http import Address, connect, exchange, read_reply, request_bytes
from benchmarks.served_extender import FilterProbe, ServedExtender, served_extender
from tests.certificates import self_signed_certificate
from tests.contract.listener_checks import (
    assert_filter_error,
    assert_json_error,
    assert_served_promptly,
    refused,
    seconds_until_closed,
)

FIRST_BYTE_TIMEOUT_S = 1.0
HEAD_TIMEOUT_S = 2.0
BODY_TIMEOUT_S = 1.0
KEEP_ALIVE_S = 1.0
SLACK_S = 1.5
"""How much later than its limit a connection may be ended on a loaded machine."""
OPEN_FILES = 256
TIMES = {
    "first-byte-timeout-s": FIRST_BYTE_TIMEOUT_S,
    "head-timeout-s": HEAD_TIMEOUT_S,
    "body-timeout-s": BODY_TIMEOUT_S,
    "keep-alive-s": KEEP_ALIVE_S,
}
RATE = 10
"""Connections accepted, or observe requests answered, per second where a rate is set."""
RATED_CALLS = 4 * RATE


def both_listeners(values: dict[str, float]) -> list[str]:
    return [f"--{listener}-{name}={value}" for listener in ("verb", "observe") for name, value in values.items()]


@pytest.fixture(scope="module")
def served() -> Iterator[ServedExtender]:
    with served_extender(*both_listeners(TIMES), open_files=OPEN_FILES) as running:
        yield running


@pytest.mark.parametrize("listener", ["verb", "observe"])
def test_a_connection_that_sends_nothing_is_closed_after_the_first_byte_timeout(
    served: ServedExtender, listener: str
) -> None:
    outcome = SlowClients(served.address(listener), idle=5).run_for(FIRST_BYTE_TIMEOUT_S + SLACK_S + 1)
    assert outcome.still_open == 0 and len(outcome.close_delays_s) == 5, outcome.summary()
    delays = outcome.close_delays_s
    assert all(0.8 * FIRST_BYTE_TIMEOUT_S <= delay <= FIRST_BYTE_TIMEOUT_S + SLACK_S for delay in delays), delays


@pytest.mark.parametrize(("listener", "method", "path"), [("observe", "GET", "/metrics"), ("verb", "POST", "/filter")])
def test_a_head_trickling_in_a_byte_a_second_is_refused_at_the_head_timeout(
    served: ServedExtender, listener: str, method: str, path: str
) -> None:
    slow = SlowClients(served.address(listener), idle=0, slow=3, byte_interval_s=1.0, method=method, path=path)
    outcome = slow.run_for(HEAD_TIMEOUT_S + SLACK_S + 1)
    assert outcome.still_open == 0 and outcome.unanswered == 0, outcome.summary()
    delays = outcome.close_delays_s
    assert all(0.8 * HEAD_TIMEOUT_S <= delay <= HEAD_TIMEOUT_S + SLACK_S for delay in delays), delays
    status = 200 if path == "/filter" else 408
    assert outcome.statuses == {status: 3}, outcome.summary()
    if path == "/filter":
        assert_filter_error(outcome.first_replies[status])
    else:
        assert_json_error(outcome.first_replies[status], 408)


@pytest.mark.parametrize(
    ("listener", "method", "path"),
    [("observe", "GET", "/metrics"), ("verb", "GET", "/healthz"), ("verb", "POST", "/filter")],
)
def test_a_body_not_complete_within_the_body_timeout_is_refused_and_the_connection_closed(
    served: ServedExtender, listener: str, method: str, path: str
) -> None:
    started = time.monotonic()
    reply, closed = refused(served.address(listener), request_bytes(method, path, b"x" * 10)[:-9])
    assert 0.8 * BODY_TIMEOUT_S <= time.monotonic() - started <= BODY_TIMEOUT_S + SLACK_S
    if path == "/filter":
        assert_filter_error(reply)
    else:
        assert_json_error(reply, 408)
    assert closed, "the connection stays open after the refusal"


@pytest.mark.parametrize("listener", ["verb", "observe"])
def test_an_idle_connection_between_requests_is_closed_after_the_keep_alive_time(
    served: ServedExtender, listener: str
) -> None:
    with connect(served.address(listener)) as sock, sock.makefile("rb") as stream:
        sock.sendall(request_bytes("GET", "/healthz"))
        reply = read_reply(stream)
        assert reply is not None and reply.status == 200 and not reply.closes
        assert (
            0.8 * KEEP_ALIVE_S <= seconds_until_closed(sock, stream, KEEP_ALIVE_S + SLACK_S) <= KEEP_ALIVE_S + SLACK_S
        )


def test_hundreds_of_idle_and_slow_observe_connections_leave_new_verb_connections_served(
    served: ServedExtender,
) -> None:
    assert served.observe is not None
    attack = SlowClients(served.observe, idle=600, slow=100, byte_interval_s=1.0, reopen=True, source="127.0.0.2")
    with FilterProbe(served.verb) as probe:
        outcome = attack.run_for(2 * HEAD_TIMEOUT_S + SLACK_S)
    assert_served_promptly(probe)
    assert outcome.close_delays_s, "the server closed none of them"
    reply = exchange(served.observe, request_bytes("GET", "/healthz"))
    assert reply is not None and reply.status == 200, "the observe listener serves again"


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = self_signed_certificate(folder)
    return cert, key


@pytest.fixture(scope="module")
def served_over_tls(certificate: tuple[Path, Path]) -> Iterator[ServedExtender]:
    cert, key = certificate
    files = [f"--tls-cert-file={cert}", f"--tls-key-file={key}"]
    files += [f"--observe-tls-cert-file={cert}", f"--observe-tls-key-file={key}"]
    trusting = ssl.create_default_context(cafile=str(cert))
    with served_extender(*files, *both_listeners(TIMES), tls=trusting) as running:
        yield running


@pytest.mark.parametrize("listener", ["verb", "observe"])
@pytest.mark.parametrize(
    "sent", [b"", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"], ids=["nothing", "half a hello"]
)
def test_a_tls_handshake_that_stalls_is_closed_after_the_first_byte_timeout(
    served_over_tls: ServedExtender, listener: str, sent: bytes
) -> None:
    with connect(served_over_tls.address(listener)) as sock, sock.makefile("rb") as stream:
        sock.sendall(sent)
        assert seconds_until_closed(sock, stream, FIRST_BYTE_TIMEOUT_S + SLACK_S) <= FIRST_BYTE_TIMEOUT_S + SLACK_S


@pytest.fixture(scope="module")
def accepts_limited() -> Iterator[ServedExtender]:
    room = both_listeners({"max-connections": 200, "max-connections-per-peer": 200, "overflow-replies": 200})
    with served_extender(f"--observe-accepts-per-s={RATE}", *room) as running:
        yield running


@pytest.fixture(scope="module")
def requests_limited() -> Iterator[ServedExtender]:
    with served_extender(f"--observe-requests-per-s={RATE}") as running:
        yield running


def answer_times(address: Address, requests: list[bytes]) -> list[float]:
    """Seconds from the start until each of `requests`, sent at once on a connection of its own, is answered
    with a 200."""
    started = time.monotonic()
    times: list[float] = []

    def ask(data: bytes) -> None:
        reply = exchange(address, data, timeout=30)
        assert reply is not None and reply.status == 200, reply
        times.append(time.monotonic() - started)

    askers = [threading.Thread(target=ask, args=(data,)) for data in requests]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    return sorted(times)


def assert_paced(times: list[float], count: int) -> None:
    """`count` answers, at most about a second's worth at once and the rest at the rate."""
    assert len(times) == count, f"{count - len(times)} not answered"
    assert sum(1 for at in times if at < 0.5) <= RATE * 1.5, times
    assert times[-1] >= (count / RATE - 1) * 0.7, times


def test_new_connections_are_accepted_at_the_listeners_rate(accepts_limited: ServedExtender) -> None:
    assert accepts_limited.observe is not None
    request = request_bytes("GET", "/healthz", headers=[("connection", "close")])
    with FilterProbe(accepts_limited.verb) as probe:
        times = answer_times(accepts_limited.observe, [request] * RATED_CALLS)
    assert_paced(times, RATED_CALLS)
    assert_served_promptly(probe)


def test_the_observe_listener_answers_requests_at_its_rate(requests_limited: ServedExtender) -> None:
    assert requests_limited.observe is not None
    started = time.monotonic()
    times: list[float] = []
    with FilterProbe(requests_limited.verb) as probe, connect(requests_limited.observe, timeout=30) as sock:
        sock.sendall(request_bytes("GET", "/healthz") * RATED_CALLS)
        with sock.makefile("rb") as stream:
            while len(times) < RATED_CALLS and (reply := read_reply(stream)) is not None:
                assert reply.status == 200, reply
                times.append(time.monotonic() - started)
    assert_paced(times, RATED_CALLS)
    assert_served_promptly(probe)
