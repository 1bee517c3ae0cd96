"""The HTTP connection protocol: uvicorn's httptools protocol, with the extender verbs answered in place.

kube-scheduler calls `filter` and `prioritize` for every pod it schedules, one call at a time, waiting for
each reply in its serial scheduling step; on a 2-core control plane the extender's CPU per call counts
against the scheduler's rate. Through ASGI a call costs a task, an event, a scope, receive and send
coroutines and two socket writes, about as much as the policy itself. Here a POST to a verb path is
parsed by the same httptools parser, its body collected under the same cap and time limit, answered
synchronously when the message completes (`answer` is pure CPU) and written with one write.

Everything else goes the ASGI way through the same `VerbGateway`: debug routes and probes, a request
expecting `100-continue`, a request pipelined behind an unfinished one, and a gang member the model has
not seen yet (it waits on the event loop for the watch; its reply is written when ready). A server behind
token auth uses plain uvicorn: the token check is asynchronous. This leans on uvicorn's protocol
internals, so pyproject pins uvicorn to a minor range and the contract tests drive a real socket.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from extender.api import verbs

VERB_PATHS = {f"/{verb}".encode(): verb for verb in verbs.HANDLERS}
STATUS_LINE = b"HTTP/1.1 200 OK\r\n"


class VerbProtocol(HttpToolsProtocol):
    """One HTTP connection; `gateway` is set on the subclass `protocol_for` makes."""

    gateway: verbs.VerbGateway

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.verb: str | None = None
        self.verb_refused = False
        self.verb_body: list[bytes] = []
        self.verb_size = 0
        self.verb_timer: asyncio.TimerHandle | None = None

    def on_headers_complete(self) -> None:
        verb = self._fast_verb()
        if verb is None:
            super().on_headers_complete()
            return
        self.verb = verb
        settings = self.gateway.service.settings
        declared = dict(self.headers).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > settings.max_body_bytes:
            limit = settings.max_body_bytes
            self._refuse(f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes")
            return
        self.verb_timer = self.loop.call_later(settings.body_timeout_s, self._body_timed_out)

    def on_body(self, body: bytes) -> None:
        if self.verb is None:
            super().on_body(body)
            return
        if self.verb_refused:
            return
        self.verb_size += len(body)
        if self.verb_size > self.gateway.service.settings.max_body_bytes:
            limit = self.gateway.service.settings.max_body_bytes
            self._refuse(f"request body exceeds the limit of {limit} bytes")
            return
        self.verb_body.append(body)

    def on_message_complete(self) -> None:
        verb = self.verb
        if verb is None:
            super().on_message_complete()
            return
        if self.verb_refused:
            return
        self._stop_timer()
        body = b"".join(self.verb_body)
        try:
            reply = verbs.answer(self.gateway.service, verb, body, final=False)
        except verbs.PodNotSeenYet:
            self._answer_later(verb, body)
            return
        self._reply(reply)

    def _fast_verb(self) -> str | None:
        """The verb a request names when it can be answered in place."""
        if self.parser.get_method() != b"POST" or self.expect_100_continue or self.pipeline:
            return None
        if self.cycle is not None and not self.cycle.response_complete:
            return None
        return VERB_PATHS.get(httptools.parse_url(self.url).path)

    def _answer_later(self, verb: str, body: bytes) -> None:
        """Let the watch catch up on the event loop (`VerbGateway.answer_when_seen`), reading nothing meanwhile."""
        self.flow.pause_reading()

        async def later() -> None:
            self._reply(await self.gateway.answer_when_seen(verb, body))

        task = self.loop.create_task(later())
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def _reply(self, reply: bytes, *, close: bool = False) -> None:
        if self.transport.is_closing():
            return
        keep_alive = not close and self.parser.should_keep_alive()
        head = [STATUS_LINE]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head.append(b"content-type: application/json\r\ncontent-length: %d\r\n" % len(reply))
        if not keep_alive:
            head.append(b"connection: close\r\n")
        head.extend([b"\r\n", reply])
        self.transport.write(b"".join(head))
        if keep_alive:
            self.on_response_complete()
        else:
            self.transport.close()

    def _refuse(self, message: str) -> None:
        """An error reply for a body that cannot be read; the connection closes (its rest is unread)."""
        self._stop_timer()
        self.verb_refused = True
        verb = self.verb or "filter"
        self._reply(verbs.error_reply(verb, f"tfjob-extender {verb}: {message}"), close=True)

    def _body_timed_out(self) -> None:
        self.verb_timer = None
        limit = self.gateway.service.settings.body_timeout_s
        self._refuse(f"request body not received within {limit:g} s")

    def _stop_timer(self) -> None:
        if self.verb_timer is not None:
            self.verb_timer.cancel()
            self.verb_timer = None

    def data_received(self, data: bytes) -> None:
        if not self.transport.is_closing():
            super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)


def protocol_for(app: ASGIApp) -> Any:
    """uvicorn's `http` option for `app`: verbs answered in place when the app is the bare gateway."""
    if not isinstance(app, verbs.VerbGateway):
        return "httptools"
    return type("GatewayVerbProtocol", (VerbProtocol,), {"gateway": app})
