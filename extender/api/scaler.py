"""HTTP for the scaler: `/debug/scaler` beside the extender's routes (on the verb listener, and on an
observe listener with its debug routes, in `serve` or in the loops' own process). Read-only: every route
renders state, on the event loop, in steps (`extender.api.pacing`).

The loop keeps plain records and counts; this module renders them as JSON and exports the counts to
Prometheus (a collector reads them at each scrape), so the loops and the simulator need no HTTP or
metrics library."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.api.loop_metrics import counter_by
from extender.api.loopviews import render_record
from extender.api.pacing import Steps, in_steps
from extender.api.read_routes import json_reply, read_route
from extender.loops.scaler import ScalerLoop
from extender.policy.core.stepwise import run_whole


def make_scaler_router(loop: ScalerLoop, clock: Callable[[], float]) -> APIRouter:
    router = APIRouter()

    @read_route(router, "/debug/scaler")
    async def scaler() -> Response:
        return json_reply(await in_steps(scaler_view_steps(loop, clock())))

    return router


def render_scaler(loop: ScalerLoop, now: float) -> dict[str, Any]:
    """What `/debug/scaler` shows."""
    return run_whole(scaler_view_steps(loop, now))


def scaler_view_steps(loop: ScalerLoop, now: float) -> Steps[dict[str, Any]]:
    """What `/debug/scaler` shows, pausing between its parts and between records; it reads copies of the
    loop's records, so a tick in between changes nothing already read."""
    settings = loop.settings
    cooldowns = loop.cooldowns(loop.state.snapshot())
    yield None
    actions = []
    for record in tuple(loop.records):
        actions.append(render_record(record))
        yield None
    left_alone = dict(sorted(loop.left_alone.items()))
    yield None
    cooling_down = {
        job: round(at + settings.scale_cooldown_s - now, 1)
        for job, at in sorted(cooldowns.items())
        if at + settings.scale_cooldown_s > now
    }
    yield None
    return {
        "identity": loop.leader.identity,
        "leading": loop.leading,
        "settings": {
            "intervalSeconds": loop.interval_s,
            "scaleOutStep": settings.scale_out_step,
            "scaleInStep": settings.scale_in_step,
            "cooldownSeconds": settings.scale_cooldown_s,
            "consolidation": settings.consolidation_enabled,
            "consolidationBudget": settings.consolidation_budget,
            "consolidationIntervalSeconds": settings.consolidation_interval_s,
        },
        "actions": actions,
        "leftAlone": left_alone,
        "coolingDown": cooling_down,
        "migrating": {key: m.target.node for key, m in sorted(dict(loop.migrations).items())},
    }


class ScalerCollector(Collector):
    """The scaler's counts as Prometheus metrics, read at each scrape."""

    def __init__(self, loop: ScalerLoop) -> None:
        self.loop = loop

    def collect(self) -> Iterator[Metric]:
        counts = self.loop.counts
        actions = CounterMetricFamily(
            "tfjob_extender_scaler_actions",
            "Scaler actions by kind (scale-out, migrate) and outcome (done, stale, failed, refused, dry-run).",
            labels=["kind", "outcome"],
        )
        for (kind, outcome), value in sorted(dict(counts.actions).items()):
            actions.add_metric([kind, outcome], value)
        yield actions
        yield CounterMetricFamily(
            "tfjob_extender_scaler_jobs_left_alone",
            "Elastic TFJobs reported as left alone (once per job and reason).",
            value=counts.left_alone,
        )
        yield CounterMetricFamily(
            "tfjob_extender_scaler_conflicts",
            "TFJob writes refused with 409 Conflict and retried.",
            value=counts.conflicts,
        )
        yield counter_by("tfjob_extender_scaler_ticks", "Scaler ticks by role.", "role", counts.ticks)
        yield GaugeMetricFamily(
            "tfjob_extender_scaler_leader",
            "1 while this instance holds the scaler lease.",
            value=int(self.loop.leading),
        )


def export_scaler_metrics(registry: CollectorRegistry, loop: ScalerLoop) -> None:
    """Serve the scaler's counts on `registry`'s `/metrics`."""
    registry.register(ScalerCollector(loop))
