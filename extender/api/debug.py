"""Read-only introspection: health, readiness, the model dump, gangs, recent decisions, metrics.

Every route is a GET (and HEAD) that reads one snapshot and renders JSON; none changes the model. The
gang views answer "why is my gang pending?": members by phase, the reserved plan, and the reason the last
plan failed or what the gang still waits for. A failed plan is shown whatever candidates a later call may
offer (a view has none at hand), with when it was made and the member and the number of candidate nodes
it was tried with (`lastFailedPlanOffered`); `filter` reuses it only for those nodes
(`gang.state.standing_failed_plan`). `make_probe_router` holds what every listener serves (`/healthz`,
`/readyz`, `/metrics`), `make_debug_router` the `/debug` views an observe listener serves only on request.
Every route runs on the event loop the verbs are answered on: the documents that grow with the cluster are
computed and sent in steps, one document at a time (`extender.api.pacing`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST

from extender.api.exposition import Exposition
from extender.api.forecast_view import forecast_document
from extender.api.history import render_record
from extender.api.pacing import HAND_BACK, Piece, Pieces, Steps, in_steps, keys_in_steps, sorted_in_steps
from extender.api.read_routes import json_reply, read_route
from extender.api.readiness import readiness
from extender.api.standing_view import RankContext, gang_standing, job_standing
from extender.api.topology_view import TopologyQueryError, topology_document
from extender.api.verbs import Service
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan
from extender.policy.core.views import PodView
from extender.policy.gang.state import GangState, gang_state, is_satisfied, waiting_reason
from extender.policy.rank.jobstates import job_state
from extender.policy.rank.queue import queue_of
from extender.state.dump_format import reservation_record
from extender.state.state_dump import dump_state_chunks

NOT_PLANNED_YET = "no member has reached filter since the gang became pending"


def gang_keys_in_steps(snapshot: ClusterSnapshot) -> Steps[list[str]]:
    """Every PodGroup the model knows, with or without members, and groups named only by pods, sorted."""
    keys = yield from keys_in_steps(snapshot.groups, snapshot.group_members)
    return (yield from sorted_in_steps(keys))


def _phase(pod: PodView, snapshot: ClusterSnapshot) -> str:
    if pod.terminating:
        return "terminating"
    if pod.finished:
        return pod.phase.lower()
    if pod.node_name:
        return "bound"
    return "reserved" if pod.key in snapshot.reservations else "pending"


def gang_summary(snapshot: ClusterSnapshot, key: str, now: float, context: RankContext | None = None) -> dict[str, Any]:
    """One gang's members, plan and reason; with `context`, also its weight and rank (`standing`)."""
    state = gang_state(snapshot, key)
    group = snapshot.groups.get(key)
    members: dict[str, list[str]] = {}
    for pod_key in sorted(snapshot.group_members.get(key, frozenset())):
        pod = snapshot.pods.get(pod_key)
        if pod is not None:
            members.setdefault(_phase(pod, snapshot), []).append(pod.name)
    plan = [
        {**reservation_record(held), "expiresInSeconds": round(held.expires_at - now, 1)}
        for pod_key in sorted(snapshot.group_members.get(key, frozenset()))
        if (held := snapshot.reservations.get(pod_key)) is not None
    ]
    failed = snapshot.failed_plans.get(state.key)
    waiting = waiting_reason(state)
    satisfied = is_satisfied(snapshot, state)
    pending = bool(members.get("pending"))
    return {
        "gang": state.key,
        "podGroup": key,
        "apiGroup": group.api_group if group else None,
        "gatedByKubeScheduler": group.gated_by_scheduler if group else None,
        "minMember": group.min_member if group else None,
        "members": members,
        "status": _gang_status(state, satisfied, waiting, pending),
        "plan": plan,
        "why": state.left_alone_reason
        or (None if satisfied else waiting or (failed.reason if failed else NOT_PLANNED_YET if pending else None)),
        "lastFailedPlanAt": failed.at if failed else None,
        "lastFailedPlanOffered": _offered(failed),
        "standing": gang_standing(context, key) if context is not None else None,
    }


def _offered(failed: FailedPlan | None) -> dict[str, Any] | None:
    """The member the last failed plan pinned and how many candidate nodes kube-scheduler offered it;
    None without a failed plan or for one tried on every node."""
    if failed is None or failed.offered is None:
        return None
    return {"pod": failed.offered.pod, "nodes": len(failed.offered.nodes)}


