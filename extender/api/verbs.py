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
from dataclasses import dataclass, field

from extender.api import wire
from extender.api.history import Decision, DecisionHistory, Record
from extender.api.loopviews import LoopViews
from extender.api.metrics import Metrics
from extender.api.pacing import Pacing
from extender.api.readiness import Probes
from extender.api.utilisation import UtilisationHistory
from extender.config import Settings
from extender.policy import prioritize_pod
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.policy.preemption.verb import decide_preempt
from extender.policy.verbs.filtering import model_kept_changing
from extender.state import convert
from extender.state.commits import filter_and_commit
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
    publish: Callable[[LedgerChange, ClusterSnapshot], None] = lambda change, snapshot: None
    """Where plans reserved by `filter` are published for other processes (the API server, live)."""
    loops: LoopViews = field(default_factory=LoopViews)
    """The loops running in this process, as the debug routes and the page read them."""
    utilisation: UtilisationHistory = field(default_factory=UtilisationHistory)
    """Cluster utilisation over time, for the page's chart."""
    pacing: Pacing = field(default_factory=Pacing)
    """How the large debug documents share the process with the verbs."""
    probes: Probes = field(default_factory=Probes)
    """What `/readyz` weighs beyond the model's sync (the informers' failures, the lease)."""


class PodNotSeenYet(Exception):
    """The pod asked about is a gang member the model has not received from its watch yet."""


def _pod_in_model(service: Service, raw_pod: wire.Json, *, final: bool) -> tuple[PodView, ClusterSnapshot]:
    """The pod as the model knows it, or, for a pod the watch has not delivered, the request's copy —
    used read-only, never stored: only the API server feeds the model. Before its last attempt (`final`),
    a call about an unseen gang member raises `PodNotSeenYet`, so the caller can let the watch catch up."""
    service.state.release_expired(service.clock())
    snapshot = service.state.snapshot()
    known = snapshot.pods.get(convert.pod_key(raw_pod))
    if known is not None and known.uid == _uid_of(raw_pod, known.uid):
        return known, snapshot
    pod = convert.pod_view(raw_pod)
    if pod.group and not final:
        raise PodNotSeenYet(pod.key)
    return pod, snapshot


def _uid_of(raw_pod: wire.Json, default: str) -> str:
    """The request's pod UID, or `default` when it names none (a pod recreated under the same name — as
    training-operator recreates evicted workers — has a new UID, and the model's copy is then stale)."""
    meta = raw_pod.get("metadata")
    uid = meta.get("uid") if isinstance(meta, dict) else None
    return uid if isinstance(uid, str) and uid else default


Handler = Callable[[Service, bytes, bool], bytes]
EMPTY_REPLIES: dict[str, dict[str, object]] = {
    "filter": {"NodeNames": None, "Nodes": None, "FailedNodes": None, "FailedAndUnresolvableNodes": None},
    "preempt": {"NodeNameToMetaVictims": {}},
}


def error_reply(verb: str, message: str) -> bytes:
    """A 200 body kube-scheduler can decode for a failed call. A HostPriorityList has no `Error` field
    (kube-scheduler ignores prioritize failures), so a failed prioritize is an empty list and the
    message goes to the log."""
    if verb == "prioritize":
        log.warning("%s", message)
        return b"[]"
    return wire.encode_error(message, **EMPTY_REPLIES[verb])


def answer(service: Service, verb: str, body: bytes, *, final: bool = True) -> bytes:
    """The reply to one extender call, errors included; everything but the HTTP framing.

    With `final=False`, a call about a gang member the watch has not delivered yet raises
    `PodNotSeenYet` instead of answering, so the caller can retry once the model has the pod."""
    started = time.perf_counter()
    try:
        if not service.state.is_synced():
            raise wire.WireError(NOT_SYNCED)
        reply = HANDLERS[verb](service, body, final)
    except PodNotSeenYet:
        raise
    except (wire.WireError, convert.ConversionError) as error:
        service.metrics.count_decision(verb, "bad-request")
        reply = error_reply(verb, f"tfjob-extender {verb}: {error}")
    except Exception as error:
        log.exception("%s failed", verb)
        service.metrics.count_decision(verb, "error")
        reply = error_reply(verb, f"tfjob-extender {verb}: internal error: {error!r}")
    service.metrics.observe_verb(verb, time.perf_counter() - started)
    return reply


def _record(service: Service, verb: str, pod: PodView, snapshot: ClusterSnapshot, decision: Decision) -> None:
    service.metrics.count_decision(verb, decision.outcome)
    service.history.add(Record(service.clock(), verb, pod.key, snapshot.generation, decision))


def _filter(service: Service, body: bytes, final: bool) -> bytes:
    args = wire.parse_extender_args(body)
    pod, _ = _pod_in_model(service, args.pod, final=final)
    outcome = filter_and_commit(service.state, pod, args.candidates, service.settings.policy, service.clock())
    if outcome.decision.model_behind and not final:
        raise PodNotSeenYet(pod.key)
    decision = outcome.decision if outcome.committed else model_kept_changing(outcome.decision, args.candidates)
    if outcome.committed and decision.reserve:
        service.publish(decision.change, outcome.snapshot)
    _record(service, "filter", pod, outcome.snapshot, decision)
    return wire.encode_filter(decision, args)


def _prioritize(service: Service, body: bytes, final: bool) -> bytes:
    args = wire.parse_extender_args(body)
    pod, snapshot = _pod_in_model(service, args.pod, final=True)
    decision = prioritize_pod(snapshot, pod, args.candidates, service.settings.policy)
    _record(service, "prioritize", pod, snapshot, decision)
    return wire.encode_scores(decision)


def _preempt(service: Service, body: bytes, final: bool) -> bytes:
    args = wire.parse_preemption_args(body)
    pod, snapshot = _pod_in_model(service, args.pod, final=True)
    decision = decide_preempt(pod, args.victims, args.pdb_violations, service.settings.policy)
    _record(service, "preempt", pod, snapshot, decision)
    return wire.encode_preemption(decision)


HANDLERS: dict[str, Handler] = {"filter": _filter, "prioritize": _prioritize, "preempt": _preempt}
