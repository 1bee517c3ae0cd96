"""`GET /debug/queue` and `GET /debug/explain/{namespace}/{name}`: the wait queue and one job's standing.

`/debug/queue` lists every gang with pending members — those whose plan is reserved first, then the wait
queue in rank order (the order admission defers in) — each with its weights, starvation clock and what
it waits for (`policy.rank.standing`). `/debug/explain` resolves a TFJob, a PodGroup or a pod to its gang
and answers what `tfjob-extender explain` prints; an object the model does not know is a 404 whose body
still says so (`status: unknown`). Explaining a gang may cost a placement, about what one `filter` costs:
both documents plan one gang per step, handing the event loop back in between, and each waits for the
documents before it (`extender.api.pacing`), so a verb waits one plan at most. Read-only, like every
debug route.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import Response, StreamingResponse

from extender.api.debug import json_document
from extender.api.forecast_view import forecast_document
from extender.api.pacing import Piece, Steps
from extender.api.read_routes import json_reply, read_route
from extender.api.standing_view import UNKNOWN, WAITING, RankContext, explanation_in_steps, render_standing
from extender.api.verbs import Service
from extender.policy.rank.standing import explain_queue

MAX_QUEUE_ROWS = 10_000
"""Most gangs `/debug/queue?limit=` lists."""


def make_queue_router(service: Service) -> APIRouter:
    router = APIRouter()
    settings = service.settings

    def queue_document(limit: int) -> Iterator[Piece]:
        snapshot = service.state.snapshot()
        now = service.clock()
        context = RankContext.of(snapshot, settings.policy, now)
        yield None
        standings = explain_queue(snapshot, settings.policy, now, settings.queue_explained_gangs)
        rows = (render_standing(standing, context) for standing in islice(standings, limit))
        head = {"generation": snapshot.generation, "at": now, "waiting": len(context.positions)}
        document = json_document(
            head, [("queue", rows)], settings.debug_chunk_objects, planned_items=settings.queue_explained_gangs
        )
        yield from document

    @read_route(router, "/debug/queue")
    async def queue(limit: int = Query(default=1000, ge=1, le=MAX_QUEUE_ROWS)) -> StreamingResponse:
        return service.pacing.streamed(queue_document(limit), settings.debug_render_share)

    def explanation(namespace: str, name: str) -> Steps[dict[str, Any]]:
        context = RankContext.of(service.state.snapshot(), settings.policy, service.clock())
        yield None
        body = yield from explanation_in_steps(context, namespace, name)
        if body.get("podGroup") and body.get("status") == WAITING:
            body["startForecast"] = forecast_document(service.loops, context.snapshot, body["podGroup"])
        return body

    @read_route(router, "/debug/explain/{namespace}/{name}")
    async def explain(namespace: str, name: str) -> Response:
        body = await service.pacing.computed(explanation(namespace, name), settings.debug_render_share)
        if body["status"] == UNKNOWN:
            return json_reply({**body, "error": body["summary"]}, 404)
        return json_reply(body)

    return router
