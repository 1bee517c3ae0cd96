"""The observe listener's app: metrics, probes and, on request, the debug routes and the page, read-only.

kube-scheduler reaches the verbs on 127.0.0.1 inside the scheduler pod, and nothing else should; yet
Prometheus must scrape `/metrics` and people want `/ui` from outside the pod. So `serve --observe-port`
opens a second listener (usually on 0.0.0.0) whose app changes nothing and has no verbs: its routes are GET
routes but one, `POST /debug/what-if`, which takes a TFJob manifest to ask about and changes nothing either;
any other method is a 405 JSON error, a verb path a 404. By default it serves `/metrics`, `/healthz` and
`/readyz` only; `--observe-debug` adds `/debug/*` (`/debug/explain` and `/debug/what-if` are what
`tfjob-extender explain` reads) and `/ui`,
which the listener guards with its own token checks (`extender.api.auth`; the open paths are the probes
and `/metrics`). A process that runs only loops (`tfjob-extender loops`) serves the same app as its one
listener, over a service made from its own model. The listener is the HTTP edge
(`extender.api.edge.app_responder`), bounded as the verb listener is; the process's runtime
(`extender.cli.runtime`) starts and stops what the app reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse

from extender.api import debug
from extender.api.app import read_only_app
from extender.api.queue_routes import make_queue_router
from extender.api.ui import make_ui_router
from extender.api.verbs import Service
from extender.api.what_if_route import WHAT_IF_PATH, make_what_if_router

READ_METHODS = frozenset({"GET", "HEAD"})
QUESTION_PATHS = frozenset({WHAT_IF_PATH})
"""Routes that take their question as a POST body: answered, never acted on (their route refuses any other
method itself, naming the one it takes)."""


def create_observe_app(service: Service, routers: Sequence[APIRouter] = (), *, debug_routes: bool = False) -> FastAPI:
    """The read-only app: `/metrics`, `/healthz`, `/readyz`; with `debug_routes` also the `/debug` views, the
    queue, the what-if, the page and `routers` (`/debug/scaler`), and with `Settings.observe_openapi` their schema
    (`/openapi.json`, built here, not on the event loop at its first request: milliseconds)."""

    app = read_only_app("tfjob-extender (observe)", openapi=debug_routes and service.settings.observe_openapi)
    app.include_router(debug.make_probe_router(service))
    if debug_routes:
        app.include_router(debug.make_debug_router(service))
        app.include_router(make_queue_router(service))
        app.include_router(make_what_if_router(service))
        app.include_router(make_ui_router(service))
        for router in routers:
            app.include_router(router)
    if app.openapi_url:
        app.openapi()

    @app.middleware("http")
    async def read_only(request: Request, call_next):  # type: ignore[no-untyped-def]
        if request.method not in READ_METHODS and request.url.path not in QUESTION_PATHS:
            error = f"{request.method} {request.url.path}: the observe listener is read-only (GET only)"
            return JSONResponse({"error": error}, status_code=405, headers={"allow": "GET, HEAD"})
        return await call_next(request)

    return app
