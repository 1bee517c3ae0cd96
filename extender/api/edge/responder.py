"""What a listener of the HTTP edge serves: a `Responder` answers the requests its connections have read.

The connection (`extender.api.edge.connection`) reads a request under the listener's caps, lets its
door and token checks decide whether it is served, then asks the responder: `answer_now` gives the reply
when no waiting is needed (the verbs, the probes: pure CPU, one write, no task); otherwise
`answer_later` runs as a task on the event loop and writes through the `Outlet` it is handed, whole or
streamed, while the requests behind it on the connection wait. The verb listener's responder is
`extender.api.edge.verb_responder`, an observe listener's `extender.api.edge.app_responder`.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Protocol

from extender.api.edge.encoding import Reply, Request


class Outlet(Protocol):
    """Where a reply answered later goes: the connection's transport, with flow control."""

    request: Request
    transport: asyncio.Transport
    tls: ssl.SSLContext | None
    keep_alive: bool
    """The connection stays open after this reply, as far as the request and the listener go."""
    writable: asyncio.Event
    """Set while the client takes what is written (cleared while the transport's buffer is full)."""
    disconnected: asyncio.Event

    def write_whole(self, reply: Reply) -> None:
        """Write `reply` in one piece."""

    def ended(self, status: int, *, complete: bool, keep_alive: bool) -> None:
        """A streamed reply has ended (`complete`: its last byte written); the connection goes on or closes."""


class Responder(Protocol):
    """The requests one listener serves."""

    open_paths: frozenset[bytes]
    """Paths answered without a bearer token (the probes; on an observe listener also `/metrics`)."""

    def answer_now(self, request: Request) -> Reply | None:
        """The reply when it needs no waiting; None: `answer_later` answers it."""

    async def answer_later(self, request: Request, outlet: Outlet) -> None:
        """Answer `request` through `outlet` (every path answers: a failure is a JSON 500)."""
