"""Real listeners for the contract tests: the verb listener and an observe listener over one service, each on a
free loopback port, served by the HTTP edge on one event loop in a thread of its own, stopped after.

`ListenerClient` sends a POST to the verb listener and a GET to the observe listener, so a test speaks to
the extender as kube-scheduler and a person do, over real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import uvloop
from fastapi import APIRouter

from extender.api.auth import TokenChecks
from extender.api.edge.app_responder import AppResponder
from extender.api.edge.server import EdgeServer
from extender.api.edge.verb_responder import VerbResponder
from extender.api.observe import create_observe_app
from extender.api.verbs import Service

START_TIMEOUT_S = 10.0


@dataclass
class Listeners:
    verbs: EdgeServer
    observe: EdgeServer

    @property
    def verb_url(self) -> str:
        return f"{'https' if self.verbs.tls else 'http'}://127.0.0.1:{self.verbs.port}"

    @property
    def observe_url(self) -> str:
        return f"{'https' if self.observe.tls else 'http'}://127.0.0.1:{self.observe.port}"


def serve_in_thread(servers: Sequence[EdgeServer]) -> threading.Thread:
    """`servers` on one uvloop event loop in a daemon thread, once every one listens."""

    async def all_of_them() -> None:
        await asyncio.gather(*(server.serve() for server in servers))

    def run() -> None:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(all_of_them())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not all(server.started for server in servers):
        assert time.monotonic() < deadline and thread.is_alive(), "the listeners did not start"
        time.sleep(0.01)
    return thread


@contextlib.contextmanager
def running(servers: Sequence[EdgeServer]) -> Iterator[None]:
    """`servers` served while the block runs, then stopped (each answers what it has read)."""
    thread = serve_in_thread(servers)
    try:
        yield
    finally:
        for server in servers:
            server.request_stop_threadsafe()
        thread.join(START_TIMEOUT_S)
    assert not thread.is_alive(), "the listeners stopped"


def verb_server(service: Service, *, tokens: TokenChecks | None = None, **options: Any) -> EdgeServer:
    return EdgeServer(
        VerbResponder(service),
        service.settings.verb_limits,
        host="127.0.0.1",
        port=0,
        name="verbs",
        tokens=tokens,
        **options,
    )


def observe_server(service: Service, routers: Sequence[APIRouter] = (), *, debug_routes: bool = True) -> EdgeServer:
    app = create_observe_app(service, routers, debug_routes=debug_routes)
    return EdgeServer(
        AppResponder(app), service.settings.observe_limits, host="127.0.0.1", port=0, name="observe routes"
    )


@contextlib.contextmanager
def listening(service: Service, routers: Sequence[APIRouter] = (), **verb_options: Any) -> Iterator[Listeners]:
    """The verb listener and an observe listener with the debug routes over `service`."""
    listeners = Listeners(verb_server(service, **verb_options), observe_server(service, routers))
    with running([listeners.verbs, listeners.observe]):
        yield listeners


class ListenerClient:
    """A POST goes to the verb listener, a GET to the observe listener."""

    def __init__(self, listeners: Listeners) -> None:
        self.verbs = httpx.Client(base_url=listeners.verb_url, timeout=30)
        self.observe = httpx.Client(base_url=listeners.observe_url, timeout=30)

    def post(self, path: str, **options: Any) -> httpx.Response:
        return self.verbs.post(path, **options)

    def get(self, path: str, **options: Any) -> httpx.Response:
        return self.observe.get(path, **options)

    def close(self) -> None:
        self.verbs.close()
        self.observe.close()


@contextlib.contextmanager
def client_of(service: Service, routers: Sequence[APIRouter] = ()) -> Iterator[ListenerClient]:
    """A `ListenerClient` of real listeners over `service`."""
    with listening(service, routers) as listeners:
        client = ListenerClient(listeners)
        try:
            yield client
        finally:
            client.close()


def url_of(server: EdgeServer) -> str:
    return f"{'https' if server.tls else 'http'}://127.0.0.1:{server.port}"


@contextlib.contextmanager
def client_of_server(server: EdgeServer, **options: Any) -> Iterator[httpx.Client]:
    """`server` served while the block runs, and an HTTP client of it (`options` go to the client)."""
    with running([server]), httpx.Client(base_url=url_of(server), timeout=30, **options) as client:
        yield client
