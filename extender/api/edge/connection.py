"""One connection of the HTTP edge: an `asyncio.Protocol` over httptools' request parser, bounded everywhere.

Reading (`Reading`, moves in `extender.api.edge.states`): a request's head is metered as it is parsed
(`HeadMeter`: 414 or 431 past a cap) and must arrive within `head_timeout_s` (else 408); its body within
`body_timeout_s` of its first byte, under `max_body_bytes` (413); a new connection must begin its first
request within `first_byte_timeout_s`, an idle one its next within `keep_alive_s`, or it is closed. Read
requests queue; the socket is read only while no `Pause` holds: too many queued, too many bytes held or
unread by the client (`max_backlog_bytes`, the transport's write buffer), the listener over its bytes or
its request rate.

Answering, in order, one request at a time: the door's overflow gets a JSON 503 (unless the request
authenticates into a free slot), a non-open path needs a bearer token the listener's `TokenChecks`
accept (401 and close otherwise), then the `Responder` answers — in place, or in a task while the rest
wait. Every refusal is JSON and closes the connection. On `stop` the connection answers what it has
read and closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import Callable
from typing import Protocol, cast

import httptools

from extender.api.auth import TokenChecks, bearer_token
from extender.api.edge.body import BodyLimits, BodyTooLarge
from extender.api.edge.door import Door
from extender.api.edge.encoding import CONTINUE, Reply, Request, error_for, json_error, whole_reply
from extender.api.edge.head import HeadMeter, HeadRefused
from extender.api.edge.responder import Responder
from extender.api.edge.states import Pause, Place, ReadEvent, Reading, Standing, next_reading
from extender.config import ListenerLimits

log = logging.getLogger(__name__)

MAX_QUEUED_REQUESTS = 8
"""Requests read ahead of their replies on one connection (pipelined) before the connection stops reading."""
RECHECK_S = 0.05
"""Seconds between two looks at a pause the connection cannot be told the end of (listener-wide bytes, rate)."""


class ConnectionHost(Protocol):
    """What a connection reads and tells of the listener that accepted it."""

    responder: Responder
    limits: ListenerLimits
    door: Door
    tokens: TokenChecks | None
    tls: ssl.SSLContext | None
    access_log: bool
    stopping: bool

    def connection_ended(self, connection: EdgeConnection) -> None: ...


class _Stop(Exception):
    """Raised inside a parser callback to stop parsing: the connection refused what it reads."""


class EdgeConnection(asyncio.Protocol):
    """One client connection: read under the caps, queue, answer in order (see the module's text)."""

    def __init__(self, host: ConnectionHost, loop: asyncio.AbstractEventLoop) -> None:
        self.host = host
        self.loop = loop
        self.limits = host.limits
        self.body_limits = BodyLimits.of(host.limits)
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.standing = Standing.FRESH
        self.place = Place.REFUSED
        self.accepted_at = 0.0
        self.reading = Reading.IDLE
        self.pauses: set[Pause] = set()
        self.socket_paused = False
        self.queue: deque[Request] = deque()
        self.current: Request | None = None
        self.meter = HeadMeter(host.limits)
        self.chunks: list[bytes] = []
        self.body_size = 0
        self.held = 0
        """Bytes of queued requests and of the body being read (counted by the door too)."""
        self.head_fed = 0
        self.begun_in_feed = 0
        self.began_at = 0.0
        self.task: asyncio.Task[None] | None = None
        self.closed = False
        self.continue_owed = False
        self.timer: asyncio.TimerHandle | None = None
        self.recheck: asyncio.TimerHandle | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.disconnected = asyncio.Event()

    # the transport's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if transport.get_extra_info("peercert"):
            self.standing = Standing.AUTHENTICATED
        self.place = self.host.door.admit(self)
        if self.place is Place.REFUSED or self.host.stopping:
            self.abort()
            return
        self.transport.set_write_buffer_limits(high=max(1, self.limits.max_backlog_bytes // 2))
        self._set_timer(self.limits.first_byte_timeout_s, self._idle_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._cancel_timers()
        self.host.door.release(self)
        self._hold(-self.held)
        self.host.connection_ended(self)
        self.disconnected.set()
        self.writable.set()

    def pause_writing(self) -> None:
        self.writable.clear()
        self._pause(Pause.WRITING)

    def resume_writing(self) -> None:
        self.writable.set()
        self._resume(Pause.WRITING)
        self._advance()

    def data_received(self, data: bytes) -> None:
        if self.reading is Reading.DONE or self.closed:
            return
        if self.reading is not Reading.BODY:
            self.head_fed += len(data)
        self.begun_in_feed = 0
        try:
            self.parser.feed_data(data)
            if self.reading is Reading.HEAD:
                self.meter.check_total(max(0, self.head_fed - self.meter.target - self.meter.header_bytes))
        except HeadRefused as refused:
            self._refuse_head(refused)
        except httptools.HttpParserCallbackError as error:
            if isinstance(error.__context__, HeadRefused):
                self._refuse_head(error.__context__)
            elif not isinstance(error.__context__, _Stop):
                raise
        except httptools.HttpParserUpgrade:
            if self.current is None:
                self._move(ReadEvent.END)
            else:
                self._refuse_input(json_error(400, "CONNECT and protocol upgrades are not served", close=True))
        except httptools.HttpParserError as error:
            self._refuse_input(json_error(400, f"malformed HTTP request: {error}", close=True))
        if self.host.stopping and self.current is None:
            self._move(ReadEvent.END)
        self._update_pauses()
        self._advance()

    # httptools' parser callbacks

    def on_message_begin(self) -> None:
        self.begun_in_feed += 1
        if self.begun_in_feed > 1 or self.reading is not Reading.IDLE:
            self.head_fed = 0
        self._move(ReadEvent.BEGIN)
        self._cancel_timer()
        self.current = Request()
        self.meter = HeadMeter(self.limits)
        self.chunks = []
        self.body_size = 0
        self.began_at = self.loop.time()
        self._set_timer(self.limits.head_timeout_s, self._head_timed_out)

    def on_url(self, url: bytes) -> None:
        if self.current is not None:
            self.meter.on_target(url)
            self.current.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.current is not None:
            self.meter.on_header(name, value)
            self.current.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        request = self.current
        if request is None:
            return
        self._move(ReadEvent.HEAD_COMPLETE)
        self.head_fed = 0
        request.method = self.parser.get_method()
        request.http_version = self.parser.get_http_version()
        request.keep_alive = self.parser.should_keep_alive()
        remaining = self.began_at + self.limits.body_timeout_s - self.loop.time()
        self._set_timer(max(0.0, remaining), self._body_timed_out)
        try:
            self.body_limits.check_declared(request.header(b"content-length"))
        except BodyTooLarge as error:
            self._refuse_current(413, str(error))
            raise _Stop from None
        if (request.header(b"expect") or b"").lower() == b"100-continue":
            self.continue_owed = True
            self._send_continue()

    def on_body(self, body: bytes) -> None:
        if self.current is None:
            return
        self.body_size += len(body)
        try:
            self.body_limits.check_read(self.body_size)
        except BodyTooLarge as error:
            self._refuse_current(413, str(error))
            raise _Stop from None
        self.chunks.append(body)
        self._hold(len(body))

    def on_message_complete(self) -> None:
        request = self.current
        if request is None:
            return
        self._move(ReadEvent.MESSAGE_COMPLETE)
        self._cancel_timer()
        self.continue_owed = False
        request.body = b"".join(self.chunks)
        self.chunks = []
        self._hold(request.size - self.body_size)
        self.body_size = 0
        self.current = None
        self.queue.append(request)

    # answering, in order

    def _advance(self) -> None:
        """Answer the queued requests in order: in place where possible, a task for the rest, one at a time."""
        while self.queue and self.task is None and not self.closed:
            if Pause.WRITING in self.pauses:
                return
            request = self.queue[0]
            reply = self._gate(request)
            if reply is None:
                if self.task is not None or Pause.RATE in self.pauses:
                    return
                reply = self.host.responder.answer_now(request)
            if reply is None:
                self.task = self.loop.create_task(self._answer_later(request))
                return
            self._finish(request, reply)
        if self.closed or self.task is not None:
            return
        self._update_pauses()
        if self.continue_owed:
            self._send_continue()
        if self.current is None and not self.queue:
            if self.host.stopping or self.reading is Reading.DONE:
                self._close()
            elif self.timer is None:
                self._set_timer(self._idle_limit(), self._idle_timed_out)

    def _gate(self, request: Request) -> Reply | None:
        """A refusal of `request` (overflow, token, malformed target), or None: it may be answered. Starts the
        token check's task when the answer needs the API server, and waits out the listener's request rate."""
        if request.refusal is not None:
            return request.refusal
        try:
            path = request.path()
        except httptools.HttpParserInvalidURLError:
            return json_error(400, f"malformed request target {request.target[:200]!r}", close=True)
        tokens = self.host.tokens
        needs_token = tokens is not None and path not in self.host.responder.open_paths
        if needs_token or (self.place is Place.OVERFLOW and tokens is not None):
            assert tokens is not None
            token = bearer_token(request.header(b"authorization"))
            known = tokens.known(token) if token is not None else False
            if known is None:
                assert token is not None
                self.task = self.loop.create_task(self._check_token(token))
                return None
            if known and not self.host.door.authenticated(self):
                return self._over_limit(path)
            if not known and needs_token:
                return json_error(
                    401,
                    "a bearer token this server accepts is required",
                    close=True,
                    headers=((b"www-authenticate", b"Bearer"),),
                )
        if self.place is Place.OVERFLOW:
            return self._over_limit(path)
        wait = self.host.door.requests.wait()
        if wait > 0:
            self._pause(Pause.RATE)
            self._set_recheck(wait)
        return None

    def _over_limit(self, path: bytes) -> Reply:
        limit = self.limits.max_connections
        return error_for(path, 503, f"over the limit of {limit} connections served at once; try again")

    async def _check_token(self, token: str) -> None:
        tokens = self.host.tokens
        assert tokens is not None
        try:
            accepted = await tokens.accepts(token)
        finally:
            self.task = None
        request = self.queue[0] if self.queue else None
        if request is not None and not self.closed:
            if not accepted:
                path = request.path()
                needs = path not in self.host.responder.open_paths
                if needs:
                    request.refusal = json_error(401, "a bearer token this server accepts is required", close=True)
            elif not self.host.door.authenticated(self):
                request.refusal = self._over_limit(request.path())
        self._advance()

    async def _answer_later(self, request: Request) -> None:
        try:
            await self.host.responder.answer_later(request, _Outlet(self, request))
        except Exception:
            log.exception("%s %r failed", request.method.decode("latin-1"), request.target[:200])
            self.write_whole(request, json_error(500, "internal error", close=True))
        finally:
            self.task = None
        if self.queue and self.queue[0] is request:
            self._dequeue()
        self._advance()

    def _finish(self, request: Request, reply: Reply) -> None:
        self.write_whole(request, reply)
        self._dequeue()

    def _dequeue(self) -> None:
        request = self.queue.popleft()
        self._hold(-request.size)
        if request.refusal is None:
            self.host.door.proven(self)

    def keeps_alive(self, request: Request) -> bool:
        """Whether the connection stays open after `request`'s reply (the head of the queue)."""
        last = len(self.queue) <= 1 and self.current is None
        return request.keep_alive and not (last and (self.reading is Reading.DONE or self.host.stopping))

    def write_whole(self, request: Request, reply: Reply) -> None:
        if self.closed or self.transport is None:
            return
        keep_alive = not reply.close and self.keeps_alive(request)
        self.transport.write(whole_reply(request, reply, keep_alive))
        self._log(request, reply.status)
        if not keep_alive:
            self._close()

    def _log(self, request: Request, status: int) -> None:
        if self.host.access_log:
            log.debug("%s %s %d", request.method.decode("latin-1"), request.target[:200].decode("latin-1"), status)

    # refusals while reading

    def _refuse_head(self, refused: HeadRefused) -> None:
        self._refuse_input(json_error(refused.status, refused.message, close=True))

    def _refuse_current(self, status: int, message: str) -> None:
        """Refuse the request being read; nothing more is read on this connection (its rest is unread)."""
        request = self.current
        assert request is not None
        try:
            path = request.path()
        except httptools.HttpParserInvalidURLError:
            path = b""
        self._refuse_input(error_for(path, status, message))

    def _refuse_input(self, reply: Reply) -> None:
        self._cancel_timer()
        request = self.current or Request()
        request.refusal = reply
        self.current = None
        self.continue_owed = False
        self._hold(-self.body_size)
        self.chunks = []
        self.queue.append(request)
        self._move(ReadEvent.REFUSE)
        self._pause(Pause.ANSWERING)

    def _head_timed_out(self) -> None:
        self.timer = None
        if self.current is None or self.closed:
            return
        self._refuse_input(
            json_error(408, f"request head not received within {self.limits.head_timeout_s:g} s", close=True)
        )
        self._advance()

    def _body_timed_out(self) -> None:
        self.timer = None
        if self.current is None or self.closed:
            return
        self._refuse_current(408, self.body_limits.timeout_message())
        self._advance()

    def _idle_timed_out(self) -> None:
        self.timer = None
        if self.current is None and not self.queue and self.task is None:
            self._close()

    def _idle_limit(self) -> float:
        return self.limits.first_byte_timeout_s if self.standing is Standing.FRESH else self.limits.keep_alive_s

    # flow

    def _move(self, event: ReadEvent) -> None:
        self.reading = next_reading(self.reading, event)
        if self.reading is Reading.DONE:
            self._pause(Pause.ANSWERING)

    def _hold(self, size: int) -> None:
        if size:
            self.held += size
            self.host.door.hold(size)

    def _update_pauses(self) -> None:
        """Pause or resume reading for the reasons this connection can see."""
        backlog = self.held + (self.transport.get_write_buffer_size() if self.transport is not None else 0)
        reasons = {
            Pause.QUEUE: len(self.queue) >= MAX_QUEUED_REQUESTS,
            Pause.BACKLOG: backlog > self.limits.max_backlog_bytes,
            Pause.BUFFERED: self.standing is Standing.FRESH and self.host.door.over_buffered,
        }
        for reason, holds in reasons.items():
            if holds:
                self._pause(reason)
            else:
                self._resume(reason)
        if Pause.BUFFERED in self.pauses:
            self._set_recheck(RECHECK_S)

    def _set_recheck(self, delay: float) -> None:
        if self.recheck is None and not self.closed:
            self.recheck = self.loop.call_later(delay, self._rechecked)

    def _rechecked(self) -> None:
        self.recheck = None
        self._resume(Pause.RATE)
        self._update_pauses()
        self._advance()

    def _pause(self, reason: Pause) -> None:
        self.pauses.add(reason)
        if not self.socket_paused and self.transport is not None and not self.closed:
            self.socket_paused = True
            self.transport.pause_reading()

    def _resume(self, reason: Pause) -> None:
        self.pauses.discard(reason)
        if not self.pauses and self.socket_paused and self.transport is not None and not self.closed:
            self.socket_paused = False
            self.transport.resume_reading()

    def _send_continue(self) -> None:
        """`100 Continue` for the request being read, once every earlier reply is out."""
        if self.continue_owed and not self.queue and self.task is None and self.transport is not None:
            self.continue_owed = False
            self.transport.write(CONTINUE)

    # lifecycle

    def stop(self) -> None:
        """The listener stops: answer what was read, then close. An idle connection first takes in what has
        already arrived on its socket (two turns of the event loop: a poll for input lies between them), so a
        call sent just before the stop is answered rather than dropped."""
        if self.current is None and not self.queue and self.task is None:
            self.loop.call_soon(self.loop.call_soon, self._stop_if_idle)
        elif self.current is None:
            self._move(ReadEvent.END)

    def _stop_if_idle(self) -> None:
        if self.current is None:
            self._move(ReadEvent.END)
            if not self.queue and self.task is None:
                self._close()

    def displace(self) -> None:
        """A newcomer takes this connection's slot: close at once."""
        self.abort()

    def _set_timer(self, delay: float, callback: Callable[[], None]) -> None:
        self._cancel_timer()
        self.timer = self.loop.call_later(delay, callback)

    def _cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _cancel_timers(self) -> None:
        self._cancel_timer()
        if self.recheck is not None:
            self.recheck.cancel()
            self.recheck = None

    def _close(self) -> None:
        self._cancel_timers()
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.abort()


class _Outlet:
    """A reply answered later, written to the connection it was read on (`extender.api.edge.responder.Outlet`)."""

    def __init__(self, connection: EdgeConnection, request: Request) -> None:
        assert connection.transport is not None
        self.connection = connection
        self.request = request
        self.transport = connection.transport
        self.tls = connection.host.tls
        self.keep_alive = connection.keeps_alive(request)
        self.writable = connection.writable
        self.disconnected = connection.disconnected

    def write_whole(self, reply: Reply) -> None:
        self.connection.write_whole(self.request, reply)

    def ended(self, status: int, *, complete: bool, keep_alive: bool) -> None:
        self.connection._log(self.request, status)
        if not complete or not keep_alive:
            self.connection._close()
