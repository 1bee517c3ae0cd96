"""HTTP for the scaler: `/debug/scaler` beside the extender's routes (on the verb listener, and on an
observe listener with its debug routes, in `serve` or in the loops' own process). Read-only: every route
renders state.

The loop keeps plain records and counts; this module renders them as JSON and exports the counts to
Prometheus (a collector reads them at each scrape), so the loops and the simulator need no HTTP or
metrics library."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fastapi import APIRouter
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.api.loop_metrics import counter_by
from extender.api.loopviews import render_record
from extender.loops.scaler import ScalerLoop


def make_scaler_router(loop: ScalerLoop, clock: Callable[[], float]) -> APIRouter:
    router = APIRouter()

    @router.get("/debug/scaler")
    def scaler() -> dict[str, Any]:
        return render_scaler(loop, clock())

    return router


def render_scaler(loop: ScalerLoop, now: float) -> dict[str, Any]:
    """What `/debug/scaler` shows; called from the HTTP thread, so it reads copies."""
    settings = loop.settings
    cooldowns = loop.cooldowns(loop.state.snapshot())
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
        "actions": [render_record(record) for record in tuple(loop.records)],
        "leftAlone": dict(sorted(loop.left_alone.items())),
        "coolingDown": {
            job: round(at + settings.scale_cooldown_s - now, 1)
            for job, at in sorted(cooldowns.items())
            if at + settings.scale_cooldown_s > now
        },
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
