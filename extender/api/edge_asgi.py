"""The ASGI side of the verb listener's HTTP/1.1 server: the app's lifespan and what one request hands it.

The server (`extender.api.edge`) runs the app's lifespan around its listener: `Lifespan.startup` before it
listens, `Lifespan.shutdown` after its last connection closed; a failed phase raises `StartupFailed`. The
state the app sets in the lifespan is copied into each request's scope. A request the connection does
not answer in place goes to the app with its body already read: `http_scope` describes it, and
`body_receiver` hands the app that body in one message, then `http.disconnect` once the client has gone.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import httptools
from starlette.types import ASGIApp, Message, Scope

from extender.api.edge_encoding import Request

ASGI_VERSION = {"version": "3.0", "spec_version": "2.4"}


class StartupFailed(RuntimeError):
    """The app's lifespan startup (or shutdown) failed; the message says how."""


class Lifespan:
    """The ASGI lifespan protocol around the server: startup before it listens, shutdown after it stops."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.outbox: asyncio.Queue[Message] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": ASGI_VERSION, "state": self.state}

        async def run() -> None:
            await self.app(scope, self.inbox.get, self.outbox.put)

        self.task = asyncio.get_running_loop().create_task(run())
        await self._exchange("startup")

    async def shutdown(self) -> None:
        if self.task is not None and not self.task.done():
            await self._exchange("shutdown")
            await self.task

    async def _exchange(self, phase: str) -> None:
        assert self.task is not None
        await self.inbox.put({"type": f"lifespan.{phase}"})
        answer = asyncio.ensure_future(self.outbox.get())
        await asyncio.wait({answer, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if not answer.done():
            answer.cancel()
            self.task.result()
            raise StartupFailed(f"the application ended during lifespan {phase}")
        message = answer.result()
        if message["type"] == f"lifespan.{phase}.failed":
            raise StartupFailed(f"lifespan {phase} failed: {message.get('message', '')}")


def http_scope(
    request: Request, transport: asyncio.Transport, tls: ssl.SSLContext | None, state: dict[str, Any]
) -> Scope:
    """The ASGI `http` scope of `request`, read on `transport` (over TLS when `tls` is given), with a copy
    of the lifespan's `state`."""
    url = httptools.parse_url(request.target)
    raw_path = url.path or b"/"
    server = transport.get_extra_info("sockname")
    client = transport.get_extra_info("peername")
    return {
        "type": "http",
        "asgi": ASGI_VERSION,
        "http_version": request.http_version,
        "server": tuple(server[:2]) if server else None,
        "client": tuple(client[:2]) if client else None,
        "scheme": "https" if tls is not None else "http",
        "method": request.method.decode("ascii"),
        "root_path": "",
        "path": urllib.parse.unquote(raw_path.decode("ascii", errors="replace")),
        "raw_path": raw_path,
        "query_string": url.query or b"",
        "headers": request.headers,
        "state": dict(state),
    }


def body_receiver(body: bytes, disconnected: asyncio.Event) -> Callable[[], Awaitable[Message]]:
    """The app's `receive`: the whole `body` first, then `http.disconnect` once `disconnected` is set."""
    body_given = False

    async def receive() -> Message:
        nonlocal body_given
        if not body_given:
            body_given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    return receive
