"""A scripted API server on 127.0.0.1 and a recorder of what informers feed: for the informer tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import orjson
from kubernetes import client

from extender.k8s.informer import Informers, InformerTimings
from extender.state.feed import EventType
from extender.state.kinds import BY_KIND, Kind, ResourceType

NODES = BY_KIND[Kind.NODE]
TFJOBS = BY_KIND[Kind.TFJOB]
FAST = InformerTimings(
    list_page_size=2,
    watch_timeout_s=5,
    read_timeout_s=1.0,
    backoff_initial_s=0.05,
    backoff_max_s=0.1,
    missing_kind_recheck_s=0.2,
)


class Recorder:
    """A ModelFeed that records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Kind, Any]] = []
        self.lock = threading.Lock()

    def replace(self, kind: Kind, objects: Sequence[Mapping[str, Any]]) -> None:
        with self.lock:
            self.calls.append(("replace", kind, sorted(o["metadata"]["name"] for o in objects)))

    def apply(self, kind: Kind, event_type: EventType, obj: Mapping[str, Any]) -> None:
        with self.lock:
            self.calls.append((event_type, kind, obj["metadata"]["name"]))

    def mark_synced(self, kind: Kind) -> None:
        with self.lock:
            self.calls.append(("synced", kind, None))

    def mark_unsynced(self, kind: Kind) -> None:
        with self.lock:
            self.calls.append(("unsynced", kind, None))

    def snapshot(self) -> list[tuple[str, Kind, Any]]:
        with self.lock:
            return list(self.calls)


def node(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}}


Script = Callable[[str, dict[str, list[str]]], tuple[int, list[bytes]]]


class FakeApiServer:
    """Answers GETs from `script(path, query) -> (status, body chunks)`; records each request."""

    def __init__(self, script: Script) -> None:
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = parse_qs(url.query)
                outer.requests.append((url.path, query))
                status, chunks = script(url.path, query)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def api_client(self) -> client.ApiClient:
        configuration = client.Configuration()
        configuration.host = f"http://127.0.0.1:{self.server.server_address[1]}"
        return client.ApiClient(configuration)


def events(*docs: dict[str, Any]) -> list[bytes]:
    return [orjson.dumps(doc) + b"\n" for doc in docs]


def listing(items: list[dict[str, Any]], version: str, token: str = "") -> list[bytes]:
    return [orjson.dumps({"items": items, "metadata": {"resourceVersion": version, "continue": token}})]


def wait_for(condition: Callable[[], bool], timeout_s: float = 4.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def run(server: FakeApiServer, recorder: Recorder, types: tuple[ResourceType, ...]) -> Iterator[Informers]:
    informers = Informers(server.api_client(), recorder, timings=FAST, resource_types=types, jitter=lambda: 0.5)
    informers.start()
    try:
        yield informers
    finally:
        started = time.monotonic()
        informers.stop()
        assert time.monotonic() - started < 5
