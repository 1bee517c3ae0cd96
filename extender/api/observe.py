"""The observe listener: metrics, probes and, on request, the debug routes and the page, read-only.

kube-scheduler reaches the verbs on 127.0.0.1 inside the scheduler pod, and nothing else should; yet
Prometheus must scrape `/metrics` and people want `/ui` from outside the pod. So `serve --observe-port`
opens a second listener (usually on 0.0.0.0) whose app has only GET routes and no verbs: a POST anywhere
is a 405 JSON error, a verb path a 404. By default it serves `/metrics`, `/healthz` and `/readyz` only;
`--observe-debug` adds `/debug/*` (`/debug/explain` is what `tfjob-extender explain` reads) and `/ui`,
which the caller guards with the observe listener's own token checks (`extender.api.auth`). Both
listeners run on one event loop in one process and read the same model; the main listener owns the
lifecycle (starting the watches, the loops, the sampler) and the signals: when it is told to stop, the
observe listener stops with it. A process that runs only loops (`tfjob-extender loops`) serves the same
app as its one listener, over a service made from its own model, and gives it the lifecycle
(`on_start`, `on_stop`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Generator, Sequence
from types import FrameType

import uvicorn
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp

from extender.api import debug
from extender.api.app import sampled_lifecycle_app
from extender.api.auth import OBSERVE_OPEN_PATHS, Reviewer, guarded
from extender.api.queue_routes import make_queue_router
from extender.api.ui import make_ui_router
from extender.api.verbs import Service
from extender.config import Settings

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
    of the extender's app and `routers` (`/debug/scaler`). `on_start` / `on_stop` run when it serves with a
    lifespan (a loop process's one listener; `serve` runs it beside the verb listener without one)."""

    app = sampled_lifecycle_app("tfjob-extender (observe)", service, on_start, on_stop, sampled=debug_routes)
    app.include_router(debug.make_probe_router(service))
    if debug_routes:
        app.include_router(debug.make_debug_router(service))
        app.include_router(make_queue_router(service))
        app.include_router(make_ui_router(service))
        for router in routers:
            app.include_router(router)

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
    """A listener that lives as long as the main one: it leaves the process's signals to it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class LeadingServer(uvicorn.Server):
    """The main listener: a stop signal stops its companions too."""

    def __init__(self, config: uvicorn.Config, companions: Sequence[uvicorn.Server]) -> None:
        super().__init__(config)
        self.companions = list(companions)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        for companion in self.companions:
            companion.should_exit = True


def serve_together(main: uvicorn.Config, observe: uvicorn.Config | None) -> None:
    """Run the main listener, and the observe listener beside it on the same event loop when given."""
    if observe is None:
        uvicorn.Server(main).run()
        return
    companion = CompanionServer(observe)
    leader = LeadingServer(main, [companion])

    async def both() -> None:
        observing = asyncio.create_task(companion.serve())
        try:
            await leader.serve()
        finally:
            companion.should_exit = True
            await observing

    with asyncio.Runner(loop_factory=main.get_loop_factory()) as runner:
        runner.run(both())
