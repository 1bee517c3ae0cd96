"""The observe listener: metrics, the debug routes and the page on a second, read-only port.

kube-scheduler reaches the verbs on 127.0.0.1 inside the scheduler pod, and nothing else should; yet
Prometheus must scrape `/metrics` and people want `/ui` from outside the pod. So `serve --observe-port`
opens a second listener (usually on 0.0.0.0) whose app has only the GET routes — `/metrics`, `/healthz`,
`/readyz`, `/debug/*`, `/ui` — and no verbs: a POST anywhere is a 405 JSON error, a verb path a 404.
Both listeners run on one event loop in one process and read the same model; the main listener owns
the lifecycle (starting the watches, the loops, the sampler) and the signals: when it is told to stop,
the observe listener stops with it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator, Sequence
from types import FrameType

import uvicorn
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from extender import __version__
from extender.api import debug
from extender.api.app import bad_query
from extender.api.queue_routes import make_queue_router
from extender.api.ui import make_ui_router
from extender.api.verbs import Service

READ_METHODS = frozenset({"GET", "HEAD"})


def create_observe_app(service: Service, routers: Sequence[APIRouter] = ()) -> FastAPI:
    """The read-only app: every GET route of the extender's app, no verbs, no lifecycle of its own."""
    app = FastAPI(title="tfjob-extender (observe)", version=__version__, docs_url=None, redoc_url=None)
    app.add_exception_handler(RequestValidationError, bad_query)
    app.include_router(debug.make_router(service))
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
