"""Every read route runs on the event loop: the apps hold no plain `def` route, and none can be declared; the
observe app's routes are GET and HEAD but the what-if, a POST."""

from __future__ import annotations

import inspect

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Route

from extender.api.app import make_service
from extender.api.observe import create_observe_app
from extender.api.read_routes import NotOnTheLoop, read_route
from extender.api.scaler import make_scaler_router
from extender.config import Settings
from extender.loops.actuator import RecordingActuator
from extender.loops.scaler import ScalerLoop
from extender.policy.core.settings import PolicySettings
from tests.builders import cluster, cpu_nodes

NOW = 1_772_363_100.0
READ_PATHS = {
    "/metrics",
    "/healthz",
    "/readyz",
    "/ui",
    "/ui/main",
    "/debug/view",
    "/debug/state",
    "/debug/gangs",
    "/debug/gangs/{namespace}/{name}",
    "/debug/jobs",
    "/debug/queue",
    "/debug/explain/{namespace}/{name}",
    "/debug/decisions",
    "/debug/topology",
    "/debug/scaler",
}
QUESTION_PATHS = {"/debug/what-if"}
"""Routes that take their question as a body (POST) and change nothing."""


def observe_app() -> FastAPI:
    """The observe listener's app with every route it may serve: the debug routes, the scaler's and the
    schema (the verb listener serves no app: `extender.api.edge.verb_responder`)."""
    state = cluster(*cpu_nodes(2))
    service = make_service(Settings(observe_openapi=True), state, lambda: NOW)
    scaler = ScalerLoop(state, RecordingActuator(), PolicySettings(), lambda: NOW)
    return create_observe_app(service, [make_scaler_router(scaler, lambda: NOW)], debug_routes=True)


def test_no_route_of_the_observe_listener_is_a_plain_def() -> None:
    app = observe_app()
    served: dict[str, set[str]] = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        assert isinstance(route, Route)
        assert inspect.iscoroutinefunction(route.endpoint), f"{route.path}: a plain def runs in the thread pool"
        if isinstance(route, APIRoute):
            served.setdefault(route.path, set()).update(route.methods or ())
    assert set(served) == READ_PATHS | QUESTION_PATHS
    assert all(methods == {"GET", "HEAD"} for path, methods in served.items() if path in READ_PATHS), served
    assert all(served[path] == {"POST"} for path in QUESTION_PATHS), served


def test_a_read_route_cannot_be_declared_as_a_plain_def() -> None:
    router = APIRouter()

    def blocking() -> dict[str, str]:
        return {}

    with pytest.raises(NotOnTheLoop, match="/debug/blocking"):
        read_route(router, "/debug/blocking")(blocking)
    assert router.routes == []
