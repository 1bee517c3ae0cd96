"""The verb listener over a real socket: the server `serve` runs (`extender.api.edge`) on a free loopback port.

Keep-alive connections carrying verbs and probes in turn (the debug routes a JSON 404), pipelined requests
answered in order (a gang member waiting for the watch among them), `Expect: 100-continue`, HTTP/1.0, a
body over the cap, a body or a head that never finishes, malformed requests, unknown paths and wrong
methods, a burst over the connection limit, token checks and TLS, a stop with requests in flight, and a
process whose parts fail to start: every reply JSON, none cut.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import orjson
import pytest

from extender.api.app import make_service
from extender.api.auth import TokenChecks, tls_context, token_checks
from extender.api.edge.encoding import Request
from extender.api.edge.responder import Outlet
from extender.api.edge.server import EdgeServer
from extender.api.edge.verb_responder import VerbResponder
from extender.cli.runtime import Part, Runtime
from extender.config import AuthSettings, ListenerLimits, Settings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.certificates import self_signed_certificate
from tests.contract.listeners import running, verb_server
from tests.contract.support import NODES, gang_with_members_unseen

NOW = 1_800_000_000.0
BODY_CAP = 64 * 1024
SETTINGS = Settings(
    verb_limits=ListenerLimits(max_body_bytes=BODY_CAP, body_timeout_s=0.5, head_timeout_s=0.5, max_connections=4),
    model_catch_up_s=5.0,
)
PLAIN = {"metadata": {"name": "web", "namespace": "default", "uid": "web"}, "spec": {"containers": []}}


@dataclass
class Served:
    server: EdgeServer
    state: ClusterState
    pods: list[dict[str, Any]]

    @property
    def url(self) -> str:
        scheme = "https" if self.server.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.server.port}"

    def connect(self) -> Connection:
        return Connection(socket.create_connection(("127.0.0.1", self.server.port), timeout=10))


class Connection:
    """A raw client connection and the buffered stream its replies are read from, closed together."""

    def __init__(self, raw: socket.socket) -> None:
        self.raw = raw
        self.stream = raw.makefile("rb")

    def sendall(self, data: bytes) -> None:
        self.raw.sendall(data)

    def reply(self) -> RawReply:
        return read_reply(self.stream)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.stream.close()
        self.raw.close()


@contextlib.contextmanager
def serving(
    settings: Settings = SETTINGS, tokens: TokenChecks | None = None, tls: ssl.SSLContext | None = None
) -> Iterator[Served]:
    """The verb listener over a service of `settings`, on a free port in a thread, stopped after."""
    state, pods = gang_with_members_unseen(workers=2, unseen=1)
    server = verb_server(make_service(settings, state, lambda: NOW), tokens=tokens, tls=tls)
    with running([server]):
        yield Served(server, state, pods)


@pytest.fixture
def served() -> Iterator[Served]:
    with serving() as running:
        yield running


def filter_body(pod: dict[str, Any]) -> bytes:
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": NODES})


def request(path: str, body: bytes = b"", *, method: str = "POST", version: str = "1.1", extra: str = "") -> bytes:
    head = f"{method} {path} HTTP/{version}\r\nhost: x\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


@dataclass
class RawReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        assert self.headers["content-type"] == "application/json", self.headers
        return orjson.loads(self.body)


def read_reply(stream: BinaryIO) -> RawReply:
    """One HTTP reply from `stream`: as long as its content-length says, or to the end without one."""
    status_line = stream.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = stream.read(int(headers["content-length"])) if "content-length" in headers else stream.read()
    return RawReply(int(status_line.split()[1]), headers, body)


def test_verbs_and_probes_share_one_keep_alive_connection_and_are_answered_in_place(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered_later: list[bytes] = []
    later = VerbResponder.answer_later

    async def recording(self: VerbResponder, request: Request, outlet: Outlet) -> None:
        answered_later.append(request.path())
        await later(self, request, outlet)

    monkeypatch.setattr(VerbResponder, "answer_later", recording)
    connections: set[tuple[str, int]] = set()
    with httpx.Client(base_url=served.url) as client:
        for _ in range(3):
            reply = client.post("/filter", content=filter_body(PLAIN), extensions={})
            assert reply.status_code == 200
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["NodeNames"] == NODES
            assert client.get("/healthz").status_code == 200
            assert client.head("/readyz").status_code == 200
            scores = client.post("/prioritize", content=filter_body(served.pods[0]))
            assert isinstance(scores.json(), list)
            connections.add(scores.extensions["network_stream"].get_extra_info("client_addr"))
        assert client.post("/filter", content=b"{not json").json()["Error"].startswith("tfjob-extender filter")
        for path in ("/debug/gangs", "/debug/state", "/ui", "/metrics"):
            missing = client.get(path)
            assert missing.status_code == 404 and "the verb listener serves" in missing.json()["error"], path
        assert client.post("/filter", content=filter_body(PLAIN)).status_code == 200, "the connection goes on"
        connections.add(missing.extensions["network_stream"].get_extra_info("client_addr"))
    assert len(connections) == 1, "one keep-alive connection"
    assert answered_later == [], "the verbs and the probes are answered in place"


def test_unknown_paths_wrong_methods_and_malformed_requests_get_json_errors(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        missing = client.get("/no-such-route")
        assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
        wrong = client.get("/filter")
        assert wrong.status_code == 405 and "POST only" in wrong.json()["error"]
        assert wrong.headers["allow"] == "POST"
        assert client.post("/filter", content=filter_body(PLAIN)).status_code == 200, "the connection goes on"
    with served.connect() as raw:
        raw.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        reply = raw.reply()
        assert reply.status == 400 and "malformed HTTP request" in reply.json()["error"]
        assert reply.headers["connection"] == "close"


def test_a_body_over_the_cap_is_refused_with_json_and_the_connection_closed(served: Served) -> None:
    with httpx.Client(base_url=served.url) as client:
        reply = client.post("/filter", content=b" " * (BODY_CAP + 1))
        assert "exceeds the limit" in reply.json()["Error"]
        assert reply.headers.get("connection") == "close"
        other = client.post("/no-such-route", content=b" " * (BODY_CAP + 1))
        assert other.status_code == 413 and "exceeds the limit" in other.json()["error"]
        assert client.get("/healthz").status_code == 200, "a new connection is served"


def test_a_body_or_a_head_that_never_finishes_gets_a_json_error_after_the_time_limit(served: Served) -> None:
    with served.connect() as raw:
        raw.sendall(b"POST /filter HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
        reply = raw.reply()
        assert reply.status == 200
        assert "not received within 0.5 s" in reply.json()["Error"]
        assert reply.headers["connection"] == "close"
        assert raw.stream.read(1) == b"", "the connection is closed"
    with served.connect() as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        reply = raw.reply()
        assert reply.status == 408 and "request head not received within 0.5 s" in reply.json()["error"]


def test_a_gang_member_delivered_while_the_call_waits_is_planned_with_its_gang(served: Served) -> None:
    def watch_catches_up() -> None:
        time.sleep(0.2)
        served.state.apply(Kind.POD, "ADDED", served.pods[2])

    threading.Thread(target=watch_catches_up, daemon=True).start()
    with httpx.Client(base_url=served.url, timeout=10) as client:
        reply = client.post("/filter", content=filter_body(served.pods[2])).json()
        assert len(reply["NodeNames"]) == 1, reply
        assert client.get("/healthz").status_code == 200
    assert len(served.state.snapshot().reservations) == 3, "the whole gang is planned"


def test_pipelined_requests_are_answered_in_order_behind_a_waiting_gang_member(served: Served) -> None:
    def watch_catches_up() -> None:
        time.sleep(0.3)
        served.state.apply(Kind.POD, "ADDED", served.pods[2])

    threading.Thread(target=watch_catches_up, daemon=True).start()
    with served.connect() as raw:
        raw.sendall(
            request("/filter", filter_body(PLAIN))
            + request("/filter", filter_body(served.pods[2]))
            + request("/healthz", method="GET")
            + request("/prioritize", filter_body(served.pods[0]))
            + request("/filter", b"{broken")
        )
        stream = raw.stream
        replies = [read_reply(stream) for _ in range(5)]
    assert replies[0].json()["NodeNames"] == NODES
    assert len(replies[1].json()["NodeNames"]) == 1, "the gang member, once the watch delivered it"
    assert replies[2].json() == {"status": "ok"}
    assert isinstance(replies[3].json(), list)
    assert replies[4].json()["Error"].startswith("tfjob-extender filter")


def test_expect_100_continue_is_answered_before_the_body_and_refused_over_the_cap(served: Served) -> None:
    body = filter_body(PLAIN)
    with served.connect() as raw:
        raw.sendall(
            request("/filter", extra="expect: 100-continue\r\n").replace(b"length: 0", b"length: %d" % len(body))
        )
        stream = raw.stream
        assert stream.readline() == b"HTTP/1.1 100 Continue\r\n"
        assert stream.readline() == b"\r\n"
        raw.sendall(body)
        assert read_reply(stream).json()["NodeNames"] == NODES
    with served.connect() as raw:
        head = f"POST /filter HTTP/1.1\r\nhost: x\r\ncontent-length: {BODY_CAP + 1}\r\nexpect: 100-continue\r\n\r\n"
        raw.sendall(head.encode())
        reply = raw.reply()
        assert "exceeds the limit" in reply.json()["Error"], "refused without a 100 Continue"


def test_http_1_0_closes_after_the_reply_unless_it_asks_for_keep_alive(served: Served) -> None:
    with served.connect() as raw:
        raw.sendall(request("/filter", filter_body(PLAIN), version="1.0"))
        stream = raw.stream
        reply = read_reply(stream)
        assert reply.json()["NodeNames"] == NODES and reply.headers["connection"] == "close"
        assert stream.read(1) == b""
    with served.connect() as raw:
        stream = raw.stream
        for _ in range(2):
            raw.sendall(request("/filter", filter_body(PLAIN), version="1.0", extra="connection: keep-alive\r\n"))
            reply = read_reply(stream)
            assert reply.json()["NodeNames"] == NODES and reply.headers["connection"] == "keep-alive"
        raw.sendall(request("/healthz", method="GET", version="1.0"))
        assert read_reply(stream).status == 200
        assert stream.read(1) == b""


def test_connections_over_the_limit_get_a_json_503_and_the_ones_within_are_served(served: Served) -> None:
    limit = SETTINGS.verb_limits.max_connections
    within = [served.connect() for _ in range(limit)]
    try:
        for raw in within:
            raw.sendall(request("/healthz", method="GET"))
            assert raw.reply().status == 200
        burst = [served.connect() for _ in range(6)]
        for raw in burst:
            raw.sendall(request("/filter", filter_body(PLAIN)))
        for raw in burst:
            with raw:
                reply = raw.reply()
                assert reply.status == 200, "a verb's refusal is its own reply, with its Error"
                assert "over the limit of 4 connections" in reply.json()["Error"]
                assert reply.headers["connection"] == "close"
        with served.connect() as raw:
            raw.sendall(request("/healthz", method="GET"))
            reply = raw.reply()
            assert reply.status == 503 and "over the limit of 4 connections" in reply.json()["error"]
        for raw in within:
            raw.sendall(request("/filter", filter_body(PLAIN)))
            assert raw.reply().json()["NodeNames"] == NODES
    finally:
        for raw in within:
            raw.close()
    with httpx.Client(base_url=served.url) as client:
        assert client.post("/filter", content=filter_body(PLAIN)).status_code == 200, "room again"


def test_a_stop_answers_every_request_read_then_closes(served: Served) -> None:
    def watch_catches_up() -> None:
        time.sleep(0.5)
        served.state.apply(Kind.POD, "ADDED", served.pods[2])

    with served.connect() as raw, served.connect() as idle:
        raw.sendall(
            request("/filter", filter_body(served.pods[2]))
            + request("/filter", filter_body(PLAIN))
            + request("/healthz", method="GET")
        )
        time.sleep(0.2)
        served.server.request_stop_threadsafe()
        threading.Thread(target=watch_catches_up, daemon=True).start()
        stream = raw.stream
        waiting = read_reply(stream)
        assert len(waiting.json()["NodeNames"]) == 1, "the waiting gang member is answered after the stop"
        assert read_reply(stream).json()["NodeNames"] == NODES
        last = read_reply(stream)
        assert last.json() == {"status": "ok"} and last.headers["connection"] == "close"
        assert stream.read(1) == b""
        assert idle.stream.read(1) == b"", "an idle connection is closed at once"


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text("verb-secret\n")
    return path


def test_token_checks_guard_the_verbs_through_the_listener(token_file: Path) -> None:
    tokens = token_checks(AuthSettings(token_file=token_file), None)
    with serving(tokens=tokens) as listening, httpx.Client(base_url=listening.url) as client:
        refused = client.post("/filter", content=filter_body(PLAIN))
        assert refused.status_code == 401 and "bearer token" in refused.json()["error"]
        assert refused.headers["connection"] == "close"
        headers = {"Authorization": "Bearer verb-secret"}
        assert client.post("/filter", content=filter_body(PLAIN), headers=headers).json()["NodeNames"] == NODES
        assert (
            client.post("/filter", content=filter_body(PLAIN), headers={"Authorization": "Bearer no"}).status_code
            == 401
        )
        assert client.get("/healthz").status_code == 200, "the probes need no token"
        assert client.get("/debug/gangs", headers=headers).status_code == 404


def test_tls_and_client_certificates_on_the_verb_listener(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    auth = AuthSettings(tls_cert_file=cert, tls_key_file=key)
    with (
        serving(replace(SETTINGS, auth=auth), tls=tls_context(auth)) as listening,
        httpx.Client(base_url=listening.url, verify=ssl.create_default_context(cafile=str(cert))) as client,
    ):
        assert client.post("/filter", content=filter_body(PLAIN)).json()["NodeNames"] == NODES
        assert client.get("/healthz").status_code == 200
    with_client_ca = replace(auth, tls_client_ca_file=cert)
    trusting = ssl.create_default_context(cafile=str(cert))
    with serving(replace(SETTINGS, auth=with_client_ca), tls=tls_context(with_client_ca)) as listening:
        with pytest.raises(httpx.TransportError), httpx.Client(base_url=listening.url, verify=trusting) as client:
            client.get("/healthz")
        trusting.load_cert_chain(str(cert), str(key))
        with httpx.Client(base_url=listening.url, verify=trusting) as client:
            assert client.post("/filter", content=filter_body(PLAIN)).json()["NodeNames"] == NODES


def test_an_idle_connection_is_closed_after_the_keep_alive_time() -> None:
    with (
        serving(replace(SETTINGS, verb_limits=replace(SETTINGS.verb_limits, keep_alive_s=1))) as listening,
        listening.connect() as raw,
    ):
        raw.sendall(request("/filter", filter_body(PLAIN)))
        assert raw.reply().json()["NodeNames"] == NODES
        started = time.monotonic()
        assert raw.stream.read(1) == b""
        assert 0.8 < time.monotonic() - started < 5


def test_a_part_that_fails_to_start_stops_the_process_with_exit_code_3_and_nothing_listens() -> None:
    started: list[str] = []

    def fails() -> None:
        raise RuntimeError("the watches cannot start")

    server = EdgeServer(
        VerbResponder(make_service(SETTINGS, ClusterState(), lambda: NOW)),
        SETTINGS.verb_limits,
        host="127.0.0.1",
        port=0,
        name="verbs",
    )
    parts = [
        Part("plan publisher", lambda: started.append("publisher"), lambda: started.remove("publisher")),
        Part("informers", fails, lambda: started.append("informers stopped")),
    ]
    assert Runtime(parts, [server]).run() == 3
    assert started == [], "what started is stopped, what never started is not"
    assert not server.started
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()


def test_an_address_that_cannot_be_bound_stops_the_process_with_exit_code_1_before_any_part_starts() -> None:
    started: list[str] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = EdgeServer(
            VerbResponder(make_service(SETTINGS, ClusterState(), lambda: NOW)),
            SETTINGS.verb_limits,
            host="127.0.0.1",
            port=taken.getsockname()[1],
            name="verbs",
        )
        assert Runtime([Part("informers", lambda: started.append("informers"), lambda: None)], [server]).run() == 1
    assert started == [] and not server.started
