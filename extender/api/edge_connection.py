"""One connection of the verb listener's HTTP/1.1 server: an `asyncio.Protocol` over httptools' parser.

The connection parses its requests (httptools' callbacks), reading each body under `BodyLimits`, and
queues them; it answers them in that order, one at a time. A verb is answered in place when its request
is complete (`verbs.answer`, pure CPU, one write); a gang member the model has not seen yet, and every
request for the ASGI app, is answered by a task on the event loop while the requests behind it wait.
Reading pauses while `MAX_QUEUED_REQUESTS` wait. A request refused while it is read (malformed, too
large, too slow) gets its JSON refusal in turn and nothing more is read. The server that accepted the
connection (`ConnectionHost`, in practice `extender.api.edge.EdgeServer`) gives the settings, the app, and
whether it is stopping; on `stop` the connection answers what it has read and closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, cast

import httptools
import orjson
from starlette.types import ASGIApp, Message

from extender.api import verbs
from extender.api.body import BodyLimits, BodyTooLarge
from extender.api.edge_asgi import body_receiver, http_scope
from extender.api.edge_encoding import (
    CONTINUE,
    VERB_PATHS,
    Reply,
    Request,
    StreamedReply,
    error_for,
    whole_reply,
)
from extender.config import Settings

log = logging.getLogger(__name__)

MAX_QUEUED_REQUESTS = 8
"""Requests read ahead of their replies on one connection (pipelined) before the connection stops reading."""


class ConnectionHost(Protocol):
    """What a connection reads and tells of the server that accepted it."""

    app: ASGIApp
    gateway: verbs.VerbGateway | None
    """The verbs' gateway when verbs are answered in place (no token check in front of them)."""
    settings: Settings
    limits: BodyLimits
    tls: ssl.SSLContext | None
    access_log: bool
    stopping: bool
    connections: set[EdgeConnection]

    @property
    def app_state(self) -> dict[str, Any]:
        """The state the app's lifespan set, which every request's scope carries a copy of."""
        ...

    def connection_ended(self, connection: EdgeConnection) -> None: ...


