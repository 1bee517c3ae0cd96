"""What the live page shows, as one JSON-able document (`/debug/view`), rendered by the `/ui` templates.

Built from one snapshot: the queue in rank order with what each gang waits for (`policy.rank.standing`), each
node as a row of its pods — coloured by job, PS and workers marked, reserved members as ghosts — the
recent decisions, preemptions (carried out, or planned in shadow mode), scaler actions, and the
utilisation series. A job's colour is a hue derived from its key, so it stays the same across refreshes
and processes. At most `PageLimits.nodes` nodes are drawn (those with pods or reservations first), and at
most `PageLimits.queue` gangs explained. Every TFJob is listed, so at 5000 nodes the document takes around
a hundred milliseconds of work: it is computed in steps (`page_model_steps`, `extender.api.pacing`), each
gang of the queue planned in a step of its own.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from itertools import islice
from typing import Any

from extender.api.forecast_view import forecast_document
from extender.api.history import Record
from extender.api.pacing import HAND_BACK, Steps, keys_in_steps, sorted_in_steps
from extender.api.standing_view import RankContext, render_standing
from extender.api.utilisation import Sample
from extender.api.verbs import Service
from extender.policy.core.resources import CPU, MEMORY
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView, Role
from extender.policy.rank.jobstates import job_state
from extender.policy.rank.standing import explain_queue

CHART_WIDTH = 640
CHART_HEIGHT = 120
"""Size of the utilisation chart, SVG user units (pixels)."""
LOOSE_COLOUR = "#9e9e9e"
"""Colour of pods that belong to no TFJob."""


@dataclass(frozen=True, slots=True)
class PageLimits:
    nodes: int = 100
    """Most node rows drawn."""
    queue: int = 30
    """Most gangs of the queue shown (and explained)."""
    decisions: int = 15
    actions: int = 15


def job_colour(job: str) -> str:
    """A stable, readable colour per job key (an HSL hue from its CRC-32)."""
    if not job:
        return LOOSE_COLOUR
    hue = zlib.crc32(job.encode()) % 360
    return f"hsl({hue}, 65%, 45%)"


def page_model_steps(service: Service, limits: PageLimits) -> Steps[dict[str, Any]]:
    """The page's document, computed in steps: each gang of the queue planned in a step of its own."""
    snapshot = service.state.snapshot()
    now = service.clock()
    settings = service.settings
    service.utilisation.sample(snapshot, now)
    context = RankContext.of(snapshot, settings.policy, now)
    queue = []
    standings = islice(explain_queue(snapshot, settings.policy, now, limits.queue), limits.queue)
    while True:
        yield HAND_BACK
        standing = next(standings, None)
        if standing is None:
            break
        row = render_standing(standing, context)
        row["colour"] = job_colour(row["job"] or "")
        row["startForecast"] = forecast_document(service.loops, snapshot, row["gang"])
        queue.append(row)
    scale_bands(queue)
    nodes, hidden = yield from _nodes(snapshot, limits.nodes)
    jobs = []
    job_keys = yield from keys_in_steps(snapshot.jobs)
    for key in (yield from sorted_in_steps(job_keys)):
        status = job_state(snapshot, key, now, settings.policy)
        jobs.append({"job": key, "state": status.state.value, "reason": status.reason, "colour": job_colour(key)})
        yield None
    preemptions = _preemptions(service, snapshot, limits.actions)
    yield None
    scaler = service.loops.scaler_actions(limits.actions)
    yield None
    decisions = [_decision(record) for record in service.history.latest(limit=limits.decisions)]
    yield None
    utilisation = chart(service.utilisation.samples())
    yield None
    return {
        "generation": snapshot.generation,
        "at": now,
        "clock": time.strftime("%H:%M:%S", time.localtime(now)),
        "shadowMode": service.loops.shadow,
        "counts": {"nodes": len(snapshot.nodes), "pods": len(snapshot.pods), "jobs": len(snapshot.jobs)},
        "waiting": len(context.positions),
        "queue": queue,
        "nodes": nodes,
        "hiddenNodes": hidden,
        "jobs": jobs,
        "decisions": decisions,
        "preemptions": preemptions,
        "scaler": scaler,
        "hasScaler": service.loops.scaler is not None,
        "chart": utilisation,
    }


