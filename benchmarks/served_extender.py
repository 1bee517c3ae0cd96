"""The extender as kube-scheduler and an attacker meet it: `tfjob-extender serve` in a process of its own.

`served_extender` starts `serve --cluster-snapshot` on free loopback ports — the verb listener, and the
observe listener on 127.0.0.1 unless `observe=False` — with the flags given, waits until both answer
`/healthz`, and stops it with SIGTERM afterwards. Its log goes to a file, so a flood of warnings cannot fill
a pipe and stall it. `RssPeak` follows the process's resident memory (VmRSS sampled every 20 ms, and VmHWM
for a peak between two samples). `FilterProbe` plays kube-scheduler: valid filter calls, each timed,
alternately on its keep-alive connection and on a new one.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Self

import orjson
import yaml

from benchmarks.raw_http import Address, Reply, connect, exchange, read_reply, request_bytes
from extender.devcluster.processes import free_port

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CLUSTER = REPO / "examples" / "cluster.yaml"
READY_TIMEOUT_S = 120.0
MB = 10**6


def serve_command(snapshot: Path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "extender", "serve", "--cluster-snapshot", str(snapshot), *flags]


@dataclass
class ServedExtender:
    process: subprocess.Popen[bytes]
    verb: Address
    observe: Address | None
    log: IO[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def address(self, listener: str) -> Address:
        """The address of the "verb" or the "observe" listener."""
        address = self.verb if listener == "verb" else self.observe
        assert address is not None, f"no {listener} listener"
        return address

    def memory(self, field: str = "VmRSS") -> int:
        """Bytes of the process's `field` in /proc/PID/status (VmRSS: resident now; VmHWM: its peak)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        raise LookupError(field)

    def log_text(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")


@contextlib.contextmanager
def served_extender(
    *flags: str,
    snapshot: Path = EXAMPLE_CLUSTER,
    observe: bool = True,
    host: str = "127.0.0.1",
    open_files: int | None = None,
    tls: ssl.SSLContext | None = None,
) -> Iterator[ServedExtender]:
    """`serve` on `snapshot` with `flags`, its verb listener on `host`, ready; `open_files` lowers its limit
    of open files once it runs (the attacks that exhaust them need not open thousands); `tls`: how to reach
    listeners that serve TLS (`flags` say which)."""
    verb_port = free_port()
    ports = ["--host", host, "--port", str(verb_port)]
    observe_port = free_port() if observe else None
    if observe_port is not None:
        ports += ["--observe-port", str(observe_port), "--observe-host", "127.0.0.1"]
    with tempfile.TemporaryFile() as log:
        command = serve_command(snapshot, *ports, "--log-level", "warning", *flags)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        served = ServedExtender(
            process, ("127.0.0.1", verb_port), ("127.0.0.1", observe_port) if observe_port else None, log
        )
        try:
            if open_files is not None:
                resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (open_files, open_files))
            wait_until_ready(served, tls)
            yield served
        finally:
            stop(process)


def wait_until_ready(served: ServedExtender, tls: ssl.SSLContext | None) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    for address in (served.verb, served.observe):
        while address is not None:
            if served.process.poll() is not None:
                raise RuntimeError(f"serve exited with {served.process.returncode}:\n{served.log_text()}")
            try:
                reply = exchange(address, request_bytes("GET", "/healthz"), timeout=2, tls=tls)
                if reply is not None and reply.status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not answer /healthz on {address}:\n{served.log_text()}")
            time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


