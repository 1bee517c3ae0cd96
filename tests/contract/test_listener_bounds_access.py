"""Who reaches what, and how many at once: `tfjob-extender serve` as a process, over real sockets.

The verb listener serves the verbs and the probes only: the debug routes, the page, explain, the metrics
and the schema are a JSON 404 there, and live on the observe listener (the schema nowhere by default).
`serve` off the loopback address with no authentication refuses to start, unless `--verbs-insecure`.
Connections are bounded per client address and per listener: past the limits a few get a JSON 503, and a
newcomer there takes the place of the one that has waited longest without sending a request, which is closed
unanswered; so idle sockets, however many and from wherever, never keep out a client with a valid token,
nor a client at another address.
"""

from __future__ import annotations

import contextlib
import math
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from benchmarks.attackers import ROUTES_OFF_THE_VERB_LISTENER, SlowClients, calls_without_credentials, probe_routes
from benchmarks.raw_http import Reply, connect, exchange, read_reply, request_bytes
from benchmarks.served_extender import (
    EXAMPLE_CLUSTER,
    REPO,
    FilterProbe,
    ServedExtender,
    serve_command,
    served_extender,
    stop,
)
from extender.devcluster.processes import free_port
from tests.contract.listener_checks import PROMPT_S, assert_json_error, refused, seconds_until_closed

TOKEN = "verb-secret"
BEARER = ("authorization", f"Bearer {TOKEN}")
ATTACKER_ADDRESSES = [f"127.0.0.{number}" for number in range(2, 10)]
SETTLE_S = 2.0
"""Time for the server to take in an attack's connections before a client is checked against them."""


@pytest.fixture(scope="module")
def served() -> Iterator[ServedExtender]:
    with served_extender("--observe-debug", "--verb-first-byte-timeout-s=30") as running:
        yield running


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tokens") / "tokens"
    path.write_text(f"{TOKEN}\n")
    return path


@pytest.fixture(scope="module")
def token_guarded(token_file: Path) -> Iterator[ServedExtender]:
    with served_extender(f"--auth-token-file={token_file}", "--verb-first-byte-timeout-s=30") as running:
        yield running


@pytest.fixture(scope="module")
def limited() -> Iterator[ServedExtender]:
    limits = ["--verb-max-connections=4", "--verb-overflow-replies=2", "--verb-max-connections-per-peer=3"]
    with served_extender(*limits, observe=False) as running:
        yield running


@pytest.mark.parametrize("path", ROUTES_OFF_THE_VERB_LISTENER)
def test_debug_routes_the_page_explain_metrics_and_the_schema_are_a_json_404_on_the_verb_listener(
    served: ServedExtender, path: str
) -> None:
    assert_json_error(probe_routes(served.verb, [path])[path], 404)


def test_the_observe_listener_serves_them_with_observe_debug_but_not_the_schema(served: ServedExtender) -> None:
    assert served.observe is not None
    replies = probe_routes(served.observe, ROUTES_OFF_THE_VERB_LISTENER)
    assert {path: reply.status if reply else None for path, reply in replies.items()} == {
        **dict.fromkeys(ROUTES_OFF_THE_VERB_LISTENER, 200),
        "/openapi.json": 404,
    }
    assert_json_error(replies["/openapi.json"], 404)


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/no-such-route", 404), ("POST", "/metrics", 405), ("PUT", "/healthz", 405)]
)
def test_every_refusal_of_the_observe_listener_is_json(
    served: ServedExtender, method: str, path: str, status: int
) -> None:
    assert served.observe is not None
    assert_json_error(exchange(served.observe, request_bytes(method, path)), status)


@pytest.mark.parametrize("listener", ["verb", "observe"])
def test_head_on_the_probes_answers_without_a_body(served: ServedExtender, listener: str) -> None:
    with connect(served.address(listener)) as sock, sock.makefile("rb") as stream:
        for path in ("/healthz", "/readyz"):
            sock.sendall(request_bytes("HEAD", path))
            reply = read_reply(stream, to_head=True)
            assert reply is not None and reply.status == 200, reply
        sock.sendall(request_bytes("GET", "/healthz"))
        after = read_reply(stream)
        assert after is not None and after.json() == {"status": "ok"}, "no body came after the HEAD replies"


def run_until_exit(command: list[str], log: IO[bytes], seconds: float) -> int | None:
    """The exit code of `command`, or None when it still runs after `seconds` (it is then stopped)."""
    process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=log)
    try:
        return process.wait(seconds)
    except subprocess.TimeoutExpired:
        return None
    finally:
        stop(process)


