"""What the verb listener's HTTP/1.1 server reads and writes: a request as read, a reply, their bytes.

A `Request` is what a connection (`extender.api.edge_connection`) has read of one request: its line, its
headers, its whole body, or the `refusal` it gets instead. A `Reply` is a whole JSON reply written in one
go; `error_for` gives a refusal the shape its caller decodes (a verb's own reply with its `Error`, since
kube-scheduler reads nothing else, or `{"error": ...}`). `response_head` encodes a status line and headers
with the connection's keep-alive; `StreamedReply` encodes the reply of the ASGI app as the app sends it:
with its length when the app gives the whole body at once, else chunked (HTTP/1.1) or closing the
connection after it (HTTP/1.0). Nothing here reads a socket or knows the event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httptools
import orjson
from starlette.types import Message

from extender.api import verbs

VERB_PATHS = {f"/{verb}".encode(): verb for verb in verbs.HANDLERS}
REASONS = {
    200: b"OK",
    400: b"Bad Request",
    404: b"Not Found",
    405: b"Method Not Allowed",
    408: b"Request Timeout",
    413: b"Content Too Large",
    500: b"Internal Server Error",
    503: b"Service Unavailable",
}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes
    close: bool = False
    """Close the connection after this reply (its input was not read to the end)."""
    headers: tuple[tuple[bytes, bytes], ...] = ()


@dataclass(slots=True)
class Request:
    method: bytes = b""
    target: bytes = b""
    http_version: str = "1.1"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    keep_alive: bool = True
    body: bytes = b""
    refusal: Reply | None = None
    """The reply when the request cannot be served as read (over the caps, too slow, over the limit)."""

    def path(self) -> bytes:
        return httptools.parse_url(self.target).path or b"/"


def error_for(path: bytes, status: int, message: str) -> Reply:
    """A refusal in the shape the caller decodes: a verb's own reply with its `Error`, else `{"error"}`."""
    verb = VERB_PATHS.get(path)
    if verb is not None:
        return Reply(status, verbs.error_reply(verb, f"tfjob-extender {verb}: {message}"), close=True)
    return Reply(status, orjson.dumps({"error": message}), close=True)


def response_head(http_version: str, status: int, headers: list[tuple[bytes, bytes]], keep_alive: bool) -> bytes:
    """The status line and headers of a reply to an HTTP/`http_version` request, with the connection's fate:
    `connection: close` when it ends after this reply, `connection: keep-alive` when HTTP/1.0 stays open."""
    lines = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b""))]
    lines.extend(b"%s: %s\r\n" % (name, value) for name, value in headers)
    if not keep_alive:
        lines.append(b"connection: close\r\n")
    elif http_version == "1.0":
        lines.append(b"connection: keep-alive\r\n")
    lines.append(b"\r\n")
    return b"".join(lines)


def whole_reply(http_version: str, reply: Reply, keep_alive: bool) -> bytes:
    """`reply` as JSON with its length, head and body in one piece."""
    headers = [
        *reply.headers,
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(reply.body)),
    ]
    return response_head(http_version, reply.status, headers, keep_alive) + reply.body


class StreamedReply:
    """The ASGI app's reply to `request`, written to `transport` as the app sends its messages: the head
    with the first body message, no body to a HEAD request."""

    def __init__(self, request: Request, transport: asyncio.Transport, keep_alive: bool) -> None:
        self.request = request
        self.transport = transport
        self.keep_alive = keep_alive
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