def _nodes(snapshot: ClusterSnapshot, limit: int) -> Steps[tuple[list[dict[str, Any]], int]]:
    """The first `limit` nodes — those with pods or reservations first, each group by name — as rows, and
    how many nodes are not drawn."""
    ghosts: dict[str, list[PodView]] = {}
    for held in snapshot.reservations.values():
        pod = snapshot.pods.get(held.pod)
        if pod is not None and not pod.holds_node:
            ghosts.setdefault(held.node, []).append(pod)
        yield None
    busy: list[str] = []
    idle: list[str] = []
    for name, state in snapshot.nodes.items():
        (busy if state.pods or name in ghosts else idle).append(name)
        yield None
    shown = yield from sorted_in_steps(busy, limit)
    if len(shown) < limit:
        shown += yield from sorted_in_steps(idle, limit - len(shown))
    rows = []
    for name in shown:
        state = snapshot.nodes[name]
        pods = sorted(
            (pod for key in state.pods if (pod := snapshot.pods.get(key)) is not None),
            key=lambda pod: (pod.job, pod.role is not Role.PS, pod.index, pod.name),
        )
        allocatable = state.node.allocatable
        rows.append(
            {
                "name": name,
                "schedulable": state.node.schedulable,
                "cpu": _share(state.requested.get(CPU), allocatable.get(CPU)),
                "memory": _share(state.requested.get(MEMORY), allocatable.get(MEMORY)),
                "pods": [_pod(pod) for pod in pods],
                "ghosts": [_pod(pod) for pod in sorted(ghosts.get(name, []), key=lambda pod: pod.name)],
            }
        )
        yield None
    return rows, len(snapshot.nodes) - len(shown)


def scale_bands(queue: list[dict[str, Any]]) -> None:
    """Give each queue row with a known forecast its band's place on one scale shared by the rows (0 to the
    longest p90, an open p90 drawn as twice the p50), in percent: `band` = {left, width, middle}."""
    known = [row for row in queue if (f := row.get("startForecast")) and not f["unknown"]]
    tops = [
        f["p90Seconds"] if f["p90Seconds"] is not None else 2 * f["p50Seconds"]
        for r in known
        if (f := r["startForecast"])
    ]
    scale = max(tops, default=0.0) or 1.0
    for row, top in zip(known, tops, strict=True):
        forecast = row["startForecast"]
        left = 100 * forecast["p10Seconds"] / scale
        row["band"] = {
            "left": round(left, 1),
            "width": round(max(1.0, 100 * top / scale - left), 1),
            "middle": round(100 * forecast["p50Seconds"] / scale, 1),
        }


def _share(used: int, whole: int) -> float:
    return round(used / whole, 3) if whole > 0 else 0.0


def _pod(pod: PodView) -> dict[str, Any]:
    mark = {Role.PS: "PS", Role.WORKER: f"W{pod.index}", Role.CHIEF: "C", Role.EVALUATOR: "E"}.get(pod.role, "·")
    return {
        "pod": pod.key,
        "job": pod.job,
        "role": pod.role.value,
        "mark": mark,
        "colour": job_colour(pod.job),
        "terminating": pod.terminating,
    }


def _decision(record: Record) -> dict[str, Any]:
    return {
        "clock": time.strftime("%H:%M:%S", time.localtime(record.at)),
        "verb": record.verb,
        "pod": record.pod,
        "outcome": record.decision.outcome,
        "summary": record.decision.summary,
    }


def _preemptions(service: Service, snapshot: ClusterSnapshot, limit: int) -> list[dict[str, Any]]:
    done = [
        {"gang": r.gang, "reason": r.reason, "at": r.at, "outcome": "carried out"}
        for r in sorted(snapshot.preemptions.values(), key=lambda r: -r.at)[:limit]
    ]
    planned = service.loops.shadow_preemptions(limit)
    rows = sorted([*done, *planned], key=lambda r: -float(r["at"]))[:limit]
    return [{**row, "clock": time.strftime("%H:%M:%S", time.localtime(row["at"]))} for row in rows]


def chart(samples: list[Sample]) -> dict[str, Any]:
    """SVG polylines (stacked: CPU bound, CPU bound + reserved; memory bound) over the kept samples."""
    if not samples:
        return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "lines": {}, "span": 0.0, "latest": None}
    first, last = samples[0].at, samples[-1].at
    span = max(last - first, 1e-9)

    def points(values: list[tuple[float, float]]) -> str:
        return " ".join(
            f"{(at - first) / span * CHART_WIDTH if len(samples) > 1 else CHART_WIDTH:.1f},"
            f"{CHART_HEIGHT - share * CHART_HEIGHT:.1f}"
            for at, share in values
        )

    latest = samples[-1]
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "span": round(last - first, 1),
        "lines": {
            "cpu": points([(s.at, s.cpu_bound) for s in samples]),
            "cpuReserved": points([(s.at, s.cpu_bound + s.cpu_reserved) for s in samples]),
            "memory": points([(s.at, s.memory_bound) for s in samples]),
        },
        "latest": {
            "cpu": round(latest.cpu_bound * 100),
            "cpuReserved": round(latest.cpu_reserved * 100),
            "memory": round(latest.memory_bound * 100),
        },
    }
