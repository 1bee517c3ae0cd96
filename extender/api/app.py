"""The service the listeners answer from (`make_service`), and the bare read-only FastAPI app an observe
listener's routes are mounted on (`read_only_app`; `extender.api.observe` mounts them)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from extender import __version__
from extender.api import debug, verbs
from extender.api.history import DecisionHistory
from extender.api.metrics import Metrics
from extender.api.read_routes import BodilessHead
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
    metrics = Metrics(
        lambda: debug.gangs_pending(state.snapshot(), settings.policy),
        lambda: debug.gangs_partly_bound(state.snapshot(), settings.policy),
    )
    history = DecisionHistory(settings.decision_history, settings.decision_history_nodes)
    if publish is None:
        return verbs.Service(settings, state, clock, history, metrics)
    return verbs.Service(settings, state, clock, history, metrics, publish)


def read_only_app(title: str, *, openapi: bool = False) -> FastAPI:
    """A bare FastAPI app. It serves no docs routes, and `/openapi.json` only with `openapi`; every error it
    answers itself is JSON, `{"error": ...}` (an unknown path, a wrong method, a bad query, an internal
    error); a HEAD request gets GET's status and headers without the body. What it reads is started and
    stopped by the process's runtime (`extender.cli.runtime`), not by an ASGI lifespan."""
    app = FastAPI(
        title=title,
        version=__version__,
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
