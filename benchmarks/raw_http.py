"""HTTP/1.1 over a plain socket, as the attackers and the probes of the listeners speak it.

A request is written byte for byte and a reply read back whole, or the fact that none came is reported:
no client library stands in between to pool, retry, fix or refuse what the server must be shown to
handle. A connection may be opened from another loopback address (`source`, e.g. 127.0.0.2), so one
test can play two clients the server tells apart by address.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

import orjson

Address = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body decoded; asserts it was sent as JSON."""
        assert self.headers.get("content-type") == "application/json", (self.status, self.headers, self.body[:200])
        return orjson.loads(self.body)

    @property
    def closes(self) -> bool:
        """The server said it closes the connection after this reply."""
        return self.headers.get("connection", "").lower() == "close"


def request_bytes(
    method: str, path: str, body: bytes = b"", headers: Iterable[tuple[str, str]] = (), *, version: str = "1.1"
) -> bytes:
    lines = [f"{method} {path} HTTP/{version}", "host: extender", f"content-length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def connect(
    address: Address, *, source: str | None = None, timeout: float = 10.0, tls: ssl.SSLContext | None = None
) -> socket.socket:
    """A new connection to `address`, from the loopback address `source` when given, over `tls` when given."""
    sock = socket.create_connection(address, timeout=timeout, source_address=(source, 0) if source else None)
    return tls.wrap_socket(sock, server_hostname=address[0]) if tls is not None else sock


def read_reply(stream: IO[bytes], *, to_head: bool = False) -> Reply | None:
    """The next reply on `stream`, or None when the connection ended (closed or reset) before its status
    line. `to_head`: the reply answers a HEAD request (a length, but no body)."""
    try:
        status_line = stream.readline()
    except ConnectionResetError:
        return None
    if not status_line:
        return None
    version, _, rest = status_line.partition(b" ")
    assert version in (b"HTTP/1.1", b"HTTP/1.0"), status_line[:200]
    headers: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if to_head:
        body = b""
    elif "content-length" in headers:
        body = stream.read(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        body = read_chunked(stream)
    else:
        body = stream.read()
    return Reply(int(rest.split(b" ", 1)[0]), headers, body)


def read_chunked(stream: IO[bytes]) -> bytes:
    parts = []
    while size := int(stream.readline().split(b";", 1)[0], 16):
        parts.append(stream.read(size))
        stream.readline()
    while stream.readline() not in (b"\r\n", b""):
        pass
    return b"".join(parts)


def exchange(
    address: Address,
    data: bytes,
    *,
    source: str | None = None,
    timeout: float = 10.0,
    to_head: bool = False,
    tls: ssl.SSLContext | None = None,
) -> Reply | None:
    """Send `data` on a new connection and read one reply (None: the connection ended unanswered)."""
    with connect(address, source=source, timeout=timeout, tls=tls) as sock, sock.makefile("rb") as stream:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        return read_reply(stream, to_head=to_head)


def ended(stream: IO[bytes]) -> bool:
    """The server closed (or reset) the connection, with nothing more to read on it."""
    try:
        return stream.read(1) == b""
    except ConnectionResetError:
        return True
