"""Every read route runs on the event loop: the apps hold no plain `def` route, and none can be declared."""

from __future__ import annotations

import inspect

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Route

from extender.api.app import create_app, make_service
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


def read_apps() -> dict[str, FastAPI]:
    """The verb listener's app (behind its gateway) and the observe listener's, with every route they may
    serve: the debug routes, the scaler's and the schema."""
    state = cluster(*cpu_nodes(2))
    service = make_service(Settings(observe_openapi=True), state, lambda: NOW)
    scaler = ScalerLoop(state, RecordingActuator(), PolicySettings(), lambda: NOW)
    routers = [make_scaler_router(scaler, lambda: NOW)]
    gateway = create_app(service, routers=routers)
    assert isinstance(gateway.app, FastAPI)
    return {"verbs": gateway.app, "observe": create_observe_app(service, routers, debug_routes=True)}


@pytest.mark.parametrize("listener", ["verbs", "observe"])
def test_no_route_of_a_listener_is_a_plain_def(listener: str) -> None:
    app = read_apps()[listener]
    served: dict[str, set[str]] = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        assert isinstance(route, Route)
        assert inspect.iscoroutinefunction(route.endpoint), f"{route.path}: a plain def runs in the thread pool"
        if isinstance(route, APIRoute):
            served.setdefault(route.path, set()).update(route.methods or ())
    assert set(served) == READ_PATHS
    assert all(methods == {"GET", "HEAD"} for methods in served.values()), served


def test_a_read_route_cannot_be_declared_as_a_plain_def() -> None:
    router = APIRouter()

    def blocking() -> dict[str, str]:
        return {}

    with pytest.raises(NotOnTheLoop, match="/debug/blocking"):
        read_route(router, "/debug/blocking")(blocking)
    assert router.routes == []
