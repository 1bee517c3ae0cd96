"""Reading one connection of the HTTP edge: httptools' request parser, every cap and timer, and flow control.

`ReadingConnection` is the reading half of a connection (`extender.api.edge.connection.EdgeConnection` adds
the answering): a request's head is metered as it is parsed (`HeadMeter`: 414 or 431 past a cap) and must
arrive within `head_timeout_s` (else 408); its body within `body_timeout_s` of its first byte, under
`max_body_bytes` (413); a new connection must begin its first request within `first_byte_timeout_s`, an
idle one its next within `keep_alive_s`, or it is closed. Complete requests queue; a refused one queues
its refusal, and nothing more is read. The socket is read only while no `Pause` holds: too many queued,
too many bytes held or unread by the client (`max_backlog_bytes`, the transport's write buffer), the
listener over its bytes (`max_buffered_bytes`, for connections not yet proven) or its request rate.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from typing import Protocol, cast

import httptools

from extender.api.auth import TokenChecks
from extender.api.edge.body import BodyLimits, BodyTooLarge
from extender.api.edge.deadline import Deadline
from extender.api.edge.door import Door
from extender.api.edge.encoding import CONTINUE, Reply, Request, error_for, json_error
from extender.api.edge.gate import token_refused, unauthenticated
from extender.api.edge.head import HEADER_LINE_OVERHEAD, HeadMeter, HeadRefused
from extender.api.edge.responder import Responder
from extender.api.edge.states import READING_MOVES, Pause, Place, ReadEvent, Reading, Standing, next_reading
from extender.config import ListenerLimits

MAX_QUEUED_REQUESTS = 8
"""Requests read ahead of their replies on one connection (pipelined) before the connection stops reading."""
LINGER_S = 1.0
"""Seconds, and bytes, a connection refused with input unread reads and drops at most before it closes."""
LINGER_BYTES = 256 * 1024
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

    def connection_began(self, connection: ReadingConnection) -> None: ...

    def connection_ended(self, connection: ReadingConnection) -> None: ...


class _Stop(Exception):
    """Raised in a parser callback to stop parsing: the connection refused what it reads."""


class ReadingConnection(asyncio.Protocol):
    """The reading half of one client connection (see the module's text)."""

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
        self.max_line_bytes = host.limits.max_line_bytes - HEADER_LINE_OVERHEAD
        self.max_head_bytes = host.limits.max_head_bytes
        self.max_headers = host.limits.max_headers
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
        self.lingering = 0
        """Bytes still to read and drop after a refusal before the connection closes (0: not lingering)."""
        self.deadline = Deadline(loop, self._deadline_reached)
        self.recheck: asyncio.TimerHandle | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.disconnected = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.host.connection_began(self)
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if transport.get_extra_info("peercert"):
            self.standing = Standing.AUTHENTICATED
        self.place = self.host.door.admit(self)
        if self.place is Place.REFUSED or self.host.stopping:
            self.abort()
            return
        self.transport.set_write_buffer_limits(high=max(1, self.limits.max_backlog_bytes // 2))
        self.deadline.set(self.loop.time() + self.limits.first_byte_timeout_s)

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

    # the transport's and the parser's callbacks

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            self.lingering = max(0, self.lingering - len(data))
            if not self.lingering:
                self._close()
            return
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
        self._advance()

    def on_message_begin(self) -> None:
        self.begun_in_feed += 1
        if self.begun_in_feed > 1 or self.reading is not Reading.IDLE:
            self.head_fed = 0
        self.reading = READING_MOVES[self.reading, ReadEvent.BEGIN]
        self.current = Request()
        self.meter.restart()
        self.chunks = []
        self.body_size = 0
        self.began_at = self.loop.time()
        self.deadline.set(self.began_at + self.limits.head_timeout_s)

    def on_url(self, url: bytes) -> None:
        if self.current is not None:
            self.meter.on_target(url)
            self.current.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        request = self.current
        if request is not None:
            line = len(name) + len(value)
            meter = self.meter
            meter.header_bytes += line + HEADER_LINE_OVERHEAD
            head = meter.target + meter.header_bytes
            if line >= self.max_line_bytes or len(request.headers) >= self.max_headers or head > self.max_head_bytes:
                meter.count_headers(request.headers, (name, value))
            lowered = name.lower()
            request.headers.append((lowered, value))
            if lowered == b"content-length":
                request.content_length = value
            elif lowered == b"expect":
                request.expect = value

    def on_headers_complete(self) -> None:
        request = self.current
        if request is None:
            return
        self.reading = READING_MOVES[self.reading, ReadEvent.HEAD_COMPLETE]
        self.head_fed = 0
        if self.place is Place.OVERFLOW:
            self.host.door.heard(self)
        request.method = self.parser.get_method()
        request.http_version = self.parser.get_http_version()
        request.keep_alive = self.parser.should_keep_alive()
        self.deadline.set(self.began_at + self.limits.body_timeout_s)
        try:
            self.body_limits.check_declared(request.content_length)
        except BodyTooLarge as error:
            self._refuse_current(413, str(error))
            raise _Stop from None
        tokens = self.host.tokens
        if tokens is not None and token_refused(request, self, self.host.door, tokens, self.host.responder.open_paths):
            self._refuse_input(unauthenticated())
            raise _Stop from None
        if request.expect.lower() == b"100-continue":
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
        self.held += len(body)
        self.host.door.buffered += len(body)

    def on_message_complete(self) -> None:
        request = self.current
        if request is None:
            return
        self.reading = READING_MOVES[self.reading, ReadEvent.MESSAGE_COMPLETE]
        self.deadline.clear()
        self.continue_owed = False
        request.body = b"".join(self.chunks)
        self.chunks = []
        request.held = self.meter.target + self.meter.header_bytes + len(request.body)
        self.held += request.held - self.body_size
        self.host.door.buffered += request.held - self.body_size
        self.body_size = 0
        self.current = None
        self.queue.append(request)

    # refusals while reading

    def _refuse_head(self, refused: HeadRefused) -> None:
        self._refuse_current(refused.status, refused.message)

    def _refuse_current(self, status: int, message: str) -> None:
        """Refuse the request being read — in its verb's shape when its target (as far as it has come) is a verb's
        — and read nothing more on this connection (its rest is unread)."""
        path = b""
        if self.current is not None:
            try:
                path = self.current.path()
            except httptools.HttpParserInvalidURLError:
                path = b""
        self._refuse_input(error_for(path, status, message))

    def _refuse_input(self, reply: Reply) -> None:
        self.deadline.clear()
        request = self.current or Request()
        request.refusal = reply
        self.current = None
        self.continue_owed = False
        self._hold(-self.body_size)
        self.chunks = []
        self.queue.append(request)
        self._move(ReadEvent.REFUSE)
        self._pause(Pause.ANSWERING)

    def _deadline_reached(self) -> None:
        """The current wait is over: a lingering close or an idle connection closes; a head that has not
        arrived within `head_timeout_s`, or a request not whole within `body_timeout_s`, gets its 408."""
        if self.closed:
            return
        if self.lingering or (self.current is None and not self.queue and self.task is None):
            self._close()
            return
        if self.reading is Reading.HEAD:
            self._refuse_current(408, f"request head not received within {self.limits.head_timeout_s:g} s")
        elif self.reading is Reading.BODY:
            self._refuse_current(408, self.body_limits.timeout_message())
        self._advance()

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
        buffered = self.standing is Standing.FRESH and self.host.door.over_buffered
        quiet = backlog <= self.limits.max_backlog_bytes and len(self.queue) < MAX_QUEUED_REQUESTS
        if quiet and not buffered and not self.pauses:
            return
        for reason, holds in (
            (Pause.QUEUE, len(self.queue) >= MAX_QUEUED_REQUESTS),
            (Pause.BACKLOG, backlog > self.limits.max_backlog_bytes),
            (Pause.BUFFERED, buffered),
        ):
            if holds:
                self._pause(reason)
            else:
                self._resume(reason)
        if buffered:
            self._set_recheck(RECHECK_S)

    def _cancel_timers(self) -> None:
        self.deadline.cancel()
        if self.recheck is not None:
            self.recheck.cancel()
            self.recheck = None

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

    def _advance(self) -> None:
        """Answer what the queue holds (the answering half does)."""
        raise NotImplementedError

    displace = abort
