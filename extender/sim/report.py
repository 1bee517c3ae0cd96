"""Metrics per policy, `report.json`, a text table, and PNG plots (JCT distribution, utilisation over time).

Job completion time (JCT) runs from submission to the last training step. A job that never completes
(deadlocked, or left waiting) is censored: it counts in every average and percentile with its time in the
system up to the end of the run, and `censored_jobs` says how many there are — leaving such jobs out
would flatter the policy that strands them. Queueing runs from submission to the first training step
(to the end of the run for a job that never trained); `max_fit_wait_s` is the longest a job stayed
unplaced after the first step at which its minimum would have fit in the free capacity as it was (what
a policy's order, holds and reservations cost it; the starvation bound is stated on it). Utilisation is
what the jobs actually
keep busy (see `throughput`), averaged over the policy's own makespan; pods of a job that cannot train
hold their requests but use nothing. `lost_work_s` is the training the restarts threw away (GPU-seconds,
CPU-seconds for jobs without GPUs: the progress since each one's last checkpoint), `max_restarts` and
`p95_restarts` how often a job was stopped before it finished (evicted, suspended, left below its minimum),
`max_takings_per_hour` the most times the extender's loops took one job (evicted, suspended, scaled it in,
moved a worker) within any hour (0 for the other policies, which do not say).
Plots need matplotlib (the `sim` extra); without it they are skipped.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from extender.sim.engine import RunResult
from extender.sim.policies import JobProgress

COLUMNS = (
    ("avg_jct_s", "avg JCT s", "{:.0f}"),
    ("p95_jct_s", "p95 JCT s", "{:.0f}"),
    ("makespan_s", "makespan s", "{:.0f}"),
    ("avg_queue_s", "avg queue s", "{:.0f}"),
    ("max_queue_s", "max queue s", "{:.0f}"),
    ("max_fit_wait_s", "max wait after fit s", "{:.0f}"),
    ("cpu_util_mean", "CPU util", "{:.1%}"),
    ("gpu_util_mean", "GPU util", "{:.1%}"),
    ("censored_jobs", "censored", "{}"),
    ("preemptions", "preemptions", "{}"),
    ("lost_work_s", "lost work s", "{:.0f}"),
    ("max_restarts", "max restarts/job", "{}"),
    ("p95_restarts", "p95 restarts/job", "{:.1f}"),
    ("scale_actions", "scale actions", "{}"),
    ("resizes", "resizes jobs", "{}"),
)


HOUR_S = 3600.0


def _most_in_an_hour(times: Sequence[float]) -> int:
    """The most of `times` (ascending) within any hour."""
    most, first = 0, 0
    for last, at in enumerate(times):
        while at - times[first] >= HOUR_S:
            first += 1
        most = max(most, last - first + 1)
    return most


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def metrics(result: RunResult) -> dict[str, Any]:
    end = result.makespan_s
    done = [p for p in result.jobs.values() if _completed(p)]
    jcts = [(_left(p) if _completed(p) else end) - p.spec.arrival_s for p in result.jobs.values()]
    queues = [(p.started if p.started is not None else end) - p.spec.arrival_s for p in result.jobs.values()]
    fit_waits = [
        (p.placed if p.placed is not None else end) - p.first_fit
        for p in result.jobs.values()
        if p.first_fit is not None
    ]
    span = end or 1.0
    return {
        "avg_jct_s": round(sum(jcts) / len(jcts), 1) if jcts else None,
        "p95_jct_s": round(percentile(jcts, 0.95), 1) if jcts else None,
        "makespan_s": round(result.makespan_s, 1),
        "avg_queue_s": round(sum(queues) / len(queues), 1) if queues else None,
        "max_queue_s": round(max(queues), 1) if queues else None,
        "max_fit_wait_s": round(max(fit_waits, default=0.0), 1),
        "cpu_util_mean": round(result.cpu_busy_core_s / (result.cpu_capacity * span), 4),
        "gpu_util_mean": round(result.gpu_busy_s / (result.gpu_capacity * span), 4) if result.gpu_capacity else 0.0,
        "censored_jobs": len(result.jobs) - len(done),
        "preemptions": result.preemptions,
        "lost_work_s": round(sum(p.lost_work_s for p in result.jobs.values()), 1),
        "max_restarts": max((p.restarts for p in result.jobs.values()), default=0),
        "p95_restarts": round(percentile([float(p.restarts) for p in result.jobs.values()], 0.95), 1)
        if result.jobs
        else 0.0,
        "max_takings_per_hour": max((_most_in_an_hour(p.taken_at) for p in result.jobs.values()), default=0),
        "scale_actions": result.scale_actions,
        "resizes": "yes" if result.resizes else "no",
        "completed_jobs": len(done),
        "jobs": {
            name: {
                "arrival_s": p.spec.arrival_s,
                "first_fit_s": None if p.first_fit is None else round(p.first_fit, 1),
                "placed_s": None if p.placed is None else round(p.placed, 1),
                "started_s": None if p.started is None else round(p.started, 1),
                "finished_s": round(_left(p), 1) if _completed(p) else None,
                "censored": not _completed(p),
            }
            for name, p in sorted(result.jobs.items())
        },
    }


def _completed(progress: JobProgress) -> bool:
    return progress.finished is not None and not progress.deadlocked


def _left(progress: JobProgress) -> float:
    assert progress.finished is not None
    return progress.finished


def table(report: dict[str, Any], columns: Sequence[tuple[str, str, str]] = COLUMNS, first: str = "policy") -> str:
    """A Markdown table of `report["policies"]`, one row per policy (the first column titled `first`), one
    column per entry of `columns`."""
    headers = [first, *(title for _, title, _ in columns)]
    rows = []
    for name, entry in report["policies"].items():
        cells = [name]
        for key, _, fmt in columns:
            value = entry[key]
            cells.append("—" if value is None else fmt.format(value))
        rows.append(cells)
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += [
        "| "
        + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        + " |"
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def summary(results: Sequence[RunResult], meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` and each run's `metrics` under `policies`: what `report.json` holds."""
    return {**meta, "policies": {r.policy: metrics(r) for r in results}}


