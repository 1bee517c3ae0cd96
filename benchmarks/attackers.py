"""Attackers of the extender's HTTP listeners: one for each way a client was seen to exhaust them.

| attack                  | what it does                                                          | aimed at        |
|-------------------------|-----------------------------------------------------------------------|-----------------|
| `header_flood`          | a request head of endless small header lines, connection after another | observe, verbs |
| `growing_header_line`   | one header line that never ends, connection after another             | observe         |
| `SlowClients`           | connections that send nothing, and heads sent one byte a second       | observe, verbs  |
| `long_url`              | a request line whose target never ends                                | verbs           |
| `PipelinedFilters`      | filter calls of 15 000 unknown candidates, pipelined, replies unread  | verbs           |
| `probe_routes`          | the debug routes, the page, explain, metrics, the schema, no credential | verbs         |

An attacker runs in threads of the calling process from `start()` until its budget is spent or `stop()`,
and keeps an `Outcome`: connections opened, bytes the server took, the replies it got (by status, with
the first of each) and the connections the server ended without a reply. Tests run them beside
their probes; the benchmarks run each in a process of its own (`python -m benchmarks.attackers ATTACK
--port P --seconds S --nice N` prints its outcome as one JSON line at the end or on SIGTERM). They are
cheap on CPU, so they measure the server rather than themselves: payloads are built once and sent in
64 KiB `sendall`s, and every wait is on a socket, a selector or an event, never a busy loop.
"""

from __future__ import annotations

import argparse
import io
import os
import selectors
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import orjson

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.raw_http import Address, Reply, exchange, read_reply, request_bytes

MiB = 2**20
CHUNK_BYTES = 64 * 1024
SEND_TIMEOUT_S = 2.0
"""A send the server takes nothing of for this long ends the attempt (the server stopped reading)."""
REPLY_TIMEOUT_S = 2.0
"""How long an attacker waits for the reply once it stops sending."""
PLAIN_POD = {"metadata": {"name": "web", "namespace": "default", "uid": "web"}, "spec": {"containers": []}}
ROUTES_OFF_THE_VERB_LISTENER = ("/debug/state", "/ui", "/debug/explain/default/bert", "/metrics", "/openapi.json")
"""Routes served, if at all, by the observe listener only."""


@dataclass
class Outcome:
    connections: int = 0
    """Connections opened (or attempted, for `SlowClients`)."""
    bytes_sent: int = 0
    """Bytes the server's side took."""
    statuses: Counter[int] = field(default_factory=Counter)
    first_replies: dict[int, Reply] = field(default_factory=dict)
    """The first reply of each status."""
    unanswered: int = 0
    """Connections the server ended without a reply."""
    close_delays_s: list[float] = field(default_factory=list)
    """Seconds from a connection's start (`SlowClients`: its establishment) to its end by the server."""
    still_open: int = 0
    """Connections the server had not ended when the attacker stopped."""
    idle_at_end_s: float = 0.0
    """Seconds the server had taken no byte for when the attacker stopped (`PipelinedFilters`)."""

    def record(self, reply: Reply | None) -> None:
        if reply is None:
            self.unanswered += 1
            return
        self.statuses[reply.status] += 1
        self.first_replies.setdefault(reply.status, reply)

    def summary(self) -> dict[str, Any]:
        delays = sorted(self.close_delays_s)
        return {
            "connections": self.connections,
            "mib_sent": round(self.bytes_sent / MiB, 2),
            "statuses": {str(status): count for status, count in sorted(self.statuses.items())},
            "bodies": {
                str(status): reply.body[:160].decode("utf-8", "replace") for status, reply in self.first_replies.items()
            },
            "unanswered": self.unanswered,
            "closed_by_server": len(delays),
            "longest_close_delay_s": round(delays[-1], 2) if delays else None,
            "still_open": self.still_open,
            "idle_at_end_s": round(self.idle_at_end_s, 2),
        }


