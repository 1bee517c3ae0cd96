"""One connection of the HTTP edge: its requests answered in order, one at a time.

`EdgeConnection` is a `ReadingConnection` (`extender.api.edge.reading`: the parser, the caps, the timers,
flow control) that answers what it has read. For the request at the head of its queue it asks the gate
(`extender.api.edge.gate`: the door's overflow gets a JSON 503 unless the request authenticates into a free
slot; a path that is not open needs a bearer token the listener's `TokenChecks` accept, else a 401), waits
out the listener's request rate, then lets the `Responder` answer — in place, or in a task while the rest
wait (`_Outlet` is where that task writes). Every refusal is JSON and closes the connection. On `stop` the
connection answers what it has read and closes.
"""

from __future__ import annotations

import logging

import httptools

from extender.api.edge.encoding import Reply, Request, json_error, whole_reply
from extender.api.edge.gate import AskReviews, admission, unauthenticated
from extender.api.edge.reading import LINGER_BYTES, LINGER_S, ReadingConnection
from extender.api.edge.states import Pause, Place, ReadEvent, Reading, Standing

log = logging.getLogger(__name__)

WAITING = frozenset({Pause.WRITING, Pause.RATE})
"""Pauses that leave requests queued, unanswered for now."""


class EdgeConnection(ReadingConnection):
    """One client connection: read under the caps, queue, answer in order (see the module's text)."""

    # answering, in order

    def _advance(self) -> None:
        """Answer the queued requests in order: in place where possible, a task for the rest, one at a time."""
        while self.queue and self.task is None and not self.closed:
            if Pause.WRITING in self.pauses:
                break
            request = self.queue[0]
            reply = self._gate(request)
            if reply is None:
                if self.task is not None or Pause.RATE in self.pauses:
                    break
                try:
                    reply = self.host.responder.answer_now(request)
                except Exception:
                    log.exception("%s %r failed", request.method.decode("latin-1"), request.target[:200])
                    reply = json_error(500, "internal error", close=True)
            if reply is None:
                self.task = self.loop.create_task(self._answer_later(request))
                break
            self.write_whole(request, reply)
            self._dequeue()
        if self.closed:
            return
        self._update_pauses()
        if self.task is not None or (self.queue and self.pauses & WAITING):
            return
        if self.continue_owed:
            self._send_continue()
        if self.current is None and not self.queue:
            if self.host.stopping or self.reading is Reading.DONE:
                self._close()
            else:
                self.deadline.set(self.loop.time() + self._idle_limit())

    def _gate(self, request: Request) -> Reply | None:
        """A refusal of `request`, or None: answer it — unless a token check's task has started, or the
        listener's request rate is spent (the connection then waits, paused)."""
        if request.refusal is not None:
            return request.refusal
        try:
            path = request.path()
        except httptools.HttpParserInvalidURLError:
            return json_error(400, f"malformed request target {request.target[:200]!r}", close=True)
        host = self.host
        if host.tokens is not None or self.place is not Place.SLOT:
            verdict = admission(request, path, self, host.door, host.tokens, host.responder.open_paths)
            if isinstance(verdict, AskReviews):
                self.task = self.loop.create_task(self._ask_reviews(verdict.token))
                return None
            if verdict is not None:
                return verdict
        if host.door.requests.rate > 0:
            wait = host.door.requests.wait()
            if wait > 0:
                self._pause(Pause.RATE)
                self._set_recheck(wait)
        return None

    async def _ask_reviews(self, token: str) -> None:
        """Ask the API server about `token`; the answer is remembered, so the request is admitted (or
        refused) when the queue moves on."""
        assert self.host.tokens is not None
        try:
            accepted = await self.host.tokens.accepts(token)
        finally:
            self.task = None
        if not accepted and self.queue and self.host.tokens.known(token) is None:
            self.queue[0].refusal = unauthenticated()
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

    def _dequeue(self) -> None:
        request = self.queue.popleft()
        self.held -= request.held
        self.host.door.buffered -= request.held
        if request.refusal is None and self.standing is Standing.FRESH:
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
        if not keep_alive and request.refusal is not None:
            self._linger()
        elif not keep_alive:
            self._close()

    def _linger(self) -> None:
        """Close after a refusal that left input unread: the reply is followed by the end of the output, and
        what the client still sends is read and dropped for up to `LINGER_S` (`LINGER_BYTES` at most), so its
        kernel does not discard the reply on a reset before the client reads it."""
        transport = self.transport
        if transport is None or self.closed or not transport.can_write_eof():
            self._close()
            return
        self.lingering = LINGER_BYTES
        transport.write_eof()
        self.pauses.clear()
        self.socket_paused = False
        transport.resume_reading()
        self.deadline.set(self.loop.time() + LINGER_S)

    def _log(self, request: Request, status: int) -> None:
        if self.host.access_log:
            log.debug("%s %s %d", request.method.decode("latin-1"), request.target[:200].decode("latin-1"), status)

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
