"""The verb listener's HTTP/1.1 server: kube-scheduler's verbs answered on httptools' request parser.

kube-scheduler calls `filter` and `prioritize` for every pod it schedules, one call at a time, waiting
for each reply in its serial scheduling step, so the extender's CPU per call counts against the
scheduler's rate. A verb (`POST /filter`, `/prioritize`, `/preempt`) is therefore answered in place when
its request is complete: `verbs.answer` is pure CPU, and the reply goes out in one write with no task,
scope or ASGI message in between. A gang member the model has not seen yet waits on the event loop
(`VerbGateway.answer_when_seen`) and is answered when ready. Every other request (the probes, `/debug`,
the page, and the verbs too when a token check guards them) goes to the ASGI app the listener serves,
with its body already read.

Each connection (`extender.api.edge_connection`) reads its requests in order and answers them in order:
pipelined requests queue behind the one being answered, and reading pauses while `MAX_QUEUED_REQUESTS`
wait. Every request's body is read under `BodyLimits` (`Settings.max_body_bytes`,
`Settings.body_timeout_s`); every refusal is JSON (`extender.api.edge_encoding`): a verb's in the verb's
own reply shape (kube-scheduler decodes it), anything else as `{"error": ...}` with its status (400
malformed, 404 unknown path, 405 wrong method, 408 too slow, 413 too large, 503 over
`Settings.max_connections`). A connection beyond that limit has its first request read and answered with
a 503 and is then closed: the caller reads why, rather than a reset it cannot tell from a crash.
Keep-alive lasts `Settings.keep_alive_s`; `Expect: 100-continue` is answered before the body is read;
HTTP/1.0 closes after the reply unless it asked for keep-alive.

This module is the listener and its shutdown. `EdgeServer.serve` runs the app's ASGI lifespan
(`extender.api.edge_asgi`) around the listener. On `request_stop` it stops accepting, answers every
request already read (the ones waiting for the watch included), closes each connection after its last
reply, and waits up to `Settings.shutdown_grace_s` for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any

from starlette.types import ASGIApp

from extender.api import verbs
from extender.api.body import BodyLimits
from extender.api.edge_asgi import Lifespan, StartupFailed
from extender.api.edge_connection import EdgeConnection
from extender.config import Settings

__all__ = ["EdgeServer", "StartupFailed"]

log = logging.getLogger(__name__)


class EdgeServer:
    """The verb listener on `host`:`port` (0: any free port, `port` then says which), serving `app`;
    verbs are answered in place when `app` is the bare `VerbGateway` (no token check in front)."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        *,
        host: str,
        port: int,
        tls: ssl.SSLContext | None = None,
        access_log: bool = False,
    ) -> None:
        self.app = app
        self.gateway = app if isinstance(app, verbs.VerbGateway) else None
        self.settings = settings
        self.limits = BodyLimits.of(settings)
        self.host = host
        self.port = port
        self.tls = tls
        self.access_log = access_log
        self.connections: set[EdgeConnection] = set()
        self.stopping = False
        self.lifespan = Lifespan(app)
        self._stop: asyncio.Event | None = None
        self._all_closed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.started = False

    async def serve(self) -> None:
        """Serve until `request_stop`, then answer what was read and close (see the module's text)."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._all_closed = asyncio.Event()
        if self.stopping:
            return
        await self.lifespan.startup()
        try:
            server = await self._loop.create_server(
                lambda: EdgeConnection(self), self.host, self.port, ssl=self.tls, reuse_address=True
            )
            self.port = int(server.sockets[0].getsockname()[1])
            scheme = "https" if self.tls is not None else "http"
            log.info("serving the verbs on %s://%s:%d", scheme, self.host, self.port)
            self.started = True
            await self._stop.wait()
            server.close()
            await self._drain()
        finally:
            await self.lifespan.shutdown()

    @property
    def app_state(self) -> dict[str, Any]:
        """The state the app's lifespan set, copied into every request's scope."""
        return self.lifespan.state

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

    def connection_ended(self, connection: EdgeConnection) -> None:
        self.connections.discard(connection)
        if self.stopping and not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def _drain(self) -> None:
        assert self._all_closed is not None
        for connection in list(self.connections):
            connection.stop()
        if self.connections:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), self.settings.shutdown_grace_s)
        for connection in list(self.connections):
            log.warning("closing a connection still busy %g s after the stop", self.settings.shutdown_grace_s)
            connection.abort()
