"""What a contended run of the peer benchmark reports: each job's outcome and the run's summary.

A `JobOutcome` is one job's record over a run — when it was submitted, first bound, first trained and finished,
where it landed, the resource-seconds its pods held before the gang was whole, and what its takings cost it
(restarts, the training they threw away). `RunSummary.values` reduces a run's
outcomes to the reported figures (makespan, JCT, wait, partial placement, co-location, deadlocks, lost work
and takings), with jobs
unfinished at the end censored; `CONTENDED_COLUMNS` and `fmt` are how each figure is titled and printed.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from extender.policy.core.resources import CPU, GPU
from extender.sim.report import percentile
from extender.sim.workload import JobSpec


@dataclass
class JobOutcome:
    spec: JobSpec
    submitted: float
    started: float | None = None
    """When its last pod was bound (monotonic)."""
    finished: float | None = None
    run_s: float = 0.0
    first_bind: float | None = None
    nodes: int = 0
    workers: int = 0
    workers_beside_ps: int = 0
    held: dict[str, float] = field(default_factory=dict)
    """Resource → resource-seconds its pods held while the gang was not whole."""
    bound_at_end: int = 0
    restarts: int = 0
    takings: list[float] = field(default_factory=list)
    """When it lost pods it was training with (monotonic): restarts and scale-ins."""
    lost_work_s: float = 0.0
    """Training thrown away by its restarts, GPU-seconds (CPU-core seconds for a job without GPUs)."""


@dataclass
class RunSummary:
    workload: str
    scheduler: str
    seed: int
    jobs: list[JobOutcome]
    end: float
    stalled: bool
    start_forecast: dict[str, Any] | None = None
    """The extender's start-time forecasts scored against this run (`peer_forecasts`), where it ran."""

    def values(self) -> dict[str, float]:
        first = min(job.submitted for job in self.jobs)
        jct = [(job.finished if job.finished is not None else self.end) - job.submitted for job in self.jobs]
        waits = [(job.started if job.started is not None else self.end) - job.submitted for job in self.jobs]
        started = [job for job in self.jobs if job.started is not None]
        partial = [
            (job.started if job.started is not None else self.end) - job.first_bind
            for job in self.jobs
            if job.first_bind is not None
        ]
        workers = sum(job.workers for job in started)
        finished = [job.finished for job in self.jobs if job.finished is not None]
        complete = len(finished) == len(self.jobs)
        return {
            "makespan_s": (max(finished) - first) if complete else math.nan,
            "avg_jct_s": statistics.fmean(jct),
            "p95_jct_s": percentile(jct, 0.95),
            "avg_wait_s": statistics.fmean(waits),
            "longest_partial_s": max(partial, default=0.0),
            "cpu_s_held": sum(job.held.get(CPU, 0.0) for job in self.jobs) / 1000,
            "gpu_s_held": sum(job.held.get(GPU, 0.0) for job in self.jobs),
            "beside_ps": sum(job.workers_beside_ps for job in started) / workers if workers else math.nan,
            "nodes_per_job": statistics.fmean(job.nodes for job in started) if started else math.nan,
            "deadlocked": sum(1 for job in self.jobs if job.started is None and job.bound_at_end > 0),
            "never_started": sum(1 for job in self.jobs if job.started is None and job.bound_at_end == 0),
            "lost_work_s": sum(job.lost_work_s for job in self.jobs),
            "restarts": sum(job.restarts for job in self.jobs),
            "max_takings_per_hour": max((most_within(job.takings, HOUR_S) for job in self.jobs), default=0),
        }


CONTENDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("makespan_s", "makespan s", "{:.1f}"),
    ("avg_jct_s", "avg JCT s", "{:.1f}"),
    ("p95_jct_s", "p95 JCT s", "{:.1f}"),
    ("avg_wait_s", "avg wait s", "{:.1f}"),
    ("longest_partial_s", "longest partial s", "{:.1f}"),
    ("cpu_s_held", "CPU-s held partial", "{:.0f}"),
    ("gpu_s_held", "GPU-s held partial", "{:.0f}"),
    ("beside_ps", "workers beside PS", "{:.0%}"),
    ("nodes_per_job", "nodes/job", "{:.2f}"),
    ("deadlocked", "deadlocked", "{:.0f}"),
    ("never_started", "never started", "{:.0f}"),
    ("lost_work_s", "lost work s", "{:.0f}"),
    ("restarts", "restarts", "{:.0f}"),
    ("max_takings_per_hour", "takings/h max", "{:.0f}"),
)
HOUR_S = 3600.0


def most_within(times: list[float], window_s: float) -> int:
    """The most of `times` within any `window_s` seconds."""
    ordered = sorted(times)
    return max(
        (sum(1 for later in ordered[i:] if later - start < window_s) for i, start in enumerate(ordered)), default=0
    )


def fmt(template: str, value: float) -> str:
    return "-" if isinstance(value, float) and math.isnan(value) else template.format(value)
