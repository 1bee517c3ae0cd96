"""How good is "when will my job start?": the start-time forecast replayed in the simulator, against baselines.

Replays a scenario (`--scenario` or `--trace`, each `--seed`) with the extender's policy (`sim.policies.Ours`)
and the real forecaster (`loops.start_forecast.StartForecaster`), fed only what a cluster shows: the model's
snapshot and the run times the preemption loop's clock saw finish (the simulator's run times stay hidden).
Each gang is forecast when it is submitted and every `--every-s` while it waits; each forecast is scored
against when the gang really started (all its minimum bound), in seconds from when it was made:
- `coverage_p90`: share of forecasts whose p90 ≥ the actual wait; `below_p10`: share whose p10 ≤ it;
- `median_rel_err`: median of |p50 − actual| ÷ max(actual, 30 s);
- `band_width_s`: mean p90 − p10; `pinball_loss`: mean pinball loss over p10, p50, p90 (seconds);
- `forecasts`, `unknown` (no answer; once three jobs have finished, each counts as a miss in the coverage
  shares and as error 1.0 in `median_rel_err`).
The same for three baselines, each at the same instants (`baselines` in `--json`):
- `queue-position`: position in the rank order × the mean time between the last 10 starts (a point);
- `delay-history`: the p10/p50/p90 of the waits of the last 20 started jobs of its PriorityClass, less
  what it has waited;
- `backfill-walltime`: the same forward run with each job's declared wall time, drawn 1–3× its true run
  time (from a first replay of the same seed), instead of sampled run times (a point).
Also printed: the mean and longest refresh time of the forecaster (its sample count given). With
`--refresh-at NODES,GANGS` it only times full refreshes on a synthetic cluster: NODES full nodes (16 CPU,
one running elastic job each that the scaler may grow) and GANGS waiting gangs of 2–8 pods (p50 / max of
`--runs`, one process); `--pools` taints every other node and lets every third gang tolerate it (two pools
of nodes).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from benchmarks.quality_matrix import with_assignments
from extender.cli.serving import settle_heap
from extender.loops.forecast_settings import StartForecastSettings
from extender.loops.run_clock import RunClock
from extender.loops.start_forecast import StartForecaster
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.forecast.forward import starts_given
from extender.policy.forecast.inputs import forecast_inputs
from extender.policy.forecast.model import StartBand
from extender.policy.rank.queue import queue_of
from extender.sim.cli import SCENARIOS, scenario
from extender.sim.cluster import EPOCH
from extender.sim.engine import Simulation, runnable
from extender.sim.policies import Ours
from extender.sim.workload import Workload, load_trace
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_podgroup, make_sized_tfjob, running_job_pods, waiting_job

FLOOR_S = 30.0
"""The relative error's denominator is at least this many seconds (the issue's definition)."""
HISTORY_STARTS = 10
HISTORY_WAITS = 20
BASELINES = ("queue-position", "delay-history", "backfill-walltime")


@dataclass(frozen=True, slots=True)
class Forecast:
    job: str
    made_at: float
    """Simulated seconds."""
    band: StartBand
    completed_before: int
    """Jobs finished when it was made."""
    what_if: tuple[tuple[int, StartBand], ...] = ()
    """(workers, band) at each smaller size its TFJob may start at (the forecaster's what-if)."""


@dataclass
class Scores:
    forecasts: int = 0
    unknown: int = 0
    coverage_p90: float = 0.0
    below_p10: float = 0.0
    median_rel_err: float = 0.0
    band_width_s: float = 0.0
    pinball_loss: float = 0.0


@dataclass
class Replay:
    workload: str
    seed: int
    samples: int
    ours: list[Forecast] = field(default_factory=list)
    baselines: dict[str, list[Forecast]] = field(default_factory=lambda: {name: [] for name in BASELINES})
    starts: dict[str, list[float]] = field(default_factory=dict)
    """Job → every time it became runnable (a preempted or suspended job starts again)."""
    refresh_ms: list[float] = field(default_factory=list)


def run_times(workload: Workload, seed: int) -> dict[str, float]:
    """Each job's true run time (placed to finished) in a plain replay of the same seed."""
    result = Simulation(workload, Ours(), seed=seed).run()
    return {
        name: p.finished - p.placed
        for name, p in result.jobs.items()
        if p.finished is not None and p.placed is not None and not p.deadlocked
    }


def replay(
    workload: Workload,
    seed: int,
    samples: int,
    every_s: float,
    walls: dict[str, float],
    changes: Sequence[str] = (),
) -> Replay:
    """One replay with the forecaster and the baselines, every forecast kept (see the module docstring)."""
    policy = Ours()
    simulation = Simulation(workload, policy, seed=seed)
    settings = with_assignments(
        StartForecastSettings(samples=samples, refresh_s=1e-3, recheck_s=every_s, record_every_s=every_s), changes
    )
    forecaster = StartForecaster(policy.settings, settings)
    out = Replay(workload.name, seed, samples)
    progress = simulation.progress
    submitted: set[str] = set()
    running: set[str] = set()
    next_at = [0.0]
    step, submit = policy.step, policy.submit

    def submitting(spec: Any, now: float) -> None:
        submit(spec, now)
        submitted.add(spec.name)
        next_at[0] = now

    def stepping(now: float) -> None:
        step(now)
        for name, job in policy.cluster.jobs.items():
            is_running = not job.finished and runnable(job)
            if is_running and name not in running:
                out.starts.setdefault(name, []).append(now)
            (running.add if is_running else running.discard)(name)
        if now < next_at[0]:
            return
        next_at[0] = now + every_s
        snapshot = policy.loop.state.snapshot()
        started = time.perf_counter()
        forecasts = forecaster.refresh(snapshot, policy.loop.suspensions.clock, EPOCH + now)
        out.refresh_ms.append((time.perf_counter() - started) * 1000)
        done = sum(1 for p in progress.values() if p.finished is not None)
        jobs = _job_of(snapshot, policy)
        for key, forecast in forecasts.items():
            out.ours.append(Forecast(jobs.get(key, key), now, forecast.band, done, forecast.what_if))
        for name, bands in _baselines(snapshot, policy, now, progress, walls, settings.count_growth).items():
            out.baselines[name].extend(Forecast(jobs.get(key, key), now, band, done) for key, band in bands.items())

    policy.step, policy.submit = stepping, submitting  # type: ignore[method-assign]
    simulation.run()
    return out


def _job_of(snapshot: ClusterSnapshot, policy: Ours) -> dict[str, str]:
    return {key: s.job.rsplit("/", 1)[-1] for key, s in queue_of(snapshot, policy.settings).summaries.items()}


def _baselines(
    snapshot: ClusterSnapshot, policy: Ours, now: float, progress: Any, walls: dict[str, float], growth: bool
) -> dict[str, dict[str, StartBand]]:
    """The baselines' bands; `growth`: whether the wall-time baseline's forward run counts the scaler's
    growth (as the forecaster does)."""
    settings = policy.settings
    clock = policy.loop.suspensions.clock
    wall_now = EPOCH + now
    inputs, reserved = forecast_inputs(
        snapshot, settings, wall_now, list(clock.finished), clock.running(snapshot.jobs, wall_now), growth=growth
    )
    jobs = _job_of(snapshot, policy)
    placed = sorted(p.placed for p in progress.values() if p.placed is not None and p.placed <= now)
    gaps = np.diff(placed[-HISTORY_STARTS - 1 :]) if len(placed) > 1 else np.array([])
    mean_gap = float(gaps.mean()) if len(gaps) else None
    order = [*reserved, *(gang.key for gang in inputs.waiting)]
    position = {
        key: (StartBand(unknown="no starts seen") if mean_gap is None else _point(index * mean_gap))
        for index, key in enumerate(order)
    }
    waits = [
        p.placed - p.spec.arrival_s
        for p in sorted((p for p in progress.values() if p.placed is not None), key=lambda p: p.placed)
    ][-HISTORY_WAITS:]
    history: dict[str, StartBand] = {}
    for key in order:
        spec = progress.get(jobs.get(key, ""))
        if spec is None or len(waits) < 3:
            history[key] = StartBand(unknown="fewer than 3 waits seen")
            continue
        waited = now - spec.spec.arrival_s
        q10, q50, q90 = (max(0.0, float(np.quantile(waits, q)) - waited) for q in (0.1, 0.5, 0.9))
        history[key] = StartBand(q10, q50, q90)
    remaining = np.asarray(
        [[max(0.0, walls.get(jobs.get(j.key, ""), 0.0) - j.attained_s) for j in inputs.running]], dtype=np.float64
    ).reshape(1, len(inputs.running))
    durations = np.asarray([[walls.get(jobs.get(g.key, ""), 0.0) for g in inputs.waiting]], dtype=np.float64)
    starts = starts_given(inputs, remaining, durations.reshape(1, len(inputs.waiting)))[0]
    backfill = {key: _point(0.0) for key in reserved}
    backfill.update(
        {
            g.key: _point(float(s)) if np.isfinite(s) else StartBand(unknown="not within the wall times")
            for g, s in zip(inputs.waiting, starts, strict=True)
        }
    )
    return {"queue-position": position, "delay-history": history, "backfill-walltime": backfill}


def _point(seconds: float) -> StartBand:
    return StartBand(seconds, seconds, seconds)


def declared_walls(true: dict[str, float], seed: int) -> dict[str, float]:
    """Each job's declared wall time: its true run time × a factor drawn uniformly in 1–3."""
    rng = random.Random(seed)
    return {name: run_s * rng.uniform(1.0, 3.0) for name, run_s in sorted(true.items())}


def waits(forecasts: Sequence[Forecast], starts: dict[str, list[float]]) -> list[tuple[Forecast, float]]:
    """Each forecast whose job started after it was made, with the wait it had: to its first start since."""
    resolved = []
    for forecast in forecasts:
        later = [at for at in starts.get(forecast.job, ()) if at >= forecast.made_at]
        if later:
            resolved.append((forecast, later[0] - forecast.made_at))
    return resolved


def score(forecasts: Sequence[Forecast], starts: dict[str, list[float]]) -> Scores:
    """The scores of the module docstring over the forecasts whose job started."""
    covered, below, errors, widths, pinball = [], [], [], [], []
    unknown = 0
    resolved = waits(forecasts, starts)
    for forecast, actual in resolved:
        band = forecast.band
        if band.p10_s is None or band.p50_s is None or band.p90_s is None:
            unknown += 1
            if forecast.completed_before >= 3:
                covered.append(False)
                below.append(False)
                errors.append(1.0)
            continue
        covered.append(band.p90_s >= actual)
        below.append(band.p10_s <= actual)
        errors.append(abs(band.p50_s - actual) / max(actual, FLOOR_S))
        widths.append(band.p90_s - band.p10_s)
        pinball.append(
            statistics.fmean(_pinball(actual, q, v) for q, v in zip((0.1, 0.5, 0.9), _values(band), strict=True))
        )
    return Scores(
        forecasts=len(resolved),
        unknown=unknown,
        coverage_p90=_share(covered),
        below_p10=_share(below),
        median_rel_err=statistics.median(errors) if errors else float("nan"),
        band_width_s=statistics.fmean(widths) if widths else float("nan"),
        pinball_loss=statistics.fmean(pinball) if pinball else float("nan"),
    )


def _values(band: StartBand) -> tuple[float, float, float]:
    assert band.p10_s is not None and band.p50_s is not None and band.p90_s is not None
    return band.p10_s, band.p50_s, band.p90_s


def _pinball(actual: float, q: float, value: float) -> float:
    return max(q * (actual - value), (q - 1) * (actual - value))


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else float("nan")


def record(run: Replay) -> dict[str, Any]:
    ours = score(run.ours, run.starts)
    return {
        "workload": run.workload,
        "seed": run.seed,
        "samples": run.samples,
        **asdict(ours),
        "refresh_ms_mean": statistics.fmean(run.refresh_ms) if run.refresh_ms else 0.0,
        "refresh_ms_max": max(run.refresh_ms, default=0.0),
        "baselines": {name: asdict(score(found, run.starts)) for name, found in run.baselines.items()},
    }


COLUMNS = ("coverage_p90", "below_p10", "median_rel_err", "band_width_s", "pinball_loss", "forecasts", "unknown")


def print_record(rec: dict[str, Any]) -> None:
    head = f"{rec['workload']} seed {rec['seed']}"
    rows: list[tuple[str, dict[str, Any]]] = [("ours", rec), *rec["baselines"].items()]
    for name, values in rows:
        cells = " | ".join(_cell(values[c]) for c in COLUMNS)
        print(f"| {head} | {name} | {cells} |", flush=True)
    print(
        f"# {head}: refresh {rec['refresh_ms_mean']:.1f} ms mean, {rec['refresh_ms_max']:.1f} ms longest "
        f"({rec['samples']} samples)",
        flush=True,
    )


def print_summary(records: Sequence[dict[str, Any]]) -> None:
    """Per workload and forecaster, the median over seeds of each measure (NaN runs left out)."""
    print(f"\nmedians over seeds\n| workload | forecaster | seeds | {' | '.join(COLUMNS)} |")
    print("|" + "---|" * (len(COLUMNS) + 3))
    workloads = sorted({rec["workload"] for rec in records})
    for workload in workloads:
        runs = [rec for rec in records if rec["workload"] == workload]
        for name in ("ours", *BASELINES):
            rows = [rec if name == "ours" else rec["baselines"][name] for rec in runs]
            cells = []
            for column in COLUMNS:
                values = [row[column] for row in rows if row[column] is not None and row[column] == row[column]]
                cells.append(_cell(statistics.median(values)) if values else "-")
            print(f"| {workload} | {name} | {len(rows)} | {' | '.join(cells)} |", flush=True)


def _cell(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


POOL_TAINT = {"key": "dedicated", "value": "pool-b", "effect": "NoSchedule"}
POOL_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "pool-b", "effect": "NoSchedule"}


def synthetic_cluster(nodes: int, gangs: int, pools: bool = False) -> ClusterState:
    """`nodes` full nodes of 16 CPU, each running an elastic job (1 PS + 3 workers of 4 CPU and 16 GiB, 2 to 5
    workers, so the scaler may grow it), and `gangs` waiting gangs of 2–8 workers of 4 CPU, all created
    before now; every other one's TFJob may start with half its workers (a what-if at each smaller size).
    `pools`: every other node is tainted and every third waiting gang's pods tolerate it (two pools)."""
    objects: list[dict[str, Any]] = []
    for n in range(nodes):
        node, name = f"node-{n:05d}", f"job-{n:05d}"
        objects.append(make_node(node, cpu="16", memory="128Gi"))
        if pools and n % 2:
            objects[-1]["spec"]["taints"] = [POOL_TAINT]
        objects += running_job_pods(name, node=node, workers=3, cpu="4", memory="16Gi")
        running = make_sized_tfjob(name, workers=3, cpu="4", memory="16Gi", min_workers=2, max_workers=5)
        objects += [make_podgroup(name, min_member=3), running]
    for g in range(gangs):
        pods = 2 + g % 7
        minimum = max(1, pods // 2) if g % 2 else None
        job = waiting_job(f"wait-{g:04d}", pods=pods, cpu="4", min_workers=minimum, created="2026-03-01T10:00:00Z")
        for obj in job:
            if pools and g % 3 == 0 and obj["kind"] == "Pod":
                obj["spec"]["tolerations"] = [POOL_TOLERATION]
        objects += job
    return cluster(*objects)


def time_refresh(nodes: int, gangs: int, samples: int, runs: int, pools: bool = False) -> None:
    """Full refreshes of the forecaster on `synthetic_cluster`, timed (a fresh forecaster each, so every run
    recomputes the queue's inputs from the snapshot)."""
    state = synthetic_cluster(nodes, gangs, pools)
    snapshot = state.snapshot()
    clock = RunClock(1000)
    clock.finished.extend(float(60 + 37 * i % 3600) for i in range(200))
    now = datetime(2026, 3, 1, 11, 0, tzinfo=UTC).timestamp()
    settle_heap()
    times, forecasts = [], {}
    for run in range(runs):
        forecaster = StartForecaster(PolicySettings(), StartForecastSettings(samples=samples))
        started = time.perf_counter()
        forecasts = dict(forecaster.refresh(snapshot, clock, now + run))
        times.append((time.perf_counter() - started) * 1000)
    known = sum(1 for f in forecasts.values() if f.band.known)
    smaller = sum(1 for f in forecasts.values() if f.what_if)
    print(
        f"# refresh at {nodes} nodes{' in two pools' if pools else ''}, {len(forecasts)} waiting gangs "
        f"({known} with a band, {smaller} with a "
        f"what-if), {samples} samples: "
        f"p50 {statistics.median(times):.1f} ms, max {max(times):.1f} ms over {runs} runs",
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="repeatable; default: all")
    source.add_argument("--trace", type=Path, help="a trace file instead of the built-in scenarios")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    parser.add_argument("--samples", type=int, default=StartForecastSettings().samples)
    parser.add_argument("--every-s", type=float, default=30.0, help="seconds between two forecasts of a gang")
    parser.add_argument("--json", type=Path, help="write one record per run to this file")
    parser.add_argument(
        "--forecast-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="run the forecaster with a setting of its own changed (an ablation)",
    )
    parser.add_argument("--summarise", type=Path, help="only print the medians over seeds of a --json file")
    parser.add_argument("--refresh-at", help="NODES,GANGS: only time full refreshes on a synthetic cluster")
    parser.add_argument("--runs", type=int, default=20, help="refreshes timed with --refresh-at")
    parser.add_argument("--pools", action="store_true", help="with --refresh-at: half the nodes tainted")
    args = parser.parse_args(argv)
    if args.summarise:
        print_summary(orjson.loads(args.summarise.read_bytes()))
        return
    if args.refresh_at:
        nodes, gangs = (int(part) for part in args.refresh_at.split(","))
        time_refresh(nodes, gangs, args.samples, args.runs, args.pools)
        return
    trace: Path | None = args.trace
    builds: list[Callable[[int], Workload]] = (
        [lambda seed: load_trace(trace)]
        if trace is not None
        else [partial(scenario, name) for name in args.scenario or sorted(SCENARIOS)]
    )
    print("| run | forecaster | " + " | ".join(COLUMNS) + " |\n|" + "---|" * (len(COLUMNS) + 2), flush=True)
    records = []
    for build in builds:
        for seed in range(args.seed, args.seed + args.seeds):
            workload = build(seed)
            walls = declared_walls(run_times(workload, seed), seed)
            rec = record(replay(workload, seed, args.samples, args.every_s, walls, args.forecast_setting))
            print_record(rec)
            records.append(rec)
    if args.json:
        args.json.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
    print_summary(records)


if __name__ == "__main__":
    main()
