"""What a bounded refusal of a listener looks like and what an attack may cost, for the listener-bounds tests.

A refusal is a JSON `{"error"}` with its status, or on a verb path a 200 in the verb's own reply shape
with its `Error` (kube-scheduler reads nothing else); either way the server closes the connection after
it. An attack may cost the server at most `RSS_GROWTH_LIMIT` of resident memory, and a valid filter call
through the verb listener at most `PROMPT_S` meanwhile (quiet, it takes under a millisecond).
"""

from __future__ import annotations

import contextlib
import math
import socket
import time
from typing import IO, Any

from benchmarks.raw_http import Address, Reply, connect, ended, read_reply
from benchmarks.served_extender import MB, FilterProbe, RssPeak

PROMPT_S = 0.5
RSS_GROWTH_LIMIT = 100 * MB
CLOSE_WAIT_S = 5.0
"""How long a refused connection may stay open after the refusal."""
FILTER_REPLY_KEYS = {"NodeNames", "Nodes", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def refused(address: Address, data: bytes, *, source: str | None = None) -> tuple[Reply | None, bool]:
    """Send `data` on a new connection: the reply, and whether the server then closed the connection."""
    with connect(address, source=source) as sock, sock.makefile("rb") as stream:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        reply = read_reply(stream)
        return reply, seconds_until_closed(sock, stream, CLOSE_WAIT_S) < math.inf


def seconds_until_closed(sock: socket.socket, stream: IO[bytes], limit_s: float) -> float:
    """Seconds until the server closes the connection, with nothing more to read on it (inf: not within
    `limit_s`)."""
    started = time.monotonic()
    sock.settimeout(limit_s)
    try:
        closed = ended(stream)
    except TimeoutError:
        closed = False
    return time.monotonic() - started if closed else math.inf


def assert_json_error(reply: Reply | None, status: int) -> str:
    """`reply` is a JSON `{"error"}` with `status`; its error."""
    assert reply is not None, "the connection ended unanswered"
    assert reply.status == status, (reply.status, reply.body[:300])
    body: Any = reply.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"], body
    return str(body["error"])


def assert_filter_error(reply: Reply | None) -> str:
    """`reply` is filter's own reply shape, a 200 with its `Error`; the error."""
    assert reply is not None, "the connection ended unanswered"
    assert reply.status == 200, (reply.status, reply.body[:300])
    body: Any = reply.json()
    assert isinstance(body, dict) and set(body) == FILTER_REPLY_KEYS, body
    assert body["Error"].startswith("tfjob-extender filter: "), body
    return str(body["Error"])


def assert_served_promptly(probe: FilterProbe) -> None:
    assert not probe.failures, probe.failures[:5]
    assert probe.latencies, "no filter call was made"
    assert probe.worst_s < PROMPT_S, f"a filter call took {probe.worst_s:.3f} s ({probe.summary()})"


def assert_memory_bounded(rss: RssPeak) -> None:
    assert rss.growth < RSS_GROWTH_LIMIT, f"RSS {rss.before / MB:.0f} MB -> peak {rss.peak / MB:.0f} MB"
