"""The observe listener: metrics, probes and, on request, the debug routes and the page, read-only.

kube-scheduler reaches the verbs on 127.0.0.1 inside the scheduler pod, and nothing else should; yet
Prometheus must scrape `/metrics` and people want `/ui` from outside the pod. So `serve --observe-port`
opens a second listener (usually on 0.0.0.0) whose app has only GET routes and no verbs: a POST anywhere
is a 405 JSON error, a verb path a 404. By default it serves `/metrics`, `/healthz` and `/readyz` only;
`--observe-debug` adds `/debug/*` (`/debug/explain` is what `tfjob-extender explain` reads) and `/ui`,
which the caller guards with the observe listener's own token checks (`extender.api.auth`). Both
listeners run on one event loop in one process and read the same model; the verb listener (our own
server, `extender.api.edge`) owns the lifecycle (starting the watches, the loops, the sampler), and
`serve_together` the signals: one stop signal stops both. A process that runs only loops
(`tfjob-extender loops`) serves the same app as its one listener, over a service made from its own
model, and gives it the lifecycle (`on_start`, `on_stop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Generator, Sequence

import uvicorn
import uvloop
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp

from extender.api import debug
from extender.api.app import sampled_lifecycle_app
from extender.api.auth import OBSERVE_OPEN_PATHS, Reviewer, guarded
from extender.api.edge import EdgeServer, StartupFailed
from extender.api.queue_routes import make_queue_router
from extender.api.ui import make_ui_router
from extender.api.verbs import Service
from extender.config import Settings

log = logging.getLogger(__name__)

READ_METHODS = frozenset({"GET", "HEAD"})


def create_observe_app(
    service: Service,
    routers: Sequence[APIRouter] = (),
    *,
    debug_routes: bool = False,
    on_start: Callable[[], None] = lambda: None,
    on_stop: Callable[[], None] = lambda: None,
) -> FastAPI:
    """The read-only app: `/metrics`, `/healthz`, `/readyz`; with `debug_routes` also every other GET route
    of the extender's app and `routers` (`/debug/scaler`), and with `Settings.observe_openapi` their schema
    (`/openapi.json`, built here, not on the event loop at its first request: milliseconds). `on_start` /
    `on_stop` run when it serves with a lifespan (a loop process's one listener; `serve` runs it beside the
    verb listener without one)."""

    app = sampled_lifecycle_app(
        "tfjob-extender (observe)",
        service,
        on_start,
        on_stop,
        sampled=debug_routes,
        openapi=debug_routes and service.settings.observe_openapi,
    )
    app.include_router(debug.make_probe_router(service))
    if debug_routes:
        app.include_router(debug.make_debug_router(service))
        app.include_router(make_queue_router(service))
        app.include_router(make_ui_router(service))
        for router in routers:
            app.include_router(router)
    if app.openapi_url:
        app.openapi()

    @app.middleware("http")
    async def read_only(request: Request, call_next):  # type: ignore[no-untyped-def]
        if request.method not in READ_METHODS:
            error = f"{request.method} {request.url.path}: the observe listener is read-only (GET only)"
            return JSONResponse({"error": error}, status_code=405)
        return await call_next(request)

    return app


def guarded_observe_app(app: ASGIApp, settings: Settings, reviewer: Reviewer | None) -> ASGIApp:
    """The observe app behind the observe listener's own token checks (`--observe-auth-*`), which guard its
    debug routes only; without `--observe-debug` there is nothing to guard (the rest stays a 404)."""
    if not settings.observe_debug:
        return app
    return guarded(app, settings.observe_auth, reviewer, open_paths=OBSERVE_OPEN_PATHS, flags="--observe-")


class CompanionServer(uvicorn.Server):
    """A listener that lives as long as the verb listener: it leaves the process's signals to `serve_together`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def serve_together(verb_listener: EdgeServer, observe: uvicorn.Config | None) -> int:
    """Run the verb listener, and the observe listener beside it on the same event loop when given, until
    SIGINT or SIGTERM: the verb listener answers what it has read and the observe listener stops with it
    (a second signal closes what is left at once). Returns the process's exit code (3: the app's startup
    failed; 1: the verb listener's address cannot be bound)."""

    async def both() -> int:
        loop = asyncio.get_running_loop()
        companion = CompanionServer(observe) if observe is not None else None
        signals = 0

        def stop() -> None:
            nonlocal signals
            signals += 1
            if signals == 1:
                verb_listener.request_stop()
            else:
                verb_listener.force_stop()
            if companion is not None:
                companion.should_exit = True
                companion.force_exit = signals > 1

        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop)
        observing = loop.create_task(companion.serve()) if companion is not None else None
        try:
            await verb_listener.serve()
        except StartupFailed as error:
            log.error("tfjob-extender could not start: %s", error)
            return 3
        except OSError as error:
            log.error("tfjob-extender cannot listen on %s:%d: %s", verb_listener.host, verb_listener.port, error)
            return 1
        finally:
            if companion is not None and observing is not None:
                companion.should_exit = True
                await observing
        return 0

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(both())
