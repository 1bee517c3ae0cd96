"""The fuzz payloads of `tests/fuzz` over real HTTP, at length, against `serve --cluster-snapshot`.

Writes the fuzz cluster to a snapshot file, starts `tfjob-extender serve --cluster-snapshot --observe-port P
--observe-debug` on it as a subprocess on 127.0.0.1 (the observe listener without a request rate limit),
plans every gang, records the known-good answers, then (the verbs to the verb listener, every other request
to the observe listener):
1. times the exhaustion cases one at a time (a quantity of `1e999999` in the topology view and in a
   filter pod, `1e5000` then `/debug/state`, a 64 MiB body of empty Node objects, 15 001 candidates);
2. sends `--requests` fuzzed payloads (seeded by `--seed`) on one keep-alive connection per listener,
   reconnecting when the server closes it;
3. checks: verb replies with `internal error` (and the server's own count of them), any 5xx, the
   known-good answers, the `/debug/state` dump loading back into an identical model, and the server's
   RSS growth from after the warm-up (VmRSS in /proc) to the end.
Prints the figures and exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import make_pod
from tests.fuzz.payloads import Request, comparable, extender_args, fuzz_cluster, known_good, payload, warm_up

READY_TIMEOUT_S = 120.0
RSS_GROWTH_LIMIT_MIB = 20.0
EXHAUSTION_LIMIT_S = 0.25
"""Each exhaustion case must be answered within this (seconds)."""
SIXTY_FOUR_MIB = 64 * 2**20
BODY_CHUNK_BYTES = 2**20
"""A body is written in chunks of this size; a server that refuses it early stops the writing."""


class Client:
    """One keep-alive HTTP/1.1 connection to the server, reopened when the server closes it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, request: Request) -> tuple[int, bytes]:
        if len(request.body) > BODY_CHUNK_BYTES:
            return self.send_large(request)
        for attempt in range(2):
            try:
                self.connection.request(request.method, request.path, body=request.body)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def send_large(self, request: Request) -> tuple[int, bytes]:
        """A large body on a connection of its own, chunk by chunk, stopping as soon as the server has
        answered (a server that refuses the body by its declared length never reads it)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.putrequest(request.method, request.path)
        connection.putheader("Content-Length", str(len(request.body)))
        connection.endheaders()
        assert connection.sock is not None
        connection.sock.settimeout(0.05)
        for offset in range(0, len(request.body), BODY_CHUNK_BYTES):
            try:
                connection.sock.sendall(request.body[offset : offset + BODY_CHUNK_BYTES])
            except (TimeoutError, OSError):
                break
        connection.sock.settimeout(30)
        response = connection.getresponse()
        status, body = response.status, response.read()
        connection.close()
        return status, body


class Listeners:
    """A client of each listener: a verb goes to the verb listener, anything else to the observe listener."""

    def __init__(self, port: int, observe_port: int) -> None:
        self.verbs = Client(port)
        self.observe = Client(observe_port)

    def send(self, request: Request) -> tuple[int, bytes]:
        return (self.verbs if request.verb is not None else self.observe).send(request)


def start_server(snapshot: Path, port: int, observe_port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "extender", "serve", "--cluster-snapshot", str(snapshot), "--port", str(port)]
    command += ["--observe-port", str(observe_port), "--observe-debug", "--observe-requests-per-s", "0"]
    server = subprocess.Popen(
        [*command, "--log-level", "error"], env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if all(Client(at).send(Request("GET", "/readyz"))[0] == 200 for at in (port, observe_port)):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the extender did not become ready")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS")


def exhaustion_cases() -> list[tuple[str, Request, str]]:
    """(what, request, what the reply must say)."""
    huge_pod = make_pod("huge", memory="1e999999")
    digits_pod = make_pod("digits", memory="1e5000")
    empty_nodes = b'{"Pod":{},"Nodes":{"items":[' + b"{}," * (SIXTY_FOUR_MIB // 3 - 20) + b'{}]},"NodeNames":null}'
    return [
        ("GET /debug/topology?memory=1e999999", Request("GET", "/debug/topology?memory=1e999999"), "exponent beyond"),
        ("filter, a pod asking for 1e999999 bytes", Request("POST", "/filter", extender_args(huge_pod)), "exponent"),
        ("filter, a pod asking for 1e5000 bytes", Request("POST", "/filter", extender_args(digits_pod)), "exponent"),
        ("GET /debug/state after that", Request("GET", "/debug/state"), '"kind":"List"'),
        ("64 MiB body of empty Node objects", Request("POST", "/filter", empty_nodes), "exceeds the limit"),
        ("15 001 candidate nodes", Request("POST", "/filter", extender_args(huge_pod, ["n"] * 15_001)), "at most"),
        (
            "100 001 empty objects in 300 KiB",
            Request("POST", "/filter", orjson.dumps({"Pod": {}, "Nodes": {"items": [{}] * 100_001}})),
            "objects and lists",
        ),
        (
            "a phase that is a list",
            Request("POST", "/filter", extender_args({**make_pod("odd", group="alpha"), "status": {"phase": [1]}})),
            "status.phase",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=18_931, help="the verb listener's port")
    parser.add_argument("--observe-port", type=int, default=18_932, help="the observe listener's port")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        snapshot = Path(folder) / "cluster.json"
        snapshot.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": fuzz_cluster()}))
        server = start_server(snapshot, args.port, args.observe_port)
        try:
            return run(server, Listeners(args.port, args.observe_port), args, Path(folder))
        finally:
            server.terminate()
            server.wait(timeout=30)


def run(server: subprocess.Popen[bytes], client: Listeners, args: argparse.Namespace, folder: Path) -> int:
    for request in warm_up():
        client.send(request)
    answers = [(request, comparable(request, client.send(request)[1])) for request in known_good()]
    failures: list[str] = []
    print("exhaustion cases (one request each):")
    for what, request, expected in exhaustion_cases():
        started = time.perf_counter()
        status, body = client.send(request)
        seconds = time.perf_counter() - started
        reply = body.decode(errors="replace")
        message = next((part for part in reply.split('"') if expected in part), reply[:100])
        print(f"  {what:45} {seconds * 1000:8.2f} ms  HTTP {status}  {message[:110]}")
        if seconds > EXHAUSTION_LIMIT_S or expected not in reply or status >= 500:
            failures.append(f"exhaustion case {what!r}: {seconds:.3f} s, HTTP {status}, {reply[:200]}")
    rng = random.Random(args.seed)
    for _ in range(2000):
        client.send(payload(rng))
    baseline = rss_mib(server.pid)
    counts = {"internal error": 0, "5xx": 0, "4xx": 0, "verb errors": 0}
    started = time.perf_counter()
    for _ in range(args.requests):
        request = payload(rng)
        status, body = client.send(request)
        counts["5xx"] += status >= 500
        counts["4xx"] += 400 <= status < 500
        if request.verb is not None and b"internal error" in body:
            counts["internal error"] += 1
        counts["verb errors"] += request.verb is not None and b'"Error":""' not in body and body != b"[]"
    elapsed = time.perf_counter() - started
    growth = rss_mib(server.pid) - baseline
    metrics = client.send(Request("GET", "/metrics"))[1].decode()
    logged = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("tfjob_extender_decisions_total") and 'outcome="error"' in line
    )
    changed = [request.path for request, reply in answers if comparable(request, client.send(request)[1]) != reply]
    round_trip = state_round_trips(client, folder)
    print(f"\n{args.requests} fuzzed requests in {elapsed:.1f} s ({args.requests / elapsed:.0f}/s), seed {args.seed}:")
    print(f"  internal errors in replies          {counts['internal error']}")
    print(f"  internal errors counted by /metrics {logged:.0f}")
    print(f"  5xx replies                         {counts['5xx']}")
    print(f"  4xx replies (debug routes)          {counts['4xx']}")
    print(f"  verb replies with an Error          {counts['verb errors']}")
    print(f"  known-good answers changed          {len(changed)} of {len(answers)} {changed or ''}")
    print(f"  /debug/state round trip identical   {round_trip}")
    print(f"  server RSS growth                   {growth:.1f} MiB (from {baseline:.1f} MiB)")
    if counts["internal error"] or logged or counts["5xx"] or changed or not round_trip:
        failures.append("the fuzz found internal errors, 5xx replies, changed answers or a broken round trip")
    if growth > RSS_GROWTH_LIMIT_MIB:
        failures.append(f"RSS grew {growth:.1f} MiB (limit {RSS_GROWTH_LIMIT_MIB})")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


def state_round_trips(client: Listeners, folder: Path) -> bool:
    """The dump, loaded into a fresh model and dumped again, is what the server dumped."""
    dump: Any = orjson.loads(client.send(Request("GET", "/debug/state"))[1])
    path = folder / "state.json"
    path.write_bytes(orjson.dumps(dump))
    loaded = ClusterState()
    load_snapshot_file(loaded, path)
    again = dump_state(loaded.snapshot())
    return bool(
        again["items"] == dump["items"]
        and again["tfjobExtender"]["reservations"] == dump["tfjobExtender"]["reservations"]
    )


if __name__ == "__main__":
    sys.exit(main())
