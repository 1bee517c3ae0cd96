"""What an observe listener serves: its read-only app (FastAPI), one request at a time per connection.

The connection has read the request whole, under the listener's caps, and checked its token: the app
gets an ASGI `http` scope (`http_scope`), the body in one message (`body_receiver`), and its reply is
written as it sends it (`StreamedReply`): with its length when the app gives the whole body at once, else
chunked (HTTP/1.1) or ending with the connection (HTTP/1.0). After each piece of body the app waits until
the client takes what was written, so a client that does not read holds one transport buffer, not the
document. The app's lifespan is not run here: the process's runtime (`extender.cli.runtime`) starts and
stops what the app reads.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import httptools
from starlette.types import ASGIApp, Message, Scope

from extender.api.auth import OBSERVE_OPEN_PATHS
from extender.api.edge.encoding import Reply, Request, json_error, response_head
from extender.api.edge.responder import Outlet

log = logging.getLogger(__name__)

ASGI_VERSION = {"version": "3.0", "spec_version": "2.4"}
LAST_CHUNK = b"0\r\n\r\n"


class AppResponder:
    """An ASGI app as a listener's responder: every request is answered on the event loop."""

    open_paths = OBSERVE_OPEN_PATHS

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state: dict[str, Any] = {}

    def answer_now(self, request: Request) -> Reply | None:
        return None

    async def answer_later(self, request: Request, outlet: Outlet) -> None:
        reply = StreamedReply(request, outlet)

        async def send(message: Message) -> None:
            if not outlet.disconnected.is_set() and reply.feed(message):
                await outlet.writable.wait()

        scope = http_scope(request, outlet.transport, outlet.tls, self.state)
        try:
            await self.app(scope, body_receiver(request.body, outlet.disconnected), send)
        except Exception:
            if not reply.head_written:
                raise
            log.exception("%s %r failed after its reply began", request.method.decode("latin-1"), request.target[:200])
            outlet.ended(reply.status, complete=False, keep_alive=False)
            return
        if not reply.head_written:
            outlet.write_whole(json_error(500, "the application sent no reply"))
            return
        outlet.ended(reply.status, complete=reply.finished, keep_alive=reply.keep_alive)


class StreamedReply:
    """The app's reply to `request`, written to the outlet's transport as the app sends its messages: the
    head with the first body message, no body to a HEAD request."""

    def __init__(self, request: Request, outlet: Outlet) -> None:
        self.request = request
        self.transport = outlet.transport
        self.keep_alive = outlet.keep_alive
        """The connection stays open after this reply (False once a streamed HTTP/1.0 body must end it)."""
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_written = False
        self.finished = False
        """The app sent its last body message."""
        self.chunked = False

    def feed(self, message: Message) -> bool:
        """Take one message the app sends; True when it wrote body bytes (the sender then waits until the
        transport takes more)."""
        if self.finished:
            return False
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = list(message.get("headers", []))
            return False
        if message["type"] != "http.response.body":
            return False
        body: bytes = message.get("body", b"")
        more = bool(message.get("more_body", False))
        if not self.head_written:
            self._write_head(body, more)
        if self.request.method != b"HEAD":
            if self.chunked and body:
                self.transport.write(b"%x\r\n%s\r\n" % (len(body), body))
            elif not self.chunked:
                self.transport.write(body)
        if not more:
            self.finished = True
            if self.chunked and self.request.method != b"HEAD":
                self.transport.write(LAST_CHUNK)
        return True

    def _write_head(self, first_body: bytes, more: bool) -> None:
        self.head_written = True
        if not any(name.lower() == b"content-length" for name, _ in self.headers):
            if not more:
                self.headers.append((b"content-length", b"%d" % len(first_body)))
            elif self.request.http_version == "1.1":
                self.chunked = True
                self.headers.append((b"transfer-encoding", b"chunked"))
            else:
                self.keep_alive = False
        self.transport.write(response_head(self.request.http_version, self.status, self.headers, self.keep_alive))


def http_scope(
    request: Request, transport: asyncio.Transport, tls: ssl.SSLContext | None, state: dict[str, Any]
) -> Scope:
    """The ASGI `http` scope of `request`, read on `transport` (over TLS when `tls` is given), with a copy
    of the app's `state`."""
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
