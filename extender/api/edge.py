"""The verb listener's HTTP/1.1 server: an `asyncio.Protocol` over httptools' request parser.

kube-scheduler calls `filter` and `prioritize` for every pod it schedules, one call at a time, waiting
for each reply in its serial scheduling step, so the extender's CPU per call counts against the
scheduler's rate. A verb (`POST /filter`, `/prioritize`, `/preempt`) is therefore answered in place when
its request is complete: `verbs.answer` is pure CPU, and the reply goes out in one write with no task,
scope or ASGI message in between. A gang member the model has not seen yet waits on the event loop
(`VerbGateway.answer_when_seen`) and is answered when ready. Every other request (the probes, `/debug`,
the page, and the verbs too when a token check guards them) goes to the ASGI app the listener serves,
with its body already read.

Each connection reads its requests in order and answers them in order: pipelined requests queue behind
the one being answered, and reading pauses while `MAX_QUEUED_REQUESTS` wait. Every request's body is read
under `BodyLimits` (`Settings.max_body_bytes`, `Settings.body_timeout_s`); every refusal is JSON: a verb's
in the verb's own reply shape (kube-scheduler decodes it), anything else as `{"error": ...}` with its
status (400 malformed, 404 unknown path, 405 wrong method, 408 too slow, 413 too large, 503 over
`Settings.max_connections`). A connection beyond that limit has its first request read and answered with
a 503 and is then closed: the caller reads why, rather than a reset it cannot tell from a crash.
Keep-alive lasts `Settings.keep_alive_s`; `Expect: 100-continue` is answered before the body is read;
HTTP/1.0 closes after the reply unless it asked for keep-alive.

`EdgeServer.serve` runs the app's ASGI lifespan around the listener. On `request_stop` it stops
accepting, answers every request already read (the ones waiting for the watch included), closes each
connection after its last reply, and waits up to `Settings.shutdown_grace_s` for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import urllib.parse
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import httptools
import orjson
from starlette.types import ASGIApp, Message, Scope

from extender.api import verbs
from extender.api.body import BodyLimits, BodyTooLarge
from extender.config import Settings

log = logging.getLogger(__name__)

VERB_PATHS = {f"/{verb}".encode(): verb for verb in verbs.HANDLERS}
MAX_QUEUED_REQUESTS = 8
"""Requests read ahead of their replies on one connection (pipelined) before the connection stops reading."""
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
ASGI_VERSION = {"version": "3.0", "spec_version": "2.4"}


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


class StartupFailed(RuntimeError):
    """The app's lifespan startup (or shutdown) failed; the message says how."""


