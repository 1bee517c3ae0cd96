"""`GET /ui`: the live, read-only page; `GET /ui/main` its refreshable part; `GET /debug/view` its data.

The page is rendered on the server with Jinja2 from `page_model` (no build toolchain, no client
framework). A few lines of script poll `/debug/view?summary=true` (the model generation and clock, a few
bytes) every `REFRESH_S`, and fetch the re-rendered `<main>` from `/ui/main` when the model changed, or
every `CHART_EVERY` polls so the utilisation chart moves on. Every route is a GET that reads; templates
autoescape everything they insert.

At 5000 nodes the document and its HTML take over a hundred milliseconds of work, so both are made in steps on the
event loop, one page at a time among the documents (`extender.api.pacing`): the template is rendered with
`Template.generate`, handing the loop back every `TEMPLATE_PIECES_PER_PAUSE` pieces. What was made for one
model generation is served again for up to `PAGE_REUSE_S`: every reader polling the same model shares
one build, and `/ui`, `/ui/main` and `/debug/view` share one document.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, Template, select_autoescape

from extender.api.pacing import Steps, encoded_in_steps
from extender.api.page_model import PageLimits, page_model_steps
from extender.api.read_routes import json_reply, read_route
from extender.api.verbs import Service

REFRESH_S = 2.0
"""Seconds between two polls of the page's script."""
CHART_EVERY = 5
"""Polls between two re-renders when the model did not change (the chart still moves with time)."""
PAGE_REUSE_S = REFRESH_S
"""Longest a document and its HTML, made for one model generation, are served again, seconds."""
TEMPLATE_PIECES_PER_PAUSE = 64
"""Pieces of template output rendered between two points where the render may pause (microseconds each)."""
ROWS_FREED_PER_PAUSE = 256
"""Rows of an old page freed between two pauses (tens of microseconds)."""
PAGE_TEMPLATES = ("ui.html", "ui_main.html")
VIEW_JSON = "view.json"
"""The name `/debug/view`'s body is kept under beside the rendered templates."""

TEMPLATES = Environment(loader=PackageLoader("extender.api", "templates"), autoescape=select_autoescape(["html"]))


@dataclass
class BuiltPage:
    """A page document, when it was made (monotonic seconds), and what was rendered from it."""

    view: dict[str, Any]
    made_at: float
    rendered: dict[str, bytes] = field(default_factory=dict)


class Pages:
    """The page made last, and how a request gets a body from it or from a new one."""

    def __init__(self, service: Service, limits: PageLimits) -> None:
        self.service = service
        self.limits = limits
        self.latest: BuiltPage | None = None
        self.templates = {name: TEMPLATES.get_template(name) for name in PAGE_TEMPLATES}
        """Compiled when the app is built, not on the event loop while it serves (milliseconds each)."""

    def body_steps(self, name: str) -> Steps[bytes]:
        """The body `name` (a template, or `VIEW_JSON`) for the current model, made in steps unless kept."""
        page = self.latest
        generation = self.service.state.snapshot().generation
        if page is None or page.view["generation"] != generation or time.monotonic() - page.made_at >= PAGE_REUSE_S:
            self.latest = None
            if page is not None:
                yield from released_in_steps(page)
            view = yield from page_model_steps(self.service, self.limits)
            page = self.latest = BuiltPage(view, time.monotonic())
        body = page.rendered.get(name)
        if body is None:
            if name == VIEW_JSON:
                body = yield from encoded_in_steps(page.view)
            else:
                context = {"view": page.view, "refresh_ms": int(REFRESH_S * 1000), "chart_every": CHART_EVERY}
                body = yield from rendered_steps(self.templates[name], context)
            page.rendered[name] = body
        return body

    async def body(self, name: str) -> bytes:
        service = self.service
        return await service.pacing.computed(self.body_steps(name), service.settings.debug_render_share)


def released_in_steps(page: BuiltPage) -> Steps[None]:
    """Free a page no longer served a few rows at a time (its lists hold thousands of rows: freeing them
    at once takes most of a millisecond). Only the page's maker holds it: pages are made one at a time."""
    page.rendered.clear()
    for value in page.view.values():
        while isinstance(value, list) and value:
            del value[-ROWS_FREED_PER_PAUSE:]
            yield None


def rendered_steps(template: Template, context: dict[str, Any]) -> Steps[bytes]:
    """`template` rendered with `context`, pausing every `TEMPLATE_PIECES_PER_PAUSE` pieces of output (joined
    then, so that the small strings are freed as the render goes, not all at its end)."""
    chunks: list[str] = []
    pieces: list[str] = []
    for piece in template.generate(context):
        pieces.append(piece)
        if len(pieces) >= TEMPLATE_PIECES_PER_PAUSE:
            chunks.append("".join(pieces))
            pieces.clear()
            yield None
    chunks.append("".join(pieces))
    return "".join(chunks).encode()


def make_ui_router(service: Service, limits: PageLimits | None = None) -> APIRouter:
    router = APIRouter()
    pages = Pages(service, limits or PageLimits())

    @read_route(router, "/ui", response_class=HTMLResponse)
    async def page() -> HTMLResponse:
        return HTMLResponse(await pages.body("ui.html"))

    @read_route(router, "/ui/main", response_class=HTMLResponse)
    async def main() -> HTMLResponse:
        return HTMLResponse(await pages.body("ui_main.html"))

    @read_route(router, "/debug/view")
    async def view(summary: bool = False) -> Response:
        if summary:
            now = service.clock()
            return json_reply({"generation": service.state.snapshot().generation, "at": now, "clock": _clock(now)})
        return Response(await pages.body(VIEW_JSON), media_type="application/json")

    return router


def _clock(now: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(now))
