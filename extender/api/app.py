"""The service the listeners answer from (`make_service`), and the bare read-only FastAPI app an observe
listener's routes are mounted on (`read_only_app`; `extender.api.observe` mounts them)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from extender import __version__
from extender.api import debug, verbs
from extender.api.history import DecisionHistory
from extender.api.metrics import Metrics
from extender.config import Settings
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import ClusterSnapshot
from extender.state.store import ClusterState

MAX_ERROR_CHARS = 500
"""Longest error message a debug route answers with, characters."""


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


def read_only_app(title: str) -> FastAPI:
    """A bare FastAPI app: no docs routes, a 400 for a query that does not parse. What it reads is started and
    stopped by the process's runtime (`extender.cli.runtime`), not by an ASGI lifespan."""
    app = FastAPI(title=title, version=__version__, docs_url=None, redoc_url=None)
    app.add_exception_handler(RequestValidationError, bad_query)
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
