"""JSON for where jobs and gangs stand: weights with the inputs of KOD2 Equation (1), ranks, what each waits for.

`/debug/jobs` and `/debug/gangs` add a `standing` object to each entry (`job_standing`, `gang_standing`):
base weight and its inputs, aged weight, PriorityClass value, starvation clock, the 1-based rank
among waiting gangs, and for a TFJob Kueue admits `admittedBy` and what the loops leave to Kueue
(`loops`). `/debug/queue` lists `policy.rank.standing.explain_queue` (`render_standing`), and
`/debug/explain/{namespace}/{name}` resolves a TFJob, PodGroup or pod to its gang and answers everything
`tfjob-extender explain` prints (`explanation_in_steps`, which hands the event loop back before it plans
the gang). All of it reads one snapshot; nothing is changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from extender.api.at_risk_view import render_at_risk
from extender.api.pacing import HAND_BACK, Steps
from extender.policy.core.resources import Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import KUEUE_LEFT_ALONE, JobView
from extender.policy.gang.state import gang_state
from extender.policy.preemption.lost_work import at_risk
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import GangQueue, queue_of
from extender.policy.rank.standing import (
    Standing,
    Wait,
    WaitKind,
    WeightBreakdown,
    explain_gang,
    schedulable_capacity,
    waiting_positions,
    weight_breakdown,
)

STARTED = "started"
WAITING = "waiting"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RankContext:
    """What every entry of one document is ranked against: computed once per request."""

    snapshot: ClusterSnapshot
    queue: GangQueue
    positions: dict[str, int]
    capacity: Resources
    settings: PolicySettings
    now: float

    @staticmethod
    def of(snapshot: ClusterSnapshot, settings: PolicySettings, now: float) -> RankContext:
        queue = queue_of(snapshot, settings)
        return RankContext(
            snapshot, queue, waiting_positions(queue, now, settings), schedulable_capacity(snapshot), settings, now
        )


def job_standing(context: RankContext, job_key: str) -> dict[str, Any]:
    """The weight, rank inputs and rank of a TFJob (through its gang when it has one)."""
    snapshot = context.snapshot
    job = snapshot.jobs.get(job_key)
    summary = _summary_of_job(context, job_key)
    body: dict[str, Any] = {}
    if job is not None:
        breakdown = weight_breakdown(job, context.capacity, context.settings)
        body["baseWeight"] = breakdown.weight
        body["weightInputs"] = _weight_inputs(breakdown)
        body["priorityClass"] = job.priority_class or None
        body.update(_kueue_fields(job))
    if summary is not None:
        body.update(_rank_fields(context, summary))
    return body


def _kueue_fields(job: JobView) -> dict[str, Any]:
    """`admittedBy` and `loops` for a TFJob Kueue admits; nothing for any other."""
    return {"admittedBy": "Kueue", "loops": KUEUE_LEFT_ALONE} if job.kueue_managed else {}


def gang_standing(context: RankContext, group_key: str) -> dict[str, Any] | None:
    summary = context.queue.summary_of_group(group_key)
    if summary is None:
        return None
    body = _rank_fields(context, summary)
    job = context.snapshot.jobs.get(summary.job) if summary.job else None
    if job is not None:
        body["weightInputs"] = _weight_inputs(weight_breakdown(job, context.capacity, context.settings))
        body.update(_kueue_fields(job))
    return body


def _weight_inputs(breakdown: WeightBreakdown) -> dict[str, Any]:
    """The inputs of KOD2 Equation (1) the base weight was computed from."""
    return {
        "minWorkers": breakdown.min_workers,
        "cpuShare": breakdown.cpu_share,
        "memoryShare": breakdown.memory_share,
    }


def _rank_fields(context: RankContext, summary: GangSummary) -> dict[str, Any]:
    rank = summary.rank(context.now, context.settings)
    return {
        "gang": summary.key,
        "sizeClass": rank.size_class,
        "baseWeight": rank.base_weight,
        "agedWeight": rank.weight,
        "priority": rank.priority,
        "arrival": rank.arrival,
        "starvation": {
            "waitedSeconds": round(rank.waited_s, 1),
            "limitSeconds": context.settings.starvation_limit_s,
            "starving": rank.starving,
        },
        "rank": context.positions.get(summary.key),
        "waiting": len(context.positions),
    }


def _summary_of_job(context: RankContext, job_key: str) -> GangSummary | None:
    for pod_key in sorted(context.snapshot.job_members.get(job_key, frozenset())):
        pod = context.snapshot.pods.get(pod_key)
        if pod is not None and pod.group:
            return context.queue.summary_of_group(pod.group)
    return None


def render_standing(standing: Standing, context: RankContext) -> dict[str, Any]:
    """One entry of `/debug/queue`."""
    rank = standing.rank
    wait = standing.wait
    return {
        "rank": standing.position,
        "gang": standing.gang,
        "job": standing.job or None,
        "priority": rank.priority,
        "sizeClass": rank.size_class,
        "baseWeight": rank.base_weight,
        "agedWeight": rank.weight,
        "waitedSeconds": round(rank.waited_s, 1),
        "starving": rank.starving,
        "waitsFor": wait.kind.value,
        "why": wait.message,
        "blockers": list(wait.blockers),
        "bestPlan": _best_plan(wait) if wait.kind is WaitKind.NO_ROOM else None,
        "wouldStart": wait.remedy or None,
    }


def _best_plan(wait: Wait) -> dict[str, Any]:
    """The best plan a gang with no room found: pods placed and needed, and where it was tried."""
    return {"placed": wait.placed, "needed": wait.needed, "triedOn": wait.tried_on or None}


def explanation_in_steps(context: RankContext, namespace: str, name: str) -> Steps[dict[str, Any]]:
    """What `tfjob-extender explain` prints about the TFJob, PodGroup or pod `namespace/name`, handing the
    loop back before its gang is planned."""
    snapshot = context.snapshot
    key = f"{namespace}/{name}"
    kind, job_key, group_key = _resolve(snapshot, key)
    if kind is None:
        return {"object": key, "kind": None, "status": UNKNOWN, "summary": f"the extender knows no {key}"}
    body: dict[str, Any] = {"object": key, "kind": kind, "job": job_key or None, "podGroup": group_key or None}
    if job_key:
        body["standing"] = job_standing(context, job_key)
    elif group_key:
        body["standing"] = gang_standing(context, group_key)
    pods = _pods_of(snapshot, job_key, group_key, key if kind == "Pod" else "")
    bound = {pod.name: pod.node_name for pod in pods if pod.holds_node}
    pending = [pod.name for pod in pods if pod.pending]
    body["pods"] = {"total": len(pods), "bound": bound, "pending": sorted(pending)}
    standing = None
    if group_key:
        yield HAND_BACK
        standing = explain_gang(snapshot, group_key, context.settings, context.now)
    if standing is not None and pending:
        body["waitsFor"] = render_standing(standing, context)
    plan = [
        {"pod": held.pod, "node": held.node, "expiresInSeconds": round(held.expires_at - context.now, 1)}
        for pod in pods
        if (held := snapshot.reservations.get(pod.key)) is not None
    ]
    body["plan"] = plan
    if bound:
        risk = at_risk(snapshot.jobs.get(job_key) if job_key else None, pods, context.now, context.settings)
        body["atRisk"] = render_at_risk(risk)
    started = bool(pods) and not pending and bool(bound or any(pod.finished for pod in pods))
    body["status"] = STARTED if started else WAITING
    body["summary"] = _summary(body, pods_total=len(pods), bound=len(bound))
    left_alone = gang_state(snapshot, group_key).left_alone_reason if group_key else ""
    if left_alone:
        body["leftAlone"] = left_alone
        body["summary"] = f"{key}: {left_alone}"
    return body


def _resolve(snapshot: ClusterSnapshot, key: str) -> tuple[str | None, str, str]:
    """(kind, TFJob key, PodGroup key) of the object named `key`: a TFJob first, then a PodGroup, then a pod."""
    if key in snapshot.jobs:
        return "TFJob", key, _group_of_job(snapshot, key)
    if key in snapshot.groups or key in snapshot.group_members:
        job = next(
            (pod.job for k in sorted(snapshot.group_members.get(key, ())) if (pod := snapshot.pods.get(k)) and pod.job),
            "",
        )
        return "PodGroup", job, key
    pod = snapshot.pods.get(key)
    if pod is not None:
        return "Pod", pod.job, pod.group
    return None, "", ""


def _group_of_job(snapshot: ClusterSnapshot, job_key: str) -> str:
    for pod_key in sorted(snapshot.job_members.get(job_key, frozenset())):
        pod = snapshot.pods.get(pod_key)
        if pod is not None and pod.group:
            return pod.group
    return ""


def _pods_of(snapshot: ClusterSnapshot, job_key: str, group_key: str, pod_key: str) -> list[Any]:
    keys = (
        snapshot.job_members.get(job_key, frozenset())
        if job_key
        else snapshot.group_members.get(group_key, frozenset())
        if group_key
        else frozenset({pod_key})
    )
    return [pod for key in sorted(keys) if (pod := snapshot.pods.get(key)) is not None and not pod.terminating]


def _summary(body: dict[str, Any], *, pods_total: int, bound: int) -> str:
    if body["status"] == STARTED:
        return f"{body['object']} has started: {bound}/{pods_total} pods bound"
    if not pods_total:
        return f"{body['object']} waits: no pods created yet"
    waits = body.get("waitsFor")
    why = waits["why"] if waits else "not planned yet"
    return f"{body['object']} waits: {why}"