def write(results: Sequence[RunResult], out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    report = summary(results, meta)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "table.md").write_text(table(report))
    plot(results, out, str(meta.get("workload", "")))
    return report


def plot(results: Sequence[RunResult], out: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for result in results:
        jcts = sorted(
            p.finished - p.spec.arrival_s for p in result.jobs.values() if p.finished is not None and not p.deadlocked
        )
        if jcts:
            axis.step(jcts, [(i + 1) / len(result.jobs) for i in range(len(jcts))], where="post", label=result.policy)
    axis.set_xlabel("job completion time (s)")
    axis.set_ylabel("share of jobs completed (CDF)")
    axis.set_title(f"{title}: JCT distribution (deadlocked jobs never reach the top)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(out / "jct_cdf.png", dpi=110)
    plt.close(figure)
    with_gpu = any(r.gpu_capacity for r in results) and any(r.gpu_busy_s for r in results)
    figure, axes = plt.subplots(2 if with_gpu else 1, 1, figsize=(9, 6 if with_gpu else 4), sharex=True, squeeze=False)
    for result in results:
        times, cpu, gpu = _smoothed(result)
        axes[0][0].plot(times, cpu, label=result.policy, linewidth=1.2)
        if with_gpu:
            axes[1][0].plot(times, gpu, label=result.policy, linewidth=1.2)
    axes[0][0].set_ylabel("CPU busy (share)")
    axes[0][0].set_title(f"{title}: utilisation over time (60 s averages)")
    axes[0][0].legend(fontsize=8)
    axes[0][0].grid(alpha=0.3)
    if with_gpu:
        axes[1][0].set_ylabel("GPU busy (share)")
        axes[1][0].grid(alpha=0.3)
    axes[-1][0].set_xlabel("time (s)")
    figure.tight_layout()
    figure.savefig(out / "utilisation.png", dpi=110)
    plt.close(figure)
    return True


def _smoothed(result: RunResult, bucket_s: float = 60.0) -> tuple[list[float], list[float], list[float]]:
    """Time-weighted averages of the step-wise utilisation over fixed buckets."""
    end = result.makespan_s
    buckets = max(1, math.ceil(end / bucket_s))
    cpu = [0.0] * buckets
    gpu = [0.0] * buckets
    rows = [*result.timeline, (end, 0.0, 0.0)]
    for (start, c, g), (stop, _, _) in itertools.pairwise(rows):
        t = start
        while t < min(stop, end):
            index = min(int(t // bucket_s), buckets - 1)
            edge = min(stop, (index + 1) * bucket_s, end)
            cpu[index] += c * (edge - t) / bucket_s
            gpu[index] += g * (edge - t) / bucket_s
            t = edge if edge > t else stop
    return [(i + 0.5) * bucket_s for i in range(buckets)], cpu, gpu
