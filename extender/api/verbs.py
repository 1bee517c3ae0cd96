"""`POST /filter`, `/prioritize`, `/preempt`: decode → snapshot → policy → encode, always a 200 JSON reply.

Each handler reads the body under a size cap, refuses to decide before the model has synced, feeds the
pod it was asked about into the model when a watch event has not delivered it yet, calls the pure policy
on the current snapshot (a filter decides again for a short while when the model is behind kube-scheduler
on a gang kube-scheduler gates), commits the gang plan a filter decision carries, records the decision for
`/debug/decisions`, and encodes the reply. Any failure — a malformed body, an unreadable pod, a bug —
becomes a readable `Error` in a 200 reply; kube-scheduler never sees a non-JSON body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from extender.api import wire
from extender.api.history import Decision, DecisionHistory, Record
from extender.api.metrics import Metrics
from extender.config import Settings
from extender.policy import filter_pod, preempt_pod, prioritize_pod
from extender.policy.model import ClusterSnapshot, PodView
from extender.policy.preemption import job_level_preemption
from extender.state import convert
from extender.state.store import ClusterState

log = logging.getLogger(__name__)

NOT_SYNCED = "cache not synced"


@dataclass(frozen=True, slots=True)
class Service:
    """What the HTTP layer needs: settings, the model, a clock, and where decisions are reported."""

    settings: Settings
    state: ClusterState
    clock: Callable[[], float]
    history: DecisionHistory
    metrics: Metrics


class BodyTooLarge(wire.WireError):
    pass


def _pod_in_model(service: Service, raw_pod: wire.Json) -> tuple[PodView, ClusterSnapshot]:
    """The pod as the model knows it (feeding the request's copy in first if the watch lags)."""
    service.state.release_expired(service.clock())
    snapshot = service.state.snapshot()
    known = snapshot.pods.get(convert.pod_key(raw_pod))
    if known is not None:
        return known, snapshot
    pod = convert.pod_view(raw_pod)
    service.state.observe_pod(raw_pod)
    snapshot = service.state.snapshot()
    return snapshot.pods.get(pod.key, pod), snapshot


Handler = Callable[[Service, bytes], bytes]
EMPTY_REPLIES: dict[str, dict[str, object]] = {
    "filter": {"NodeNames": None, "Nodes": None, "FailedNodes": None, "FailedAndUnresolvableNodes": None},
    "prioritize": {},
    "preempt": {"NodeNameToMetaVictims": {}},
}


def answer(service: Service, verb: str, body: bytes) -> bytes:
    """The reply to one extender call, errors included; everything but the HTTP framing."""
    started = time.perf_counter()
    try:
        if not service.state.is_synced():
            raise wire.WireError(NOT_SYNCED)
        reply = HANDLERS[verb](service, body)
    except (wire.WireError, convert.ConversionError) as error:
        service.metrics.decisions.labels(verb, "bad-request").inc()
        reply = wire.encode_error(f"tfjob-extender {verb}: {error}", **EMPTY_REPLIES[verb])
    except Exception as error:
        log.exception("%s failed", verb)
        service.metrics.decisions.labels(verb, "error").inc()
        reply = wire.encode_error(f"tfjob-extender {verb}: internal error: {error!r}", **EMPTY_REPLIES[verb])
    service.metrics.verb_seconds.labels(verb).observe(time.perf_counter() - started)
    return reply


class VerbGateway:
    """The ASGI entry point: extender verbs are answered here directly, everything else goes to `app`.

    kube-scheduler waits for each call before it moves on, so the verbs skip routing and request and
    response objects altogether: read the body (under the cap), answer, send one JSON body.
    """

    def __init__(self, service: Service, app: ASGIApp) -> None:
        self.service = service
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        verb = scope["path"][1:] if scope["type"] == "http" and scope["method"] == "POST" else ""
        if verb not in HANDLERS:
            await self.app(scope, receive, send)
            return
        try:
            body = await self._body(scope, receive)
            reply = answer(self.service, verb, body)
        except BodyTooLarge as error:
            reply = wire.encode_error(f"tfjob-extender {verb}: {error}", **EMPTY_REPLIES[verb])
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        """The request body, refusing anything over the cap without reading it all."""
        limit = self.service.settings.max_body_bytes
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"request body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks)


def _record(service: Service, verb: str, pod: PodView, snapshot: ClusterSnapshot, decision: Decision) -> None:
    service.metrics.decisions.labels(verb, decision.outcome).inc()
    service.history.add(Record(service.clock(), verb, pod.key, snapshot.generation, decision))


def _filter(service: Service, body: bytes) -> bytes:
    args = wire.parse_extender_args(body)
    pod, snapshot = _pod_in_model(service, args.pod)
    decision = filter_pod(snapshot, pod, args.candidates, service.settings.policy, service.clock())
    deadline = time.monotonic() + service.settings.model_catch_up_s
    while decision.model_behind and time.monotonic() < deadline:
        time.sleep(service.settings.model_catch_up_poll_s)
        pod, snapshot = _pod_in_model(service, args.pod)
        decision = filter_pod(snapshot, pod, args.candidates, service.settings.policy, service.clock())
    if decision.reserve or decision.release_groups or decision.failed_plan is not None:
        service.state.commit_plan(
            release_groups=decision.release_groups, reserve=decision.reserve, failed_plan=decision.failed_plan
        )
    _record(service, "filter", pod, snapshot, decision)
    return wire.encode_filter(decision, args)


def _prioritize(service: Service, body: bytes) -> bytes:
    args = wire.parse_extender_args(body)
    pod, snapshot = _pod_in_model(service, args.pod)
    decision = prioritize_pod(snapshot, pod, args.candidates, service.settings.policy)
    _record(service, "prioritize", pod, snapshot, decision)
    return wire.encode_scores(decision, args.candidates)


def _preempt(service: Service, body: bytes) -> bytes:
    args = wire.parse_preemption_args(body)
    pod, snapshot = _pod_in_model(service, args.pod)
    if pod.group and pod.scheduler_name == service.settings.policy.scheduler_name:
        decision = job_level_preemption(pod)
    else:
        decision = preempt_pod(args.victims, args.pdb_violations)
    _record(service, "preempt", pod, snapshot, decision)
    return wire.encode_preemption(decision)


HANDLERS: dict[str, Handler] = {"filter": _filter, "prioritize": _prioritize, "preempt": _preempt}