class EdgeConnection(asyncio.Protocol):
    """One client connection: parse, queue, answer in order (see the module's text)."""

    def __init__(self, server: ConnectionHost) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.limits = server.limits
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.queue: deque[Request] = deque()
        self.current: Request | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.busy = False
        """The head of the queue is being answered on the event loop (a task)."""
        self.reading = True
        self.input_done = False
        """Nothing more is read on this connection (a refusal left its input unread, or the server stops)."""
        self.closed = False
        self.over_limit = False
        self.continue_owed = False
        self.timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.disconnected = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.server.connections.add(self)
        self.over_limit = len(self.server.connections) > self.server.settings.verb_limits.max_connections
        if self.server.stopping:
            self.abort()
            return
        self._idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timer()
        self.server.connection_ended(self)
        self.disconnected.set()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def data_received(self, data: bytes) -> None:
        if self.input_done or self.closed:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self.current is None:
                self._stop_reading()
            else:
                self._refuse_input(Reply(400, orjson.dumps({"error": "CONNECT is not served"}), close=True))
        except httptools.HttpParserError as error:
            self._refuse_input(Reply(400, orjson.dumps({"error": f"malformed HTTP request: {error}"}), close=True))
        if self.server.stopping and self.current is None:
            self._stop_reading()
        self._advance()

    # httptools' parser callbacks

    def on_message_begin(self) -> None:
        if self.input_done:
            return
        self._cancel_timer()
        self.current = Request()
        self.chunks = []
        self.size = 0
        self.timer = self._call_later(self.limits.timeout_s, self._read_timed_out)

    def on_url(self, url: bytes) -> None:
        if self.current is not None:
            self.current.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.current is not None:
            self.current.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        request = self.current
        if request is None:
            return
        request.method = self.parser.get_method()
        request.http_version = self.parser.get_http_version()
        request.keep_alive = self.parser.should_keep_alive()
        headers = dict(request.headers)
        try:
            self.limits.check_declared(headers.get(b"content-length"))
        except BodyTooLarge as error:
            self._refuse_current(413, str(error))
            return
        if headers.get(b"expect", b"").lower() == b"100-continue":
            self.continue_owed = True
            self._send_continue()

    def on_body(self, body: bytes) -> None:
        if self.current is None or self.current.refusal is not None:
            return
        self.size += len(body)
        try:
            self.limits.check_read(self.size)
        except BodyTooLarge as error:
            self._refuse_current(413, str(error))
            return
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        request = self.current
        if request is None or request.refusal is not None:
            return
        self._cancel_timer()
        self.continue_owed = False
        request.body = b"".join(self.chunks)
        self.chunks = []
        self.current = None
        self.queue.append(request)
        if len(self.queue) >= MAX_QUEUED_REQUESTS:
            self._pause_reading()

    # answering, in order

    def _advance(self) -> None:
        """Answer the queued requests in order: in place where possible; a task for the rest, one at a time."""
        while self.queue and not self.busy and not self.closed:
            request = self.queue[0]
            reply = self._answer_in_place(request)
            if reply is None:
                self.busy = True
                self.task = self.loop.create_task(self._answer_later(request))
                return
            self._write(request, reply)
            self.queue.popleft()
        if self.closed or self.busy:
            return
        if self.continue_owed:
            self._send_continue()
        if not self.reading and not self.input_done:
            self._resume_reading()
        if self.current is None:
            if self.server.stopping:
                self._close()
            else:
                self._idle()

    def _answer_in_place(self, request: Request) -> Reply | None:
        """The reply when it needs no waiting; None: answer it on the event loop (`_answer_later`)."""
        if request.refusal is not None:
            return request.refusal
        try:
            path = request.path()
        except httptools.HttpParserInvalidURLError:
            return Reply(400, orjson.dumps({"error": f"malformed request target {request.target[:200]!r}"}))
        if self.over_limit:
            limit = self.server.settings.verb_limits.max_connections
            return error_for(path, 503, f"over the limit of {limit} connections served at once; try again")
        verb = VERB_PATHS.get(path)
        if verb is not None and request.method != b"POST":
            message = f"{request.method.decode('latin-1')} /{verb}: the extender verbs take POST only"
            return Reply(405, orjson.dumps({"error": message}), headers=((b"allow", b"POST"),))
        gateway = self.server.gateway
        if verb is None or gateway is None:
            return None
        try:
            return Reply(200, verbs.answer(gateway.service, verb, request.body, final=False))
        except verbs.PodNotSeenYet:
            return None

    async def _answer_later(self, request: Request) -> None:
        try:
            verb = VERB_PATHS.get(request.path())
            gateway = self.server.gateway
            if verb is not None and gateway is not None:
                reply = await gateway.answer_when_seen(verb, request.body)
                self._write(request, Reply(200, reply))
                self.queue.popleft()
            else:
                await self._through_app(request)
                self.queue.popleft()
        finally:
            self.busy = False
            self.task = None
        self._advance()

    def _keeps_alive(self, request: Request) -> bool:
        """Whether the connection stays open after `request`'s reply (the head of the queue)."""
        last = len(self.queue) == 1 and self.current is None
        return request.keep_alive and not (last and (self.input_done or self.server.stopping))

    def _write(self, request: Request, reply: Reply) -> None:
        if self.closed or self.transport is None:
            return
        keep_alive = not reply.close and self._keeps_alive(request)
        self.transport.write(whole_reply(request.http_version, reply, keep_alive))
        self._log(request, reply.status)
        if not keep_alive:
            self._close()

    async def _through_app(self, request: Request) -> None:
        """`request` through the ASGI app, its reply written as the app sends it (`StreamedReply`)."""
        transport = self.transport
        assert transport is not None
        reply = StreamedReply(request, transport, self._keeps_alive(request))

        async def send(message: Message) -> None:
            if not self.closed and reply.feed(message):
                await self.writable.wait()

        try:
            scope = http_scope(request, transport, self.server.tls, self.server.app_state)
            await self.server.app(scope, body_receiver(request.body, self.disconnected), send)
            complete = reply.finished
        except Exception:
            log.exception("%s %r failed", request.method.decode("latin-1"), request.target[:200])
            if not reply.head_written:
                self._write(request, Reply(500, orjson.dumps({"error": "internal error"}), close=True))
                return
            complete = False
        self._log(request, reply.status)
        if not complete:
            if not reply.head_written:
                self._write(request, Reply(500, orjson.dumps({"error": "the application sent no reply"})))
                return
            self._close()
        elif not reply.keep_alive:
            self._close()

    def _log(self, request: Request, status: int) -> None:
        if self.server.access_log:
            log.debug("%s %s %d", request.method.decode("latin-1"), request.target[:200].decode("latin-1"), status)

    # refusals while reading

    def _refuse_current(self, status: int, message: str) -> None:
        """Refuse the request being read; nothing more is read on this connection (its rest is unread)."""
        request = self.current
        assert request is not None
        try:
            path = request.path()
        except httptools.HttpParserInvalidURLError:
            path = b""
        reply = error_for(path, 200 if path in VERB_PATHS else status, message)
        self._refuse_input(reply)

    def _refuse_input(self, reply: Reply) -> None:
        self._cancel_timer()
        request = self.current or Request()
        request.refusal = reply
        self.current = None
        self.continue_owed = False
        self.queue.append(request)
        self._stop_reading()

    def _read_timed_out(self) -> None:
        self.timer = None
        request = self.current
        if request is None or self.closed:
            return
        headers_complete = bool(request.method)
        message = self.limits.timeout_message(headers_complete=headers_complete)
        if headers_complete:
            self._refuse_current(408, message)
        else:
            self._refuse_input(Reply(408, orjson.dumps({"error": message}), close=True))
        self._advance()

    # flow and lifecycle

    def stop(self) -> None:
        """The server stops: answer what was read, then close. An idle connection first takes in what has
        already arrived on its socket (two turns of the event loop: a poll for input lies between them),
        so a call sent just before the stop is answered rather than dropped."""
        if self.current is None and not self.queue and not self.busy:
            self.loop.call_soon(self.loop.call_soon, self._stop_if_idle)
        elif self.current is None:
            self._stop_reading()

    def _stop_if_idle(self) -> None:
        if self.current is None:
            self._stop_reading()
            if not self.queue and not self.busy:
                self._close()

    def _send_continue(self) -> None:
        """`100 Continue` for the request being read, once every earlier reply is out."""
        if self.continue_owed and not self.queue and not self.busy and self.transport is not None:
            self.continue_owed = False
            self.transport.write(CONTINUE)

    def _idle(self) -> None:
        self._cancel_timer()
        self.timer = self._call_later(self.server.settings.verb_limits.keep_alive_s, self._close)

    def _call_later(self, delay: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(delay, callback)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _pause_reading(self) -> None:
        if self.reading and self.transport is not None and not self.closed:
            self.reading = False
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if not self.reading and self.transport is not None and not self.closed:
            self.reading = True
            self.transport.resume_reading()

    def _stop_reading(self) -> None:
        self.input_done = True
        self._pause_reading()

    def _close(self) -> None:
        self._cancel_timer()
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.abort()
