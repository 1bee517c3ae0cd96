"""What the HTTP edge reads and writes: a request as read, a whole JSON reply, their bytes.

A `Request` is what a connection (`extender.api.edge.connection`) has read of one request: its line, its
headers, its whole body, or the `refusal` it gets instead. A `Reply` is a whole reply written in one go;
`error_for` gives a refusal the shape its caller decodes (a verb's own reply with its `Error`, since
kube-scheduler reads nothing else, or `{"error": ...}`). `response_head` encodes a status line and
headers with the connection's keep-alive. Nothing here reads a socket or knows the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus

import httptools
import orjson

from extender.api import verbs

VERB_PATHS = {f"/{verb}".encode(): verb for verb in verbs.HANDLERS}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
JSON = b"application/json"


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes
    close: bool = False
    """Close the connection after this reply (its input was not read to the end, or it is refused)."""
    headers: tuple[tuple[bytes, bytes], ...] = ()
    content_type: bytes = JSON


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
    content_length: bytes | None = None
    expect: bytes = b""
    parsed_path: bytes | None = None
    held: int = 0
    """Bytes this request holds while it waits for its reply (set once it is read whole)."""

    def path(self) -> bytes:
        """The target's path (parsed once; `httptools.HttpParserInvalidURLError` when it does not parse)."""
        if self.parsed_path is None:
            self.parsed_path = httptools.parse_url(self.target).path or b"/"
        return self.parsed_path

    def header(self, name: bytes) -> bytes | None:
        """The first value of header `name` (lower case)."""
        return next((value for key, value in self.headers if key == name), None)


def json_error(
    status: int, message: str, *, close: bool = False, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> Reply:
    return Reply(status, orjson.dumps({"error": message}), close=close, headers=headers)


def error_for(path: bytes, status: int, message: str) -> Reply:
    """A refusal in the shape the caller decodes, closing the connection: on a verb path the verb's own reply
    with its `Error` in a 200 (kube-scheduler reads nothing else), else `{"error"}` with `status`."""
    verb = VERB_PATHS.get(path)
    if verb is not None:
        return Reply(200, verbs.error_reply(verb, f"tfjob-extender {verb}: {message}"), close=True)
    return json_error(status, message, close=True)


REASONS = {status.value: status.phrase.encode() for status in HTTPStatus}
"""Each status code's reason phrase, as the status line gives it."""


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


def whole_reply(request: Request, reply: Reply, keep_alive: bool) -> bytes:
    """`reply` with its length, head and body in one piece (no body to a HEAD request)."""
    headers = [
        *reply.headers,
        (b"content-type", reply.content_type),
        (b"content-length", b"%d" % len(reply.body)),
    ]
    head = response_head(request.http_version, reply.status, headers, keep_alive)
    return head if request.method == b"HEAD" else head + reply.body
