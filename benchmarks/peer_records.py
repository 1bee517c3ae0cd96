"""The peer benchmark's machine-readable results: one JSON record per run (`peers.py --json PATH`).

A record is one scheduler on one workload and seed, with the same keys for every run (`RECORD_KEYS`), a figure
that does not apply or was not reached being null:

- `makespan_s`: a contended run's first submission to its last completion (null when a job never finished);
  a drain's release of the stopped scheduler to its last bind;
- `avg_jct_s`, `p95_jct_s`: submission to completion, over the jobs (unfinished ones up to the run's end);
  null for drains, whose pods never complete;
- `avg_wait_s`: a contended job's submission to its last pod bound; a drain pod's release (or creation, if
  later) to its bind;
- `pods_per_s`: a drain's pods bound per second; null for contended runs;
- `max_partial_s`: the longest time a gang had some but not all members bound (null for plain pods);
- `colocated`: the share of workers on the node of their PS, 0–1 (contended runs; null for drains);
- `nodes_per_job`: the nodes a started job's pods landed on, on average (contended runs; null for drains);
- `completed` of `jobs`: the jobs that finished (contended), the gangs bound whole or, for plain pods, the
  pods bound (drains);
- `lost_work_s`: the training the contended run's restarts threw away, GPU-seconds (CPU-core seconds for jobs
  without GPUs) on the run's clock; `restarts`: how many; `max_takings_per_hour`: the most times one job lost
  pods it trained with (a restart or a scale-in) within an hour (null for drains).

`drain_record` and `contended_record` make them; `write_records` writes a run's records as one JSON array.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks.peer_drains import DrainRow
from benchmarks.peer_outcomes import RunSummary

RECORD_KEYS = (
    "scheduler",
    "workload",
    "seed",
    "makespan_s",
    "avg_jct_s",
    "p95_jct_s",
    "avg_wait_s",
    "pods_per_s",
    "max_partial_s",
    "colocated",
    "nodes_per_job",
    "completed",
    "jobs",
    "lost_work_s",
    "restarts",
    "max_takings_per_hour",
)


def finite(value: float | None) -> float | None:
    """A figure as JSON carries it: NaN (not reached) becomes null."""
    return None if value is None or math.isnan(value) else value


def drain_workload(nodes: int, phase: str) -> str:
    """A drain's workload name in the records: `drain-500-gang8`."""
    return f"drain-{nodes}-{phase}"


def drain_record(row: DrainRow) -> dict[str, Any]:
    result = row.result
    gang = result.gangs > 0
    waits = [latency / 1000 for latency in result.latencies_ms]
    return {
        "scheduler": row.scheduler,
        "workload": drain_workload(row.nodes, row.phase),
        "seed": row.seed,
        "makespan_s": result.seconds if result.bound else None,
        "avg_jct_s": None,
        "p95_jct_s": None,
        "avg_wait_s": statistics.fmean(waits) if waits else None,
        "pods_per_s": result.rate,
        "max_partial_s": result.gang_partial_s if gang else None,
        "colocated": None,
        "nodes_per_job": None,
        "completed": result.gangs_whole if gang else result.bound,
        "jobs": result.gangs if gang else result.pods,
        "lost_work_s": None,
        "restarts": None,
        "max_takings_per_hour": None,
    }


def contended_record(run: RunSummary) -> dict[str, Any]:
    """The run's record (`RECORD_KEYS`), and `start_forecast` where the extender's forecasts were scored."""
    values = run.values()
    record = {
        "scheduler": run.scheduler,
        "workload": run.workload,
        "seed": run.seed,
        "makespan_s": finite(values["makespan_s"]),
        "avg_jct_s": finite(values["avg_jct_s"]),
        "p95_jct_s": finite(values["p95_jct_s"]),
        "avg_wait_s": finite(values["avg_wait_s"]),
        "pods_per_s": None,
        "max_partial_s": finite(values["longest_partial_s"]),
        "colocated": finite(values["beside_ps"]),
        "nodes_per_job": finite(values["nodes_per_job"]),
        "completed": sum(1 for job in run.jobs if job.finished is not None),
        "jobs": len(run.jobs),
        "lost_work_s": values["lost_work_s"],
        "restarts": int(values["restarts"]),
        "max_takings_per_hour": int(values["max_takings_per_hour"]),
    }
    return record if run.start_forecast is None else {**record, "start_forecast": run.start_forecast}


def write_records(path: Path, drains: Sequence[DrainRow], runs: Sequence[RunSummary]) -> None:
    """Every run's record, drains first, as one JSON array; written whole (to a temporary file renamed over
    `path`), so a reader never sees half a file."""
    records = [drain_record(row) for row in drains] + [contended_record(run) for run in runs]
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    draft.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(draft, path)
