"""`GET /debug/queue` and `GET /debug/explain/{namespace}/{name}`: the wait queue and one job's standing.

`/debug/queue` lists every gang with pending members — those whose plan is reserved first, then the wait
queue in rank order (the order admission defers in) — each with its weights, starvation clock and what
it waits for (`policy.rank.standing`). It is streamed a few gangs at a time: explaining a gang may cost a
placement, and kube-scheduler's calls are answered in between. `/debug/explain` resolves a TFJob, a
PodGroup or a pod to its gang and answers what `tfjob-extender explain` prints; an object the model does
not know is a 404 whose body still says so (`status: unknown`). Read-only, like every debug route.
"""

from __future__ import annotations

from itertools import islice

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, StreamingResponse

from extender.api.debug import json_document
from extender.api.standing_view import UNKNOWN, RankContext, render_explanation, render_standing
from extender.api.verbs import Service
from extender.policy.rank.standing import explain_queue

QUEUE_CHUNK_GANGS = 4
"""Gangs explained between two hand-backs of the event loop (each may cost a placement)."""
MAX_QUEUE_ROWS = 10_000
"""Most gangs `/debug/queue?limit=` lists."""


def make_queue_router(service: Service) -> APIRouter:
    router = APIRouter()

    @router.get("/debug/queue")
    async def queue(limit: int = Query(default=1000, ge=1, le=MAX_QUEUE_ROWS)) -> StreamingResponse:
        snapshot = service.state.snapshot()
        now = service.clock()
        settings = service.settings
        context = RankContext.of(snapshot, settings.policy, now)
        standings = explain_queue(snapshot, settings.policy, now, settings.queue_explained_gangs)
        rows = (render_standing(standing, context) for standing in islice(standings, limit))
        head = {"generation": snapshot.generation, "at": now, "waiting": len(context.positions)}
        document = json_document(head, [("queue", rows)], QUEUE_CHUNK_GANGS)
        return service.pacing.streamed(document, settings.debug_render_share)

    @router.get("/debug/explain/{namespace}/{name}")
    def explain(namespace: str, name: str) -> JSONResponse:
        context = RankContext.of(service.state.snapshot(), service.settings.policy, service.clock())
        body = render_explanation(context, namespace, name)
        if body["status"] == UNKNOWN:
            return JSONResponse({**body, "error": body["summary"]}, status_code=404)
        return JSONResponse(body)

    return router