class Attacker:
    """Threads that attack until their budget is spent or `stop()`; `outcome` is theirs while they run."""

    def __init__(self) -> None:
        self.outcome = Outcome()
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def workers(self) -> list[Callable[[], None]]:
        raise NotImplementedError

    def start(self) -> Self:
        for number, work in enumerate(self.workers()):
            thread = threading.Thread(target=work, name=f"{type(self).__name__}-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def done(self) -> bool:
        return not any(thread.is_alive() for thread in self._threads)

    def stop(self, timeout_s: float = 10.0) -> Outcome:
        self.stopping.set()
        for thread in self._threads:
            thread.join(timeout_s)
        return self.outcome

    def run_for(self, seconds: float) -> Outcome:
        """Start, attack for `seconds` or until the budget is spent, then stop."""
        self.start()
        deadline = time.monotonic() + seconds
        while not self.done() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


class EndlessHead(Attacker):
    """`parallel` connections, each writing `opening` then `chunk` after `chunk` — a request head that never
    ends — until the server refuses (ends the connection or stops taking bytes), then reading its reply;
    with `reconnect`, a new connection takes over, until `budget_bytes` (None: no end) are sent."""

    def __init__(
        self,
        address: Address,
        opening: bytes,
        chunk: bytes,
        *,
        budget_bytes: int | None,
        parallel: int = 1,
        reconnect: bool = True,
        source: str | None = None,
    ) -> None:
        super().__init__()
        self.address, self.opening, self.chunk = address, opening, chunk
        self.budget_left = budget_bytes
        self.parallel, self.reconnect, self.source = parallel, reconnect, source

    def workers(self) -> list[Callable[[], None]]:
        return [self._attack] * self.parallel

    def _take(self, wanted: int) -> int:
        """Bytes of the budget granted for the next write."""
        with self.lock:
            if self.budget_left is None:
                return wanted
            granted = min(wanted, self.budget_left)
            self.budget_left -= granted
            return granted

    def _attack(self) -> None:
        while not self.stopping.is_set():
            try:
                sock = socket.create_connection(self.address, SEND_TIMEOUT_S, self._source_address())
            except OSError:
                self.stopping.wait(0.05)
                continue
            with sock, sock.makefile("rb") as stream:
                with self.lock:
                    self.outcome.connections += 1
                spent = self._send_until_refused(sock)
                if self.stopping.is_set():
                    return
                sock.settimeout(REPLY_TIMEOUT_S)
                try:
                    reply = read_reply(stream)
                except (TimeoutError, OSError):
                    reply = None
                with self.lock:
                    self.outcome.record(reply)
            if spent or not self.reconnect:
                return

    def _source_address(self) -> tuple[str, int] | None:
        return (self.source, 0) if self.source else None

    def _send_until_refused(self, sock: socket.socket) -> bool:
        """Write the head until the server refuses it or the attack ends; True once the budget is spent."""
        payload = self.opening
        while not self.stopping.is_set():
            granted = self._take(len(payload))
            if not granted:
                return True
            try:
                sock.sendall(payload[:granted])
            except (TimeoutError, OSError):
                return False
            with self.lock:
                self.outcome.bytes_sent += granted
            payload = self.chunk
        return False


def header_flood(
    address: Address,
    *,
    method: str = "GET",
    path: str = "/metrics",
    budget_bytes: int | None = 100 * MiB,
    parallel: int = 2,
    source: str | None = None,
) -> EndlessHead:
    """Small header lines (`x-flood-N: v`, 20 bytes each), as many as the server takes, connection after
    connection, until `budget_bytes` are sent."""
    opening = f"{method} {path} HTTP/1.1\r\nhost: extender\r\ncontent-length: 0\r\n".encode()
    lines = b"".join(b"x-flood-%05d: v\r\n" % (number % 100_000) for number in range(CHUNK_BYTES // 19))
    return EndlessHead(
        address, opening, lines[:CHUNK_BYTES], budget_bytes=budget_bytes, parallel=parallel, source=source
    )


def growing_header_line(
    address: Address, *, path: str = "/metrics", parallel: int = 2, source: str | None = None
) -> EndlessHead:
    """One header line that grows for as long as the server takes its bytes, connection after connection."""
    opening = f"GET {path} HTTP/1.1\r\nhost: extender\r\nx-growing: ".encode()
    return EndlessHead(address, opening, b"a" * CHUNK_BYTES, budget_bytes=None, parallel=parallel, source=source)


def long_url(address: Address, *, budget_bytes: int = 85 * MiB, source: str | None = None) -> EndlessHead:
    """One request line whose target grows to `budget_bytes` (a query string on `/healthz`), if taken."""
    opening = b"GET /healthz?q="
    chunk = b"a" * CHUNK_BYTES
    return EndlessHead(address, opening, chunk, budget_bytes=budget_bytes, reconnect=False, source=source)


@dataclass
class Held:
    """One connection `SlowClients` holds."""

    sock: socket.socket
    slow: bool
    connected_at: float | None = None
    trickled: int = 0
    """Bytes of the slow head's trickle sent."""
    received: bytes = b""


class SlowClients(Attacker):
    """`idle` connections that send nothing, and `slow` ones that send the request line of `method` `path`
    once established, then the rest of a head that never ends one byte every `byte_interval_s`; all held by
    one thread on a selector (non-blocking connects: those the server has not accepted wait in its
    backlog). A connection the server ends is recorded (its reply, if any, and how long after its
    establishment); with `reopen`, another takes its place."""

    def __init__(
        self,
        address: Address,
        *,
        idle: int,
        slow: int = 0,
        byte_interval_s: float = 1.0,
        reopen: bool = False,
        source: str | None = None,
        method: str = "GET",
        path: str = "/metrics",
    ) -> None:
        super().__init__()
        self.address, self.source, self.reopen = address, source, reopen
        self.idle, self.slow, self.byte_interval_s = idle, slow, byte_interval_s
        self.request_line = f"{method} {path} HTTP/1.1\r\n".encode()
        self.trickle = b"host: extender\r\nx-slow: "
        self.selector = selectors.DefaultSelector()

    def workers(self) -> list[Callable[[], None]]:
        return [self._hold]

    def open_now(self) -> int:
        """Connections established and not yet ended by the server."""
        with self.lock:
            return sum(1 for key in self.selector.get_map().values() if key.data.connected_at is not None)

    def _open(self, slow: bool) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        if self.source:
            sock.bind((self.source, 0))
        sock.connect_ex(self.address)
        with self.lock:
            self.selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, Held(sock, slow))
            self.outcome.connections += 1

    def _hold(self) -> None:
        for number in range(self.idle + self.slow):
            self._open(slow=number >= self.idle)
        next_byte = time.monotonic() + self.byte_interval_s
        while not self.stopping.is_set():
            for key, events in self.selector.select(timeout=min(0.2, max(0.0, next_byte - time.monotonic()))):
                self._event(key.data, events)
            if time.monotonic() >= next_byte:
                next_byte += self.byte_interval_s
                self._send_a_byte_each()
        with self.lock:
            held = [key.data for key in self.selector.get_map().values()]
            self.outcome.still_open = sum(1 for each in held if each.connected_at is not None)
        for each in held:
            self.selector.unregister(each.sock)
            each.sock.close()

    def _event(self, held: Held, events: int) -> None:
        if held.connected_at is None:
            if held.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self._end(held, connected=False)
                return
            held.connected_at = time.monotonic()
            with self.lock:
                self.selector.modify(held.sock, selectors.EVENT_READ, held)
            if held.slow:
                self._send(held, self.request_line)
            return
        if events & selectors.EVENT_READ:
            try:
                data = held.sock.recv(CHUNK_BYTES)
            except OSError:
                data = b""
            if data:
                held.received += data
            else:
                self._end(held, connected=True)

    def _end(self, held: Held, *, connected: bool) -> None:
        with self.lock:
            self.selector.unregister(held.sock)
            if connected and held.connected_at is not None:
                self.outcome.close_delays_s.append(time.monotonic() - held.connected_at)
                self.outcome.record(read_reply(io.BytesIO(held.received)) if held.received else None)
        held.sock.close()
        if self.reopen and not self.stopping.is_set():
            self._open(held.slow)

    def _send_a_byte_each(self) -> None:
        with self.lock:
            slow = [key.data for key in self.selector.get_map().values() if key.data.slow and key.data.connected_at]
        for held in slow:
            self._send(held, self.trickle[held.trickled : held.trickled + 1] or b"a")
            held.trickled += 1

    def _send(self, held: Held, data: bytes) -> None:
        """Write `data` if the socket takes it now; a connection the server ended shows as read EOF."""
        try:
            taken = held.sock.send(data)
        except OSError:
            return
        with self.lock:
            self.outcome.bytes_sent += taken


def filter_call(candidates: int) -> bytes:
    """A filter call of a plain pod on `candidates` node names the model has never seen."""
    names = [f"unknown-node-{number:05d}" for number in range(candidates)]
    body = orjson.dumps({"Pod": PLAIN_POD, "Nodes": None, "NodeNames": names})
    return request_bytes("POST", "/filter", body, [("content-type", "application/json")])


class PipelinedFilters(Attacker):
    """One connection that writes `count` filter calls of `candidates` unknown names back to back and never
    reads a reply; its receive buffer is small, so the replies back up into the server. The connection is
    held open until `stop()`."""

    def __init__(
        self, address: Address, *, count: int = 1000, candidates: int = 15_000, source: str | None = None
    ) -> None:
        super().__init__()
        self.address, self.count, self.source = address, count, source
        self.request = filter_call(candidates)

    def workers(self) -> list[Callable[[], None]]:
        return [self._pipeline]

    def _pipeline(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, CHUNK_BYTES)
        if self.source:
            sock.bind((self.source, 0))
        sock.settimeout(0.25)
        with sock:
            sock.connect(self.address)
            with self.lock:
                self.outcome.connections += 1
            view, total, sent = memoryview(self.request), self.count * len(self.request), 0
            last_progress = time.monotonic()
            while sent < total and not self.stopping.is_set():
                offset = sent % len(self.request)
                try:
                    taken = sock.send(view[offset : offset + CHUNK_BYTES])
                except TimeoutError:
                    continue
                except OSError:
                    break
                sent += taken
                last_progress = time.monotonic()
                with self.lock:
                    self.outcome.bytes_sent = sent
            self.stopping.wait()
            self.outcome.idle_at_end_s = time.monotonic() - last_progress


def probe_routes(
    address: Address, paths: Iterable[str], *, method: str = "GET", headers: Iterable[tuple[str, str]] = ()
) -> dict[str, Reply | None]:
    """Each of `paths` asked on a new connection with no credential but `headers`."""
    fixed = list(headers)
    return {path: exchange(address, request_bytes(method, path, headers=fixed)) for path in paths}


def calls_without_credentials(address: Address) -> dict[str, Reply | None]:
    """What a stranger who reaches the verb listener asks first: a filter call and the whole model."""
    filter_body = orjson.dumps({"Pod": PLAIN_POD, "Nodes": None, "NodeNames": ["node-0"]})
    return {
        "/filter": exchange(address, request_bytes("POST", "/filter", filter_body)),
        "/debug/state": exchange(address, request_bytes("GET", "/debug/state")),
    }


def budget(args: argparse.Namespace) -> int | None:
    """`--budget-mib` in bytes; 0 or less: no end."""
    return args.budget_mib * MiB if args.budget_mib > 0 else None


ATTACKS: dict[str, Callable[[Address, argparse.Namespace], Attacker]] = {
    "header-flood": lambda address, args: header_flood(address, budget_bytes=budget(args)),
    "growing-header-line": lambda address, _: growing_header_line(address),
    "slow-clients": lambda address, args: SlowClients(address, idle=args.idle, slow=args.slow, reopen=True),
    "verb-header-flood": lambda address, args: header_flood(
        address, method="POST", path="/filter", budget_bytes=budget(args)
    ),
    "long-url": lambda address, args: long_url(address, budget_bytes=args.budget_mib * MiB),
    "pipelined-filters": lambda address, args: PipelinedFilters(address, count=args.count),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("attack", choices=sorted(ATTACKS))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=10.0, help="attack for at most this long")
    parser.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority by this much")
    parser.add_argument("--budget-mib", type=int, default=100, help="MiB to send (floods, long-url; 0: no end)")
    parser.add_argument("--idle", type=int, default=512, help="idle connections held (slow-clients)")
    parser.add_argument("--slow", type=int, default=128, help="one-byte-a-second connections held (slow-clients)")
    parser.add_argument("--count", type=int, default=1000, help="pipelined calls (pipelined-filters)")
    args = parser.parse_args()
    os.nice(args.nice)
    ending = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: ending.set())
    attacker = ATTACKS[args.attack]((args.host, args.port), args).start()
    deadline = time.monotonic() + args.seconds
    while not ending.is_set() and not attacker.done() and time.monotonic() < deadline:
        ending.wait(0.1)
    print(orjson.dumps(attacker.stop().summary()).decode(), flush=True)


if __name__ == "__main__":
    main()
