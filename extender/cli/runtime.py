"""How a process of the extender runs: its parts started from one list, its listeners on one event loop, its
signals.

A command (`serve`, `loops`, `scaler`) builds every part once — the model's feed (informers or a snapshot
file), the plan publisher, the loops, the utilisation sampler — and its listeners (the verb listener, an
observe listener), then hands them to `Runtime.run`, which:
1. binds every listener's address first (exit code 1 when one cannot be bound: nothing has started yet);
2. starts the parts in their order (exit code 3 when one fails to start: those started are stopped);
3. serves every listener on one uvloop event loop in the main thread, until SIGINT or SIGTERM: the first
   asks every listener to answer what it has read and close, a second closes what is left at once;
4. stops the parts in reverse order.
`docs/architecture.md` ("What runs where") lists the threads each part adds.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import uvloop

from extender.api.auth import Reviewer, tls_context, token_checks
from extender.api.edge.app_responder import AppResponder
from extender.api.edge.responder import Responder
from extender.api.edge.server import EdgeServer
from extender.api.edge.verb_responder import VerbResponder
from extender.api.verbs import Service
from extender.config import AuthSettings, ListenerLimits, Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Part:
    """Something a process starts before it serves and stops after (each start returns once it runs)."""

    name: str
    start: Callable[[], None]
    stop: Callable[[], None]


@dataclass(slots=True)
class Runtime:
    """A process's parts and listeners, run together (see the module's text)."""

    parts: list[Part] = field(default_factory=list)
    listeners: list[EdgeServer] = field(default_factory=list)

    def run(self) -> int:
        """Run until a stop signal; the process's exit code."""
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(self.serve())

    async def serve(self) -> int:
        try:
            bound = [listener.bind() for listener in self.listeners]
        except OSError as error:
            log.error("tfjob-extender cannot listen: %s", error)
            return 1
        started: list[Part] = []
        try:
            for part in self.parts:
                part.start()
                started.append(part)
        except Exception:
            log.exception("tfjob-extender could not start its %s", part.name)
            self._stop_parts(started)
            _close(bound)
            return 3
        self._handle_signals()
        try:
            await asyncio.gather(*(listener.serve(sock) for listener, sock in zip(self.listeners, bound, strict=True)))
        finally:
            self._stop_parts(started)
        return 0

    def _handle_signals(self) -> None:
        loop = asyncio.get_running_loop()
        signals = 0

        def stop() -> None:
            nonlocal signals
            signals += 1
            for listener in self.listeners:
                if signals == 1:
                    listener.request_stop()
                else:
                    listener.force_stop()

        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop)

    @staticmethod
    def _stop_parts(started: Sequence[Part]) -> None:
        for part in reversed(started):
            try:
                part.stop()
            except Exception:
                log.exception("stopping the %s failed", part.name)


def _close(sockets: Sequence[socket.socket]) -> None:
    for sock in sockets:
        sock.close()


def verb_listener(service: Service, settings: Settings, reviewer: Reviewer | None, *, access_log: bool) -> EdgeServer:
    """The verb listener on `--host`/`--port`: the verbs and the probes, with `--tls-*` and `--auth-*`; a
    `ValueError` says why it cannot be built."""
    return EdgeServer(
        VerbResponder(service),
        settings.verb_limits,
        host=settings.host,
        port=settings.port,
        name="verbs",
        tls=tls_context(settings.auth),
        tokens=token_checks(settings.auth, reviewer),
        shutdown_grace_s=settings.shutdown_grace_s,
        access_log=access_log,
    )


def observe_listener(
    app: AppResponder,
    settings: Settings,
    reviewer: Reviewer | None,
    *,
    host: str,
    port: int,
    access_log: bool,
) -> EdgeServer:
    """An observe listener serving `app` on `host`:`port`, with `--observe-tls-*`, and with `--observe-debug`
    the `--observe-auth-*` token checks on every path but the probes and `/metrics`."""
    auth: AuthSettings = settings.observe_auth
    limits: ListenerLimits = settings.observe_limits
    return EdgeServer(
        app,
        limits,
        host=host,
        port=port,
        name="observe routes",
        tls=tls_context(auth),
        tokens=token_checks(auth, reviewer, flags="--observe-") if settings.observe_debug else None,
        shutdown_grace_s=settings.shutdown_grace_s,
        access_log=access_log,
    )


def webhook_listener(responder: Responder, settings: Settings, tls: ssl.SSLContext) -> EdgeServer:
    """The admission webhook's listener on `--webhook-host`/`--webhook-port`, TLS only (`tls` until the
    certificate keeper hands it the one the API server trusts), under `--webhook-*` limits."""
    return EdgeServer(
        responder,
        settings.webhook_limits,
        host=settings.webhook.host,
        port=settings.webhook.port,
        name="admission webhook",
        tls=tls,
        shutdown_grace_s=settings.shutdown_grace_s,
    )
