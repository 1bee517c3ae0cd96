"""The FastAPI application: the extender verbs and the debug routes over one `Service`.

`create_app` wires routes only; what feeds the model (informers or a snapshot file) is started by the
caller through `on_start` / `on_stop`, so tests and offline mode build the same app without a cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from extender import __version__
from extender.api import debug, verbs
from extender.api.history import DecisionHistory
from extender.api.metrics import Metrics
from extender.api.queue_routes import make_queue_router
from extender.api.read_routes import BodilessHead
from extender.api.ui import make_ui_router
from extender.config import Settings
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import ClusterSnapshot
from extender.state.store import ClusterState

MAX_ERROR_CHARS = 500
"""Longest error message a debug route answers with, characters."""
OPENAPI_PATH = "/openapi.json"
"""Where the routes' schema is served when asked for (`Settings.observe_openapi`, on the observe listener)."""


def make_service(
    settings: Settings,
    state: ClusterState,
    clock: Callable[[], float],
    publish: Callable[[LedgerChange, ClusterSnapshot], None] | None = None,
) -> verbs.Service:
    metrics = Metrics(lambda: debug.gangs_pending(state.snapshot(), settings.policy))
    history = DecisionHistory(settings.decision_history, settings.decision_history_nodes)
    if publish is None:
        return verbs.Service(settings, state, clock, history, metrics)
    return verbs.Service(settings, state, clock, history, metrics, publish)


def create_app(
    service: verbs.Service,
    *,
    on_start: Callable[[], None] = lambda: None,
    on_stop: Callable[[], None] = lambda: None,
    routers: Sequence[APIRouter] = (),
) -> verbs.VerbGateway:
    """The extender's ASGI application: the verbs in front, the debug routes (and any `routers`) behind them."""
    app = sampled_lifecycle_app("tfjob-extender", service, on_start, on_stop)
    app.include_router(debug.make_router(service))
    app.include_router(make_queue_router(service))
    app.include_router(make_ui_router(service))
    for router in routers:
        app.include_router(router)
    return verbs.VerbGateway(service, app)


def sampled_lifecycle_app(
    title: str,
    service: verbs.Service,
    on_start: Callable[[], None],
    on_stop: Callable[[], None],
    *,
    sampled: bool = True,
    openapi: bool = False,
) -> FastAPI:
    """A `lifecycle_app` that also samples the cluster's utilisation for the page's chart while it serves
    (unless not `sampled`: no page is served)."""

    def start() -> None:
        on_start()
        if sampled:
            service.utilisation.start(service.state.snapshot, service.clock)

    def stop() -> None:
        service.utilisation.stop()
        on_stop()

    return lifecycle_app(title, start, stop, openapi=openapi)


def lifecycle_app(
    title: str, on_start: Callable[[], None], on_stop: Callable[[], None], *, openapi: bool = False
) -> FastAPI:
    """A bare FastAPI app that calls `on_start` when serving begins and `on_stop` when it ends. It serves no
    docs routes, and `/openapi.json` only with `openapi`; every error it answers itself is JSON,
    `{"error": ...}` (an unknown path, a wrong method, a bad query, an internal error); a HEAD request gets
    GET's status and headers without the body."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        on_start()
        try:
            yield
        finally:
            on_stop()

    app = FastAPI(
        title=title,
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=OPENAPI_PATH if openapi else None,
    )
    app.add_exception_handler(RequestValidationError, bad_query)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)
    app.add_middleware(BodilessHead)
    return app


async def bad_query(_: Request, error: Exception) -> JSONResponse:
    """A 400 naming each query or path parameter that does not parse (FastAPI's default is a 422 with a
    machine-oriented body)."""
    assert isinstance(error, RequestValidationError)
    problems = [
        f"{'.'.join(str(part) for part in problem.get('loc', ()))}: {problem.get('msg', 'invalid')}"
        for problem in error.errors()
    ]
    return JSONResponse({"error": "; ".join(problems)[:MAX_ERROR_CHARS]}, status_code=400)


async def http_error(request: Request, error: Exception) -> JSONResponse:
    """An HTTP error (404: no such route; 405: the route has no such method, with `Allow`) as `{"error": ...}`
    (FastAPI's default body is `{"detail": ...}`)."""
    assert isinstance(error, StarletteHTTPException)
    message = f"{request.method} {request.url.path}: {error.detail}"
    return JSONResponse({"error": message[:MAX_ERROR_CHARS]}, status_code=error.status_code, headers=error.headers)


async def internal_error(request: Request, error: Exception) -> JSONResponse:
    """A 500 as `{"error": ...}`, naming the exception's type only; the server logs the traceback."""
    message = f"{request.method} {request.url.path}: internal error ({type(error).__name__})"
    return JSONResponse({"error": message[:MAX_ERROR_CHARS]}, status_code=500)
