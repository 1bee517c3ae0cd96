"""SIGTERM in the middle of a burst: `tfjob-extender serve --cluster-snapshot examples/cluster.yaml` as a process.

Several keep-alive connections call `filter` back to back; one connection carries a gang member the model
has not seen (it waits for the watch) with more requests pipelined behind it. SIGTERM arrives mid-burst:
every request the server read gets a whole JSON reply, the last one on each connection says
`connection: close`, no reply is cut, the process exits 0, and both listeners (the verbs' and the observe
listener beside them) refuse new connections.
"""

from __future__ import annotations

import copy
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import orjson
import yaml

EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"
NODES = ["node-0", "node-1", "node-2"]
BURST_CONNECTIONS = 6


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def example_pod(name: str) -> dict[str, Any]:
    items = yaml.safe_load(EXAMPLE.read_text())["items"]
    pod: dict[str, Any] = next(item for item in items if item["metadata"]["name"] == name)
    return pod


def call(pod: dict[str, Any]) -> bytes:
    body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": NODES})
    return b"POST /filter HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


class Cut(AssertionError):
    """A reply that began but did not arrive whole, or was not JSON."""


def read_reply(stream: BinaryIO) -> tuple[dict[str, str], Any] | None:
    """(headers, decoded JSON body) of the next reply, or None when the connection closed before any of it."""
    try:
        status = stream.readline()
    except ConnectionResetError:
        return None
    if not status:
        return None
    if not status.startswith(b"HTTP/1.1 200 "):
        raise Cut(f"status line {status!r}")
    headers: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    if line == b"" or headers.get("content-type") != "application/json":
        raise Cut(f"headers {headers}")
    body = stream.read(int(headers["content-length"]))
    if len(body) != int(headers["content-length"]):
        raise Cut(f"{len(body)} of {headers['content-length']} bytes")
    return headers, orjson.loads(body)


@dataclass
class Caller:
    """One keep-alive connection calling `filter` back to back until the server closes it."""

    port: int
    pod: dict[str, Any]
    answered: int = 0
    closed_with_notice: bool = False
    problems: list[str] = field(default_factory=list)

    def run(self) -> None:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=30) as raw, raw.makefile("rb") as stream:
                while True:
                    try:
                        raw.sendall(call(self.pod))
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    reply = read_reply(stream)
                    if reply is None:
                        return
                    headers, body = reply
                    if body.get("Error") != "":
                        self.problems.append(f"error reply {body}")
                    self.answered += 1
                    if headers.get("connection") == "close":
                        self.closed_with_notice = True
                        return
        except Cut as cut:
            self.problems.append(f"cut: {cut}")


def test_sigterm_mid_burst_answers_every_request_read_and_cuts_none() -> None:
    port, observe_port = free_port(), free_port()
    command = [sys.executable, "-m", "extender", "serve", "--cluster-snapshot", str(EXAMPLE), "--port", str(port)]
    command += ["--observe-host", "127.0.0.1", "--observe-port", str(observe_port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None and time.monotonic() < deadline, "the extender did not start"
            try:
                ready = [httpx.get(f"http://127.0.0.1:{at}/readyz").status_code for at in (port, observe_port)]
                if ready == [200, 200]:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        unseen = copy.deepcopy(example_pod("bert-worker-0"))
        unseen["metadata"] |= {"name": "bert-worker-9", "uid": "uid-not-seen-yet"}
        plain = example_pod("bert-ps-0")
        callers = [Caller(port, plain) for _ in range(BURST_CONNECTIONS)]
        threads = [threading.Thread(target=caller.run) for caller in callers]
        for thread in threads:
            thread.start()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=30) as waiting,
            waiting.makefile("rb") as stream,
        ):
            waiting.sendall(call(unseen) + call(plain) + call(plain))
            time.sleep(0.2)
            server.send_signal(signal.SIGTERM)
            replies = [read_reply(stream) for _ in range(3)]
            assert all(reply is not None for reply in replies), "every pipelined request read is answered"
            assert replies[-1] is not None and replies[-1][0]["connection"] == "close"
            assert stream.read(1) == b""
        for thread in threads:
            thread.join(30)
        assert server.wait(timeout=30) == 0
        for caller in callers:
            assert not caller.problems, caller.problems
        assert sum(caller.answered for caller in callers) > 0
        for stopped in (port, observe_port):
            refused = False
            try:
                socket.create_connection(("127.0.0.1", stopped), timeout=5).close()
            except ConnectionRefusedError:
                refused = True
            assert refused, "both listeners stopped on the one signal"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        assert server.stderr is not None
        errors = server.stderr.read()
        server.stderr.close()
    assert "Traceback" not in errors, errors