def _gang_status(state: GangState, satisfied: bool, waiting: str | None, pending: bool) -> str:
    if state.left_to_dra:
        return "left-to-dra"
    if state.leftover:
        return "left-over"
    return "admitted" if satisfied else "waiting" if waiting else "pending" if pending else "idle"


def gangs_pending(snapshot: ClusterSnapshot, settings: PolicySettings) -> int:
    """Gangs with members waiting to be placed and fewer than minMember placed: the gang queue's wait queue,
    counted without a walk over every gang (the gauge is read at each render of `/metrics`)."""
    return len(queue_of(snapshot, settings).order)


def gangs_partly_bound(snapshot: ClusterSnapshot, settings: PolicySettings) -> int:
    """Waiting gangs with some but not all of their minimum placed (the queue keeps them as a set)."""
    return len(queue_of(snapshot, settings).partly_bound)


def json_document(
    head: dict[str, Any], lists: list[tuple[str, Iterator[object]]], chunk: int, *, planned_items: int = 0
) -> Iterator[Piece]:
    """`head` with `lists` appended as JSON arrays, encoded `chunk` items at a time, pausing after each item;
    taking each of the first `planned_items` items of a list may cost a plan, so the loop is handed back
    before each of them."""
    yield orjson.dumps(head)[:-1]
    for index, (name, items) in enumerate(lists):
        yield (b"," if head or index else b"") + orjson.dumps(name) + b":["
        first = True
        batch: list[object] = []
        yield HAND_BACK if planned_items else None
        for taken, item in enumerate(items, start=1):
            batch.append(item)
            if len(batch) >= chunk:
                yield (b"" if first else b",") + orjson.dumps(batch)[1:-1]
                first, batch = False, []
            yield HAND_BACK if taken < planned_items else None
        if batch:
            yield (b"" if first else b",") + orjson.dumps(batch)[1:-1]
        yield b"]"
    yield b"}"


def make_router(service: Service) -> APIRouter:
    """Every read route: the probes, `/metrics` and the `/debug` views."""
    router = make_probe_router(service)
    router.include_router(make_debug_router(service))
    return router


def make_probe_router(service: Service) -> APIRouter:
    """`/healthz`, `/readyz` and `/metrics`: what reveals nothing of the cluster's workloads."""
    router = APIRouter()
    add_health_routes(router, service)
    exposition = Exposition(service.metrics.registry)

    @read_route(router, "/metrics")
    async def metrics() -> Response:
        return Response(await exposition.latest(), media_type=CONTENT_TYPE_LATEST)

    return router


def make_debug_router(service: Service) -> APIRouter:
    """The `/debug` views of the model: gangs, jobs, the dump, topology, decisions."""
    router = APIRouter()
    add_gang_routes(router, service)
    add_job_routes(router, service)
    add_inspection_routes(router, service)
    return router


def _streamer(service: Service) -> Callable[[Pieces], StreamingResponse]:
    """Stream a document step by step at the debug pacing's share of the event loop."""
    share = service.settings.debug_render_share

    def streamed(pieces: Pieces) -> StreamingResponse:
        return service.pacing.streamed(pieces, share)

    return streamed


def add_health_routes(router: APIRouter, service: Service) -> None:
    """`/healthz` (the process answers) and `/readyz` (every watched kind has been listed, and the lease
    answered where it must be; `extender.api.readiness`)."""

    @read_route(router, "/healthz")
    async def healthz() -> Response:
        return json_reply({"status": "ok"})

    @read_route(router, "/readyz")
    async def readyz() -> Response:
        ready, body = readiness(service.state, service.probes)
        return json_reply(body, 200 if ready else 503)


