"""The verbs over a real socket, served by the protocol that answers them in place.

The same uvicorn server `serve` runs (httptools, uvloop, `protocol_for`), on a free loopback port in a
thread: keep-alive connections carrying verbs and debug routes in turn, a body over the cap, a body that
never finishes, and a gang member the watch delivers while the call waits — each answered with JSON.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from extender.api.app import create_app, make_service
from extender.api.verb_protocol import protocol_for
from extender.api.verbs import VerbGateway
from extender.config import Settings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, in_scheduling_group, make_k8s_podgroup, make_node, make_tfjob, tfjob_pods

NODES = ["node-0", "node-1", "node-2"]
NOW = 1_800_000_000.0
BODY_CAP = 64 * 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def gang_with_one_member_unseen() -> tuple[ClusterState, list[dict[str, Any]]]:
    pods = in_scheduling_group(tfjob_pods("mnist", ps=1, workers=2, cpu="1", memory="2Gi"), "mnist")
    state = cluster(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *pods[:2],
        make_k8s_podgroup("mnist", min_count=3),
        make_tfjob("mnist", workers=2),
    )
    return state, pods


@pytest.fixture
def served() -> Iterator[tuple[str, ClusterState, list[dict[str, Any]]]]:
    state, pods = gang_with_one_member_unseen()
    settings = Settings(max_body_bytes=BODY_CAP, body_timeout_s=0.5, model_catch_up_s=5.0)
    app = create_app(make_service(settings, state, lambda: NOW))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=protocol_for(app), loop="uvloop", log_level="error")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", state, pods
    server.should_exit = True
    thread.join(10)


def filter_body(pod: dict[str, Any]) -> bytes:
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": NODES})


def test_verbs_and_debug_routes_share_one_keep_alive_connection(
    served: tuple[str, ClusterState, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _, pods = served
    through_asgi: list[str] = []
    asgi_entry = VerbGateway.__call__

    async def recording(self: VerbGateway, scope: Scope, receive: Receive, send: Send) -> None:
        through_asgi.append(scope["path"])
        await asgi_entry(self, scope, receive, send)

    monkeypatch.setattr(VerbGateway, "__call__", recording)
    plain = {"metadata": {"name": "web", "namespace": "default", "uid": "web"}, "spec": {"containers": []}}
    with httpx.Client(base_url=url) as client:
        for _ in range(3):
            reply = client.post("/filter", content=filter_body(plain))
            assert reply.status_code == 200
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["NodeNames"] == NODES
            assert client.get("/healthz").status_code == 200
            scores = client.post("/prioritize", content=filter_body(pods[0]))
            assert isinstance(scores.json(), list)
        assert client.post("/filter", content=b"{not json").json()["Error"].startswith("tfjob-extender filter")
    assert through_asgi == ["/healthz"] * 3, "the verbs are answered in place"


def test_a_body_over_the_cap_is_refused_with_json_and_the_connection_closed(
    served: tuple[str, ClusterState, list[dict[str, Any]]],
) -> None:
    url, _, _ = served
    with httpx.Client(base_url=url) as client:
        reply = client.post("/filter", content=b" " * (BODY_CAP + 1))
        assert "exceeds the limit" in reply.json()["Error"]
        assert reply.headers.get("connection") == "close"
        assert client.get("/healthz").status_code == 200, "a new connection is served"


def test_a_body_that_never_finishes_gets_a_json_error_after_the_time_limit(
    served: tuple[str, ClusterState, list[dict[str, Any]]],
) -> None:
    url, _, _ = served
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        raw.sendall(b"POST /filter HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
        received = b""
        while chunk := raw.recv(4096):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert "not received within 0.5 s" in orjson.loads(body)["Error"]


def test_a_gang_member_delivered_while_the_call_waits_is_planned_with_its_gang(
    served: tuple[str, ClusterState, list[dict[str, Any]]],
) -> None:
    url, state, pods = served

    def watch_catches_up() -> None:
        time.sleep(0.2)
        state.apply(Kind.POD, "ADDED", pods[2])

    threading.Thread(target=watch_catches_up, daemon=True).start()
    with httpx.Client(base_url=url, timeout=10) as client:
        reply = client.post("/filter", content=filter_body(pods[2])).json()
        assert len(reply["NodeNames"]) == 1, reply
        assert client.get("/healthz").status_code == 200
    assert len(state.snapshot().reservations) == 3, "the whole gang is planned"