class Lifespan:
    """The ASGI lifespan protocol around the server: startup before it listens, shutdown after it stops."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        self.outbox: asyncio.Queue[Message] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": ASGI_VERSION, "state": self.state}

        async def run() -> None:
            await self.app(scope, self.inbox.get, self.outbox.put)

        self.task = asyncio.get_running_loop().create_task(run())
        await self._exchange("startup")

    async def shutdown(self) -> None:
        if self.task is not None and not self.task.done():
            await self._exchange("shutdown")
            await self.task

    async def _exchange(self, phase: str) -> None:
        assert self.task is not None
        await self.inbox.put({"type": f"lifespan.{phase}"})
        answer = asyncio.ensure_future(self.outbox.get())
        await asyncio.wait({answer, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if not answer.done():
            answer.cancel()
            self.task.result()
            raise StartupFailed(f"the application ended during lifespan {phase}")
        message = answer.result()
        if message["type"] == f"lifespan.{phase}.failed":
            raise StartupFailed(f"lifespan {phase} failed: {message.get('message', '')}")


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


class EdgeConnection(asyncio.Protocol):
    """One client connection: parse, queue, answer in order (see the module's text)."""

    def __init__(self, server: EdgeServer) -> None:
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
        self.over_limit = len(self.server.connections) > self.server.settings.max_connections
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
            limit = self.server.settings.max_connections
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

    def _head(self, request: Request, status: int, headers: list[tuple[bytes, bytes]], keep_alive: bool) -> bytes:
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS.get(status, b""))]
        lines.extend(b"%s: %s\r\n" % (name, value) for name, value in headers)
        if not keep_alive:
            lines.append(b"connection: close\r\n")
        elif request.http_version == "1.0":
            lines.append(b"connection: keep-alive\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def _write(self, request: Request, reply: Reply) -> None:
        if self.closed or self.transport is None:
            return
        keep_alive = not reply.close and self._keeps_alive(request)
        headers = [
            *reply.headers,
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(reply.body)),
        ]
        self.transport.write(self._head(request, reply.status, headers, keep_alive) + reply.body)
        self._log(request, reply.status)
        if not keep_alive:
            self._close()

    async def _through_app(self, request: Request) -> None:
        """`request` through the ASGI app, its reply written as the app sends it (chunked when it streams)."""
        transport = self.transport
        assert transport is not None
        keep_alive = self._keeps_alive(request)
        status = 500
        response_headers: list[tuple[bytes, bytes]] = []
        head_written = False
        finished = False
        chunked = False
        body_given = False

        async def receive() -> Message:
            nonlocal body_given
            if not body_given:
                body_given = True
                return {"type": "http.request", "body": request.body, "more_body": False}
            await self.disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            nonlocal status, response_headers, head_written, finished, chunked, keep_alive
            if self.closed or finished:
                return
            if message["type"] == "http.response.start":
                status = int(message["status"])
                response_headers = list(message.get("headers", []))
                return
            if message["type"] != "http.response.body":
                return
            body: bytes = message.get("body", b"")
            more = bool(message.get("more_body", False))
            if not head_written:
                head_written = True
                if not any(name.lower() == b"content-length" for name, _ in response_headers):
                    if not more:
                        response_headers.append((b"content-length", b"%d" % len(body)))
                    elif request.http_version == "1.1":
                        chunked = True
                        response_headers.append((b"transfer-encoding", b"chunked"))
                    else:
                        keep_alive = False
                transport.write(self._head(request, status, response_headers, keep_alive))
            if request.method != b"HEAD":
                if chunked and body:
                    transport.write(b"%x\r\n%s\r\n" % (len(body), body))
                elif not chunked:
                    transport.write(body)
            if not more:
                finished = True
                if chunked and request.method != b"HEAD":
                    transport.write(b"0\r\n\r\n")
            await self.writable.wait()

        try:
            await self.server.app(self._scope(request), receive, send)
        except Exception:
            log.exception("%s %r failed", request.method.decode("latin-1"), request.target[:200])
            if not head_written:
                self._write(request, Reply(500, orjson.dumps({"error": "internal error"}), close=True))
                return
            finished = False
        self._log(request, status)
        if not finished:
            if not head_written:
                self._write(request, Reply(500, orjson.dumps({"error": "the application sent no reply"})))
                return
            self._close()
        elif not keep_alive:
            self._close()

    def _log(self, request: Request, status: int) -> None:
        if self.server.access_log:
            log.debug("%s %s %d", request.method.decode("latin-1"), request.target[:200].decode("latin-1"), status)

    def _scope(self, request: Request) -> Scope:
        assert self.transport is not None
        url = httptools.parse_url(request.target)
        raw_path = url.path or b"/"
        server = self.transport.get_extra_info("sockname")
        client = self.transport.get_extra_info("peername")
        return {
            "type": "http",
            "asgi": ASGI_VERSION,
            "http_version": request.http_version,
            "server": tuple(server[:2]) if server else None,
            "client": tuple(client[:2]) if client else None,
            "scheme": "https" if self.server.tls is not None else "http",
            "method": request.method.decode("ascii"),
            "root_path": "",
            "path": urllib.parse.unquote(raw_path.decode("ascii", errors="replace")),
            "raw_path": raw_path,
            "query_string": url.query or b"",
            "headers": request.headers,
            "state": dict(self.server.lifespan.state),
        }

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
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _idle(self) -> None:
        self._cancel_timer()
        self.timer = self._call_later(self.server.settings.keep_alive_s, self._close)

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
