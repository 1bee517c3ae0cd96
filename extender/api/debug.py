"""Read-only introspection: health, readiness, the model dump, gangs, recent decisions, metrics.

Every route is a GET that reads one snapshot and renders JSON; none changes the model. The gang views
answer "why is my gang pending?": members by phase, the reserved plan, and the reason the last plan
failed or what the gang still waits for. A failed plan is shown whatever candidates a later call may
offer (a view has none at hand), with when it was made and the member and the number of candidate nodes
it was tried with (`lastFailedPlanOffered`); `filter` reuses it only for those nodes
(`gang.state.standing_failed_plan`). `make_probe_router` holds what every listener serves (`/healthz`,
`/readyz`, `/metrics`), `make_debug_router` the `/debug` views an observe listener serves only on request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from extender.api.readiness import readiness
from extender.api.standing_view import RankContext, gang_standing, job_standing
from extender.api.topology_view import TopologyQueryError, render_topology
from extender.api.verbs import Service
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan
from extender.policy.core.views import PodView
from extender.policy.gang.state import GangState, gang_state, is_satisfied, waiting_reason
from extender.policy.rank.jobstates import each_job_state
from extender.policy.rank.queue import queue_of
from extender.state.dump_format import reservation_record
from extender.state.state_dump import dump_state_chunks

NOT_PLANNED_YET = "no member has reached filter since the gang became pending"


def gang_keys_of(snapshot: ClusterSnapshot) -> list[str]:
    """Every PodGroup the model knows, with or without members, and groups named only by pods."""
    return sorted(set(snapshot.groups) | set(snapshot.group_members))


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
    """Gangs with members waiting to be placed and fewer than minMember placed (from the gang queue)."""
    return sum(1 for summary in queue_of(snapshot, settings).summaries.values() if summary.ages)


def json_document(head: dict[str, Any], lists: list[tuple[str, Iterator[object]]], chunk: int) -> Iterator[bytes]:
    """`head` with `lists` appended as JSON arrays, rendered `chunk` items at a time."""
    yield orjson.dumps(head)[:-1]
    for index, (name, items) in enumerate(lists):
        yield (b"," if head or index else b"") + orjson.dumps(name) + b":["
        first = True
        batch: list[object] = []
        for item in items:
            batch.append(item)
            if len(batch) >= chunk:
                yield (b"" if first else b",") + orjson.dumps(batch)[1:-1]
                first, batch = False, []
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

    @router.get("/metrics")
    def metrics() -> Response:
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return router


def make_debug_router(service: Service) -> APIRouter:
    """The `/debug` views of the model: gangs, jobs, the dump, topology, decisions."""
    router = APIRouter()
    add_gang_routes(router, service)
    add_job_routes(router, service)
    add_inspection_routes(router, service)
    return router


def _streamer(service: Service) -> Callable[[Iterator[bytes]], StreamingResponse]:
    """Stream a rendered document at the debug pacing's share of the event loop."""
    share = service.settings.debug_render_share

    def streamed(pieces: Iterator[bytes]) -> StreamingResponse:
        return service.pacing.streamed(pieces, share)

    return streamed


def add_health_routes(router: APIRouter, service: Service) -> None:
    """`/healthz` (the process answers) and `/readyz` (every watched kind has been listed, and the lease
    answered where it must be; `extender.api.readiness`)."""

    @router.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @router.get("/readyz")
    def readyz() -> JSONResponse:
        ready, body = readiness(service.state, service.probes)
        return JSONResponse(body, status_code=200 if ready else 503)


def add_gang_routes(router: APIRouter, service: Service) -> None:
    """`/debug/state` (the model dump), `/debug/gangs` and `/debug/gangs/{namespace}/{name}`."""
    chunk = service.settings.debug_chunk_objects
    streamed = _streamer(service)

    @router.get("/debug/state")
    async def state() -> StreamingResponse:
        return streamed(dump_state_chunks(service.state.snapshot(), chunk))

    @router.get("/debug/gangs")
    async def gangs() -> StreamingResponse:
        snapshot = service.state.snapshot()
        now = service.clock()
        context = RankContext.of(snapshot, service.settings.policy, now)
        summaries = (gang_summary(snapshot, key, now, context) for key in gang_keys_of(snapshot))
        return streamed(json_document({"generation": snapshot.generation}, [("gangs", summaries)], chunk))

    @router.get("/debug/gangs/{namespace}/{name}")
    def gang(namespace: str, name: str) -> JSONResponse:
        snapshot = service.state.snapshot()
        key = f"{namespace}/{name}"
        if key not in snapshot.groups and key not in snapshot.group_members:
            return JSONResponse({"error": f"no PodGroup or gang members named {key}"}, status_code=404)
        now = service.clock()
        return JSONResponse(gang_summary(snapshot, key, now, RankContext.of(snapshot, service.settings.policy, now)))


def job_rows(service: Service, snapshot: ClusterSnapshot, now: float) -> Iterator[dict[str, Any]]:
    """One row per TFJob: its state, the reason, its pods and its standing in the queue."""
    context = RankContext.of(snapshot, service.settings.policy, now)
    return (
        {
            "job": s.job,
            "state": s.state.value,
            "reason": s.reason,
            "pods": s.pods,
            "bound": s.bound,
            "standing": job_standing(context, s.job),
        }
        for s in each_job_state(snapshot, now, service.settings.policy)
    )


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

    @router.get("/debug/jobs")
    async def jobs() -> StreamingResponse:
        snapshot = service.state.snapshot()
        now = service.clock()
        lists: list[tuple[str, Iterator[object]]] = [
            ("jobs", job_rows(service, snapshot, now)),
            ("preemptions", preemption_rows(snapshot)),
            ("shadowPlans", iter(service.loops.shadow_plans(service.settings.shown_loop_actions))),
        ]
        head = {"generation": snapshot.generation, "shadowMode": service.loops.shadow}
        return streamed(json_document(head, lists, chunk))


def add_inspection_routes(router: APIRouter, service: Service) -> None:
    """`/debug/topology` and `/debug/decisions`."""

    @router.get("/debug/topology")
    def topology(
        gang: str | None = None,
        cpu: str | None = None,
        memory: str | None = None,
        gpu: str | None = None,
        depth: int | None = None,
    ) -> JSONResponse:
        shape = {name: value for name, value in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)) if value}
        try:
            body = render_topology(
                service.state.snapshot(), service.settings.policy, gang=gang, requests=shape or None, depth=depth
            )
        except TopologyQueryError as error:
            return JSONResponse({"error": str(error)}, status_code=404 if gang else 400)
        return JSONResponse(body)

    @router.get("/debug/decisions")
    def decisions(pod: str | None = None, limit: int = 50) -> dict[str, Any]:
        return {"decisions": service.history.render(pod=pod, limit=max(1, min(limit, 1000)))}
