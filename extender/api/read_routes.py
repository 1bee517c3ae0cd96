"""How a read route is declared: GET and HEAD, answered on the event loop.

FastAPI runs a plain `def` route in its thread pool, where it competes with kube-scheduler's calls for
the interpreter a switch interval at a time for as long as it runs. A read route is therefore a coroutine
function, answered on the event loop between the verbs, and what it computes it computes in steps
(`extender.api.pacing`). `read_route` declares one for GET and HEAD and refuses a plain function; a HEAD
request is answered with GET's status and headers and no body (`BodilessHead`), whichever server carries it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from fastapi import APIRouter, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


class NotOnTheLoop(TypeError):
    """A read route declared as a plain function: it would run in the thread pool."""


def read_route(router: APIRouter, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
    """Declare the decorated coroutine function as `router`'s GET and HEAD routes at `path` (HEAD is left
    out of the schema: one route answering both would give two operations the same id)."""

    def declare(endpoint: Endpoint) -> Endpoint:
        if not inspect.iscoroutinefunction(endpoint):
            raise NotOnTheLoop(f"{path}: a read route is an `async def` (a plain def runs in the thread pool)")
        router.add_api_route(path, endpoint, methods=["GET"], **options)
        router.add_api_route(path, endpoint, methods=["HEAD"], include_in_schema=False, **options)
        return endpoint

    return declare


def json_reply(body: Any, status_code: int = 200) -> Response:
    """`body` as a JSON response (encoded by orjson: a large view in a fraction of what `json` takes)."""
    return Response(orjson.dumps(body), status_code=status_code, media_type="application/json")


class BodilessHead:
    """ASGI middleware: the response to a HEAD request keeps its status and headers and sends no body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def headers_only(message: Message) -> None:
            nonlocal ended
            if message["type"] != "http.response.body":
                await send(message)
            elif not ended and not message.get("more_body", False):
                ended = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app(scope, receive, headers_only)
