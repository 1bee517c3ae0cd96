"""`GET /ui`: the live, read-only page; `GET /ui/main` its refreshable part; `GET /debug/view` its data.

The page is rendered on the server with Jinja2 from `page_model` (no build toolchain, no client
framework). A few lines of script poll `/debug/view?summary=true` (the model generation and clock, a few
bytes) every `REFRESH_S`, and fetch the re-rendered `<main>` from `/ui/main` when the model changed, or
every `CHART_EVERY` polls so the utilisation chart moves on. Every route is a GET that reads; templates
autoescape everything they insert.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from extender.api.page_model import PageLimits, page_model
from extender.api.verbs import Service

REFRESH_S = 2.0
"""Seconds between two polls of the page's script."""
CHART_EVERY = 5
"""Polls between two re-renders when the model did not change (the chart still moves with time)."""

TEMPLATES = Environment(loader=PackageLoader("extender.api", "templates"), autoescape=select_autoescape(["html"]))


def make_ui_router(service: Service, limits: PageLimits | None = None) -> APIRouter:
    router = APIRouter()
    shown = limits or PageLimits()

    @router.get("/ui", response_class=HTMLResponse)
    def page() -> HTMLResponse:
        html = TEMPLATES.get_template("ui.html").render(
            view=page_model(service, shown), refresh_ms=int(REFRESH_S * 1000), chart_every=CHART_EVERY
        )
        return HTMLResponse(html)

    @router.get("/ui/main", response_class=HTMLResponse)
    def main() -> HTMLResponse:
        return HTMLResponse(TEMPLATES.get_template("ui_main.html").render(view=page_model(service, shown)))

    @router.get("/debug/view")
    def view(summary: bool = False) -> dict[str, Any]:
        if summary:
            snapshot = service.state.snapshot()
            now = service.clock()
            return {"generation": snapshot.generation, "at": now, "clock": _clock(now)}
        return page_model(service, shown)

    return router


def _clock(now: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(now))
