"""A listener of the HTTP edge: our own HTTP/1.1 server over httptools' request parser, on the event loop.

kube-scheduler calls `filter` and `prioritize` for every pod it schedules, one call at a time, waiting
for each reply in its serial scheduling step, so the extender's CPU per call counts against the
scheduler's rate: the verb listener answers a verb in place, in the callback that read its last byte
(`extender.api.edge.verb_responder`). An observe listener serves its read-only app the same way, through
`extender.api.edge.app_responder`. Both are bounded the same way against any client that reaches them
(`docs/hostile-input.md`): the listener's `Door` decides who is served and accepts new connections at its
rate — this server accepts them itself (`sock_accept`, then `connect_accepted_socket`), so that past the
rate they wait in the kernel's backlog rather than cost the event loop — and each connection
(`extender.api.edge.connection`) caps what it reads and holds.

On `request_stop` the listener stops accepting, answers every request already read (the ones waiting
for the watch included), closes each connection after its last reply, and waits up to `shutdown_grace_s`
for that before it closes what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from typing import cast

from extender.api.auth import TokenChecks
from extender.api.edge.connection import EdgeConnection
from extender.api.edge.door import Door
from extender.api.edge.reading import ReadingConnection
from extender.api.edge.responder import Responder
from extender.config import ListenerLimits

log = logging.getLogger(__name__)


class EdgeServer:
    """One listener on `host`:`port` (0: any free port; `port` then says which), serving `responder` under
    `limits`, with TLS when `tls` is given and bearer tokens when `tokens` are."""

    def __init__(
        self,
        responder: Responder,
        limits: ListenerLimits,
        *,
        host: str,
        port: int,
        name: str,
        tls: ssl.SSLContext | None = None,
        tokens: TokenChecks | None = None,
        shutdown_grace_s: float = 15.0,
        access_log: bool = False,
    ) -> None:
        self.responder = responder
        self.limits = limits
        self.host = host
        self.port = port
        self.name = name
        self.tls = tls
        self.tokens = tokens
        self.shutdown_grace_s = shutdown_grace_s
        self.access_log = access_log
        client_certificates = tls is not None and tls.verify_mode == ssl.CERT_REQUIRED
        self.door = Door(limits, authenticates=tokens is not None or client_certificates)
        self.connections: set[EdgeConnection] = set()
        self.handshakes: set[asyncio.Task[None]] = set()
        self.stopping = False
        self.started = False
        self._stop: asyncio.Event | None = None
        self._all_closed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self) -> socket.socket:
        """The listening socket (an `OSError` when the address cannot be bound)."""
        listening = socket.create_server((self.host, self.port))
        listening.setblocking(False)
        self.port = int(listening.getsockname()[1])
        return listening

    async def serve(self, listening: socket.socket | None = None) -> None:
        """Serve until `request_stop`, then answer what was read and close (see the module's text)."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._all_closed = asyncio.Event()
        if self.stopping:
            return
        listening = listening or self.bind()
        accepting = self._loop.create_task(self._accept(listening))
        scheme = "https" if self.tls is not None else "http"
        log.info("serving the %s on %s://%s:%d", self.name, scheme, self.host, self.port)
        self.started = True
        try:
            await self._stop.wait()
        finally:
            accepting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await accepting
            listening.close()
        await self._drain()

    async def _accept(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            wait = self.door.accepts.wait()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            try:
                accepted, _ = await loop.sock_accept(listening)
            except OSError as error:
                log.warning("accepting a connection on the %s listener failed: %s", self.name, error)
                await asyncio.sleep(0.1)
                continue
            if self.tls is None:
                await self._connect(accepted)
            elif len(self.handshakes) >= self.limits.max_connections + self.limits.overflow_replies:
                accepted.close()
            else:
                handshake = loop.create_task(self._connect(accepted))
                self.handshakes.add(handshake)
                handshake.add_done_callback(self.handshakes.discard)

    async def _connect(self, accepted: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(
                lambda: self._connection(loop),
                accepted,
                ssl=self.tls,
                ssl_handshake_timeout=self.limits.first_byte_timeout_s if self.tls is not None else None,
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as error:
            log.debug("a connection to the %s listener ended before it was served: %s", self.name, error)
            accepted.close()

    def _connection(self, loop: asyncio.AbstractEventLoop) -> EdgeConnection:
        return EdgeConnection(self, loop)

    def connection_began(self, connection: ReadingConnection) -> None:
        """`connection` is made (its TLS handshake, if any, done): it counts until it ends."""
        self.connections.add(cast(EdgeConnection, connection))

    def request_stop(self) -> None:
        """Stop accepting, answer what was read, then close (callable from the server's loop, or before it runs)."""
        self.stopping = True
        if self._stop is not None:
            self._stop.set()

    def request_stop_threadsafe(self) -> None:
        """`request_stop` from another thread (a server that has ended already stays ended)."""
        self.stopping = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.request_stop)

    def force_stop(self) -> None:
        """Close every connection now, answered or not (a second stop signal)."""
        self.request_stop()
        for connection in list(self.connections):
            connection.abort()

    def connection_ended(self, connection: ReadingConnection) -> None:
        self.connections.discard(cast(EdgeConnection, connection))
        if self.stopping and not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def _drain(self) -> None:
        assert self._all_closed is not None
        for connection in list(self.connections):
            connection.stop()
        if self.connections:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), self.shutdown_grace_s)
        for connection in list(self.connections):
            log.warning("closing a connection still busy %g s after the stop", self.shutdown_grace_s)
            connection.abort()