def test_serve_off_loopback_with_no_authentication_refuses_to_start() -> None:
    port = free_port()
    with tempfile.TemporaryFile() as log:
        command = serve_command(EXAMPLE_CLUSTER, "--host", "0.0.0.0", "--port", str(port))
        code = run_until_exit(command, log, 15)
        log.seek(0)
        said = log.read().decode()
    assert code == 2, f"serve on 0.0.0.0 with no authentication exited with {code}:\n{said}"
    reasons = [line for line in said.splitlines() if line.strip() and "warning:" not in line]
    assert len(reasons) == 1 and "--verbs-insecure" in reasons[0], said
    with pytest.raises(ConnectionRefusedError):
        calls_without_credentials(("127.0.0.1", port))


def test_serve_off_loopback_with_verbs_insecure_serves_the_verbs_and_no_debug_route() -> None:
    with served_extender("--verbs-insecure", host="0.0.0.0", observe=False) as running:
        calls = calls_without_credentials(running.verb)
    filtered = calls["/filter"]
    assert filtered is not None and filtered.status == 200 and filtered.json()["Error"] == "", filtered
    assert_json_error(calls["/debug/state"], 404)


def test_serve_off_loopback_with_tokens_answers_a_stranger_with_a_json_401(token_file: Path) -> None:
    with served_extender(f"--auth-token-file={token_file}", host="0.0.0.0", observe=False) as running:
        calls = calls_without_credentials(running.verb)
        assert FilterProbe(running.verb, headers=[BEARER]).call(fresh=True) < PROMPT_S
    assert_json_error(calls["/filter"], 401)
    state = calls["/debug/state"]
    assert state is not None and state.status in (401, 404), state
    assert_json_error(state, state.status)


def hold_idle(served: ServedExtender, per_address: int, addresses: list[str]) -> list[SlowClients]:
    attackers = [SlowClients(served.verb, idle=per_address, source=address).start() for address in addresses]
    time.sleep(SETTLE_S)
    return attackers


def test_idle_sockets_filling_the_verb_listener_never_keep_out_a_client_with_a_token(
    token_guarded: ServedExtender,
) -> None:
    attackers = hold_idle(token_guarded, 32, ["127.0.0.1", *ATTACKER_ADDRESSES])
    try:
        with contextlib.closing(FilterProbe(token_guarded.verb, headers=[BEARER])) as probe:
            for _ in range(3):
                assert probe.call(fresh=True) < PROMPT_S
                assert probe.call(fresh=False) < PROMPT_S
    finally:
        outcomes = [attacker.stop() for attacker in attackers]
    assert sum(outcome.unanswered for outcome in outcomes) > 0, "the idle sockets never filled the listener"


def test_idle_sockets_from_one_address_never_keep_out_a_client_at_another(served: ServedExtender) -> None:
    attackers = hold_idle(served, 64, ATTACKER_ADDRESSES[:1])
    try:
        probe = FilterProbe(served.verb)
        for _ in range(3):
            assert probe.call(fresh=True) < PROMPT_S
    finally:
        outcome = attackers[0].stop()
    assert outcome.unanswered > 0, "one address held all its sockets"


def held_connections(served: ServedExtender, source: str, count: int) -> list[socket.socket]:
    """`count` keep-alive connections from `source`, each after a request answered."""
    held = []
    for _ in range(count):
        sock = connect(served.verb, source=source)
        held.append(sock)
        reply = exchange_on(sock, request_bytes("GET", "/healthz"))
        assert reply is not None and reply.status == 200, reply
    return held


def exchange_on(sock: socket.socket, data: bytes) -> Reply | None:
    sock.sendall(data)
    with sock.makefile("rb") as stream:
        return read_reply(stream)


def close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()


def test_one_address_holds_its_share_of_connections_and_the_next_gets_a_json_503(limited: ServedExtender) -> None:
    held = held_connections(limited, "127.0.0.2", 3)
    try:
        reply, closed = refused(limited.verb, request_bytes("GET", "/healthz"), source="127.0.0.2")
        assert_json_error(reply, 503)
        assert closed, "the connection stays open after the refusal"
        other = exchange(limited.verb, request_bytes("GET", "/healthz"), source="127.0.0.3")
        assert other is not None and other.status == 200, "another address is served"
    finally:
        close_all(held)


def test_past_the_overflow_replies_the_longest_idle_is_closed_unanswered_for_a_newcomer(
    limited: ServedExtender,
) -> None:
    held = held_connections(limited, "127.0.0.2", 3) + held_connections(limited, "127.0.0.3", 1)
    idle = [connect(limited.verb, source="127.0.0.4") for _ in range(2)]
    try:
        time.sleep(0.5)
        assert_json_error(exchange(limited.verb, request_bytes("GET", "/healthz"), source="127.0.0.5"), 503)
        closed = []
        for sock in idle:
            with sock.makefile("rb") as stream:
                closed.append(seconds_until_closed(sock, stream, 0.5) < math.inf)
        assert closed == [True, False], "the longest idle gave way, and only it"
    finally:
        close_all(held + idle)
