"""HTTP for the scaler: `/debug/scaler` beside the extender's routes, or a small app of its own when the
scaler runs alone (`/healthz`, `/debug/scaler`, `/metrics`). Read-only: every route renders state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from extender.api.app import lifecycle_app
from extender.scaler import ScalerLoop


def make_scaler_router(loop: ScalerLoop, clock: Callable[[], float]) -> APIRouter:
    router = APIRouter()

    @router.get("/debug/scaler")
    def scaler() -> dict[str, Any]:
        return loop.render(clock())

    return router


def create_loops_app(
    routers: Sequence[APIRouter],
    registry: CollectorRegistry,
    *,
    on_start: Callable[[], None],
    on_stop: Callable[[], None],
) -> FastAPI:
    """The HTTP side of a process that runs only loops: `/healthz`, their `/debug` routes and `/metrics`."""
    app = lifecycle_app("tfjob-extender loops", on_start, on_stop)
    for router in routers:
        app.include_router(router)

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app