def add_gang_routes(router: APIRouter, service: Service) -> None:
    """`/debug/state` (the model dump), `/debug/gangs` and `/debug/gangs/{namespace}/{name}`."""
    chunk = service.settings.debug_chunk_objects
    streamed = _streamer(service)

    @read_route(router, "/debug/state")
    async def state() -> StreamingResponse:
        return streamed(dump_state_chunks(service.state.snapshot(), chunk))

    def gangs_document() -> Iterator[Piece]:
        snapshot = service.state.snapshot()
        now = service.clock()
        context = RankContext.of(snapshot, service.settings.policy, now)
        yield None
        keys = yield from gang_keys_in_steps(snapshot)
        summaries = (
            {
                **gang_summary(snapshot, key, now, context),
                "startForecast": forecast_document(service.loops, snapshot, key),
            }
            for key in keys
        )
        yield from json_document({"generation": snapshot.generation}, [("gangs", summaries)], chunk)

    @read_route(router, "/debug/gangs")
    async def gangs() -> StreamingResponse:
        return streamed(gangs_document())

    def one_gang(key: str) -> Steps[dict[str, Any] | None]:
        snapshot = service.state.snapshot()
        if key not in snapshot.groups and key not in snapshot.group_members:
            return None
        now = service.clock()
        context = RankContext.of(snapshot, service.settings.policy, now)
        yield None
        return {
            **gang_summary(snapshot, key, now, context),
            "startForecast": forecast_document(service.loops, snapshot, key),
        }

    @read_route(router, "/debug/gangs/{namespace}/{name}")
    async def gang(namespace: str, name: str) -> Response:
        key = f"{namespace}/{name}"
        summary = await in_steps(one_gang(key))
        if summary is None:
            return json_reply({"error": f"no PodGroup or gang members named {key}"}, 404)
        return json_reply(summary)


def job_rows(service: Service, snapshot: ClusterSnapshot, now: float, keys: list[str]) -> Iterator[dict[str, Any]]:
    """One row per TFJob of `keys`: its state, the reason, its pods and its standing in the queue."""
    settings = service.settings.policy
    context = RankContext.of(snapshot, settings, now)
    for key in keys:
        status = job_state(snapshot, key, now, settings)
        yield {
            "job": key,
            "state": status.state.value,
            "reason": status.reason,
            "pods": status.pods,
            "bound": status.bound,
            "standing": job_standing(context, key),
        }


def preemption_rows(snapshot: ClusterSnapshot) -> Iterator[dict[str, Any]]:
    """One row per recorded preemption, by gang."""
    return (
        {
            "gang": r.gang,
            "reason": r.reason,
            "at": r.at,
            "scaledIn": list(r.scaled_in),
            "evicted": list(r.evicted),
            "victims": sorted(r.victims),
        }
        for _, r in sorted(snapshot.preemptions.items())
    )


def add_job_routes(router: APIRouter, service: Service) -> None:
    """`/debug/jobs`: every TFJob's state, the recorded preemptions and the shadow loops' plans."""
    chunk = service.settings.debug_chunk_objects
    streamed = _streamer(service)

    def jobs_document() -> Iterator[Piece]:
        snapshot = service.state.snapshot()
        now = service.clock()
        job_keys = yield from keys_in_steps(snapshot.jobs)
        keys = yield from sorted_in_steps(job_keys)
        rows = job_rows(service, snapshot, now, keys)
        lists: list[tuple[str, Iterator[object]]] = [
            ("jobs", rows),
            ("preemptions", preemption_rows(snapshot)),
            ("shadowPlans", iter(service.loops.shadow_plans(service.settings.shown_loop_actions))),
        ]
        head = {"generation": snapshot.generation, "shadowMode": service.loops.shadow}
        yield from json_document(head, lists, chunk)

    @read_route(router, "/debug/jobs")
    async def jobs() -> StreamingResponse:
        return streamed(jobs_document())


def add_inspection_routes(router: APIRouter, service: Service) -> None:
    """`/debug/topology` and `/debug/decisions`."""
    chunk = service.settings.debug_chunk_objects
    streamed = _streamer(service)

    @read_route(router, "/debug/topology")
    async def topology(
        gang: str | None = None,
        cpu: str | None = None,
        memory: str | None = None,
        gpu: str | None = None,
        depth: int | None = None,
    ) -> Response:
        shape = {name: value for name, value in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)) if value}
        try:
            document = topology_document(
                service.state.snapshot(), service.settings.policy, gang=gang, requests=shape or None, depth=depth
            )
        except TopologyQueryError as error:
            return json_reply({"error": str(error)}, 404 if gang else 400)
        return streamed(document)

    @read_route(router, "/debug/decisions")
    async def decisions(pod: str | None = None, limit: int = 50) -> StreamingResponse:
        records = service.history.latest(pod=pod, limit=max(1, min(limit, 1000)))
        return streamed(json_document({}, [("decisions", (render_record(record) for record in records))], chunk))
