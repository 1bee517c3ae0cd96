"""The real informer against a scripted API server on 127.0.0.1: list, watch, 410, 404, reconnects."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import orjson
import pytest
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


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


def run(server: FakeApiServer, recorder: Recorder, types: tuple[ResourceType, ...]) -> Iterator[Informers]:
    informers = Informers(server.api_client(), recorder, timings=FAST, resource_types=types, jitter=lambda: 0.5)
    informers.start()
    try:
        yield informers
    finally:
        started = time.monotonic()
        informers.stop()
        assert time.monotonic() - started < 5


def test_list_pages_then_watch_events_in_order(recorder: Recorder) -> None:
    watches = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal watches
        if "watch" not in query:
            if "continue" not in query:
                return 200, listing([node("a", "1"), node("b", "2")], "", token="page2")
            return 200, listing([node("c", "3")], "10")
        watches += 1
        if watches == 1:
            assert query["resourceVersion"] == ["10"]
            return 200, events(
                {"type": "ADDED", "object": node("d", "11")},
                {"type": "MODIFIED", "object": node("a", "12")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}},
                {"type": "DELETED", "object": node("b", "21")},
            )
        return 200, []

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("DELETED", Kind.NODE, "b") in recorder.snapshot())
            wait_for(lambda: len([r for r in server.requests if "watch" in r[1]]) >= 2)
            # The first list feeds the model page by page, one object at a time.
            assert recorder.snapshot()[:7] == [
                ("ADDED", Kind.NODE, "a"),
                ("ADDED", Kind.NODE, "b"),
                ("ADDED", Kind.NODE, "c"),
                ("synced", Kind.NODE, None),
                ("ADDED", Kind.NODE, "d"),
                ("MODIFIED", Kind.NODE, "a"),
                ("DELETED", Kind.NODE, "b"),
            ]
            second_watch = [q for _, q in server.requests if "watch" in q][1]
            assert second_watch["resourceVersion"] == ["21"], "a normal watch end resumes from the last version"


def test_an_expired_resource_version_relists_instead_of_resuming(recorder: Recorder) -> None:
    lists = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal lists
        if "watch" not in query:
            lists += 1
            return 200, listing([node(f"gen{lists}", str(lists * 100))], str(lists * 100))
        if query["resourceVersion"] == ["100"]:
            return 200, events({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}})
        return 200, []

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("replace", Kind.NODE, ["gen2"]) in recorder.snapshot())
            wait_for(lambda: any(q.get("resourceVersion") == ["200"] for _, q in server.requests if "watch" in q))


def test_an_http_410_on_watch_also_relists(recorder: Recorder) -> None:
    lists = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal lists
        if "watch" not in query:
            lists += 1
            return 200, listing([node(f"gen{lists}", "1")], str(lists))
        return (410, [b"{}"]) if query["resourceVersion"] == ["1"] else (200, [])

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("replace", Kind.NODE, ["gen2"]) in recorder.snapshot())


def test_a_failing_server_is_retried_with_backoff(recorder: Recorder) -> None:
    attempts = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal attempts
        if "watch" not in query:
            attempts += 1
            if attempts < 3:
                return 500, [b'{"message": "etcd unavailable"}']
            return 200, listing([node("a", "1")], "1")
        return 200, []

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("synced", Kind.NODE, None) in recorder.snapshot())
            assert attempts == 3
            calls = recorder.snapshot()
            assert calls.index(("unsynced", Kind.NODE, None)) < calls.index(("synced", Kind.NODE, None))


def test_an_absent_optional_kind_counts_as_synced_and_empty(recorder: Recorder) -> None:
    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        return 404, [b'{"kind": "Status", "code": 404}']

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (TFJOBS,)):
            wait_for(lambda: ("synced", Kind.TFJOB, None) in recorder.snapshot())
            assert recorder.snapshot()[0] == ("replace", Kind.TFJOB, [])
            wait_for(lambda: len(server.requests) >= 2)