class RssPeak:
    """The resident memory of `served` before, at its peak during, and the growth over a `with` block."""

    def __init__(self, served: ServedExtender, interval_s: float = 0.02) -> None:
        self.served, self.interval_s = served, interval_s
        self.before = self.peak = self._high_water_before = 0
        self._ending = threading.Event()
        self._sampler = threading.Thread(target=self._sample, name="rss", daemon=True)

    @property
    def growth(self) -> int:
        return self.peak - self.before

    def _sample(self) -> None:
        while not self._ending.wait(self.interval_s):
            with contextlib.suppress(OSError, LookupError):
                self.peak = max(self.peak, self.served.memory())

    def __enter__(self) -> Self:
        self.before = self.peak = self.served.memory()
        self._high_water_before = self.served.memory("VmHWM")
        self._sampler.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._ending.set()
        self._sampler.join()
        with contextlib.suppress(OSError, LookupError):
            self.peak = max(self.peak, self.served.memory())
            high_water = self.served.memory("VmHWM")
            if high_water > self._high_water_before:
                self.peak = max(self.peak, high_water)


def example_filter_body() -> bytes:
    """A valid filter call on the example cluster: a member of the gang `bert` on its three nodes."""
    items = yaml.safe_load(EXAMPLE_CLUSTER.read_text())["items"]
    pod = next(item for item in items if item["metadata"]["name"] == "bert-worker-0")
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["node-0", "node-1", "node-2"]})


class FilterProbe:
    """kube-scheduler's side of the verb listener: valid filter calls, alternately on one keep-alive
    connection (reopened if the server closed it) and on a new one, the first at once and then every
    `interval_s` while in a `with` block; each call's seconds and each failure kept."""

    def __init__(
        self,
        address: Address,
        *,
        headers: Iterable[tuple[str, str]] = (),
        interval_s: float = 0.05,
        timeout_s: float = 10.0,
        source: str | None = None,
    ) -> None:
        self.address, self.interval_s, self.timeout_s, self.source = address, interval_s, timeout_s, source
        self.request = request_bytes("POST", "/filter", example_filter_body(), headers)
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._kept: tuple[socket.socket, IO[bytes]] | None = None
        self._ending = threading.Event()
        self._caller = threading.Thread(target=self._call_until_ended, name="filter-probe", daemon=True)

    @property
    def worst_s(self) -> float:
        return max(self.latencies, default=float("inf"))

    def call(self, *, fresh: bool) -> float:
        """One filter call's round trip, seconds; raises AssertionError on a wrong or missing reply."""
        started = time.perf_counter()
        reply = self._on_new_connection() if fresh else self._on_kept_connection()
        elapsed = time.perf_counter() - started
        assert reply is not None, "the connection ended unanswered"
        assert reply.status == 200 and reply.json()["Error"] == "", (reply.status, reply.body[:300])
        return elapsed

    def _on_new_connection(self) -> Reply | None:
        return exchange(self.address, self.request, source=self.source, timeout=self.timeout_s)

    def _on_kept_connection(self) -> Reply | None:
        for _ in range(2):
            if self._kept is None:
                sock = connect(self.address, source=self.source, timeout=self.timeout_s)
                self._kept = (sock, sock.makefile("rb"))
            sock, stream = self._kept
            try:
                sock.sendall(self.request)
                reply = read_reply(stream)
            except (BrokenPipeError, ConnectionResetError):
                reply = None
            if reply is not None and not reply.closes:
                return reply
            self.close()
            if reply is not None:
                return reply
        return None

    def close(self) -> None:
        """Close the keep-alive connection (a `with` block does, at its end)."""
        if self._kept is not None:
            sock, stream = self._kept
            stream.close()
            sock.close()
            self._kept = None

    def _call_until_ended(self) -> None:
        fresh = False
        while True:
            try:
                self.latencies.append(self.call(fresh=fresh))
            except (AssertionError, OSError) as error:
                self.failures.append(f"{'new' if fresh else 'kept'} connection: {error!r}")
            fresh = not fresh
            if self._ending.wait(self.interval_s):
                return

    def summary(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "calls": len(ordered),
            "worst_ms": round(ordered[-1] * 1000, 1) if ordered else None,
            "failures": len(self.failures),
        }

    def __enter__(self) -> Self:
        self._caller.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._ending.set()
        self._caller.join()
        self.close()
