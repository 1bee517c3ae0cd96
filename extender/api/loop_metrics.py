"""The preemption loop's counts as Prometheus metrics, beside the scaler's (`extender.api.scaler`).

The loop keeps plain counters (`PreemptionCounts`) and never imports Prometheus; `PreemptionCollector`
reads them at each scrape and renders them as `tfjob_extender_preemption_*` families: ticks by role,
plans reserved by why, preemptions by outcome, evictions, suspensions, resumptions, scale-ins,
PodDisruptionBudget refusals, and a gauge that is 1 while this instance leads. `serve` exports them when
the loop runs in its process, `tfjob-extender loops` always. `ForecastCollector` renders the start-time
forecast the same way: one gauge series per waiting gang and quantile, gone once the gang starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.loops.forecast_loop import ForecastLoop
from extender.loops.preemption import PreemptionLoop

Label = TypeVar("Label", bound=str)
"""The label values of one counter family (a `Literal` of the loop's outcomes)."""


def counter_by(name: str, documentation: str, label: str, counts: Mapping[Label, int]) -> CounterMetricFamily:
    """A counter family with one sample per key of `counts` (copied first: a tick may be adding to it)."""
    family = CounterMetricFamily(name, documentation, labels=[label])
    for key, value in sorted(dict(counts).items()):
        family.add_metric([key], value)
    return family


class PreemptionCollector(Collector):
    """The preemption loop's counts, read at each scrape."""

    def __init__(self, loop: PreemptionLoop) -> None:
        self.loop = loop

    def collect(self) -> Iterator[Metric]:
        counts = self.loop.counts
        yield counter_by("tfjob_extender_preemption_ticks", "Preemption loop ticks by role.", "role", counts.ticks)
        yield counter_by(
            "tfjob_extender_preemption_plans_reserved",
            "Gang plans the preemption loop reserved, by why (admission, preemption, completion).",
            "why",
            counts.plans_reserved,
        )
        yield counter_by(
            "tfjob_extender_preemption_preemptions",
            "Job-level preemptions by outcome (carried-out, stale, blocked, dry-run).",
            "outcome",
            counts.preemptions,
        )
        plain = (
            ("evictions", "Pods the preemption loop evicted.", counts.evictions),
            ("suspensions", "TFJobs the preemption loop suspended.", counts.suspensions),
            ("resumptions", "TFJobs the preemption loop resumed after suspending them.", counts.resumptions),
            ("scale_ins", "TFJobs whose workers the preemption loop lowered for a preemptor.", counts.scale_ins),
            (
                "pdb_refusals",
                "Evictions a PodDisruptionBudget refused (each abandons its preemption).",
                counts.pdb_refusals,
            ),
        )
        for name, documentation, value in plain:
            yield CounterMetricFamily(f"tfjob_extender_preemption_{name}", documentation, value=value)
        yield GaugeMetricFamily(
            "tfjob_extender_preemption_leader",
            "1 while this instance held the lease at the preemption loop's last tick.",
            value=int(self.loop.leading),
        )


def export_preemption_metrics(registry: CollectorRegistry, loop: PreemptionLoop) -> None:
    """Serve the preemption loop's counts on `registry`'s `/metrics`."""
    registry.register(PreemptionCollector(loop))


class ForecastCollector(Collector):
    """Each waiting gang's start band, read at each scrape: a gang that started or left has no series."""

    def __init__(self, loop: ForecastLoop) -> None:
        self.loop = loop

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "tfjob_extender_gang_start_forecast_seconds",
            "Seconds from the forecast's time to a waiting gang's start, at quantile 0.1, 0.5 and 0.9 "
            "(no sample for a quantile the forecast leaves open or a gang whose start is unknown)",
            labels=["gang", "quantile"],
        )
        for gang, forecast in sorted(self.loop.forecaster.forecasts.items()):
            band = forecast.band
            for quantile, value in (("0.1", band.p10_s), ("0.5", band.p50_s), ("0.9", band.p90_s)):
                if value is not None:
                    family.add_metric([gang, quantile], value)
        yield family
        yield GaugeMetricFamily(
            "tfjob_extender_start_forecast_refresh_seconds",
            "Seconds the last refresh of the start-time forecast took",
            value=self.loop.forecaster.last_refresh_s,
        )
        yield CounterMetricFamily(
            "tfjob_extender_start_forecast_refreshes",
            "Refreshes of the start-time forecast",
            value=self.loop.forecaster.refreshes,
        )


def export_forecast_metrics(registry: CollectorRegistry, loop: ForecastLoop) -> None:
    """Serve the start-time forecast on `registry`'s `/metrics`."""
    registry.register(ForecastCollector(loop))
