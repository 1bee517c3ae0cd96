"""Is the what-if right? Each smaller size's start band checked against a replay where that size was submitted.

A TFJob whose workers may shrink gets, beside its own band, a band at each smaller size down to its minimum
("with 6 workers instead of 8: about 3 min instead of 19"). Where its PodGroup already asks for that minimum
there is nothing to ask, so each seed's scenario is first made the way training-operator makes PodGroups
by default: every elastic job's gang asks for all its replicas and follows them (`sim.workload.asking_all`).
Then, per seed:

1. the scenario is replayed with the real forecaster (`benchmarks.start_forecast.replay`), its settings as
   shipped (a new gang gets its what-if at the first refresh that sees it, unless more than
   `what_if_gangs` arrive at once), and each job's forecast made at its submission is kept with its
   what-if bands;
2. up to `--pairs` (job, smaller size) are drawn from those forecasts, one size per job;
3. each is replayed with that job submitted at that size (its gang asking for it: `resubmitted`), all else
   the same seed, and its realised wait from submission is scored against the what-if band: inside
   p10–p90, below p10, above p90.

Printed and written (`--json`) per run: `pairs`, `inside` (share inside p10–p90; the target is ≥ 0.8),
`below_p10`, `above_p90`, the median p50 relative error (|p50 − wait| ÷ max(wait, 30 s)), and the same
shares for the same jobs' own bands at their submitted size in the first replay (`own_inside`), which say
how far the what-if's misses are the forecast's own.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.start_forecast import FLOOR_S, Forecast, replay, waits
from extender.loops.forecast_settings import StartForecastSettings
from extender.policy.forecast.model import StartBand
from extender.sim.cli import scenario
from extender.sim.engine import Simulation
from extender.sim.policies import Ours
from extender.sim.workload import Workload, asking_all, resubmitted

ELASTIC_SCENARIOS = ("mixed", "pai", "kod2")
"""The built-in scenarios with elastic jobs (the others have no smaller size to ask about)."""
SUBMISSION_SLACK_S = 1.0
"""A forecast made within this many simulated seconds of the job's arrival counts as made at submission."""


@dataclass(frozen=True, slots=True)
class Pair:
    job: str
    workers: int
    made_at: float
    band: StartBand
    """The what-if band at `workers`, seconds from `made_at`."""


def at_submission(forecasts: Sequence[Forecast], workload: Workload) -> dict[str, Forecast]:
    """Each job's first forecast made at its submission, if it had what-if bands."""
    arrival = {job.name: job.arrival_s for job in workload.jobs}
    kept: dict[str, Forecast] = {}
    for forecast in sorted(forecasts, key=lambda f: f.made_at):
        if forecast.job in kept or forecast.job not in arrival:
            continue
        if forecast.made_at - arrival[forecast.job] <= SUBMISSION_SLACK_S and forecast.what_if:
            kept[forecast.job] = forecast
    return kept


def drawn_pairs(kept: dict[str, Forecast], pairs: int, seed: int) -> list[Pair]:
    rng = random.Random(f"what-if/{seed}")
    jobs = sorted(kept)
    rng.shuffle(jobs)
    drawn = []
    for job in jobs[:pairs]:
        forecast = kept[job]
        workers, band = rng.choice(forecast.what_if)
        drawn.append(Pair(job, workers, forecast.made_at, band))
    return drawn


def realised_wait(workload: Workload, seed: int, pair: Pair) -> float | None:
    """Seconds from the forecast to the job's first start, replayed with it submitted at the pair's size."""
    result = Simulation(resubmitted(workload, pair.job, pair.workers), Ours(), seed=seed).run()
    placed = result.jobs[pair.job].placed
    return None if placed is None else placed - pair.made_at


def _shares(scored: Sequence[tuple[StartBand, float]]) -> dict[str, float]:
    inside = below = above = 0
    errors = []
    for band, wait in scored:
        assert band.p10_s is not None and band.p50_s is not None and band.p90_s is not None
        below += wait < band.p10_s
        above += wait > band.p90_s
        inside += band.p10_s <= wait <= band.p90_s
        errors.append(abs(band.p50_s - wait) / max(wait, FLOOR_S))
    count = max(len(scored), 1)
    return {
        "inside": inside / count,
        "below_p10": below / count,
        "above_p90": above / count,
        "median_rel_err": statistics.median(errors) if errors else float("nan"),
    }


def check(name: str, seed: int, pairs: int, samples: int, every_s: float) -> dict[str, Any]:
    workload = asking_all(scenario(name, seed))
    run = replay(workload, seed, samples, every_s, walls={})
    kept = at_submission(run.ours, workload)
    scored = []
    for pair in drawn_pairs(kept, pairs, seed):
        wait = realised_wait(workload, seed, pair)
        if wait is not None:
            scored.append((pair, wait))
    own = [(f.band, wait) for f, wait in waits([kept[pair.job] for pair, _ in scored], run.starts) if f.band.known]
    return {
        "workload": workload.name,
        "seed": seed,
        "samples": samples,
        "with_what_if": len(kept),
        "pairs": len(scored),
        **_shares([(pair.band, wait) for pair, wait in scored]),
        "own_pairs": len(own),
        **{f"own_{key}": value for key, value in _shares(own).items()},
        "details": [
            {
                "job": pair.job,
                "workers": pair.workers,
                "band": [pair.band.p10_s, pair.band.p50_s, pair.band.p90_s],
                "wait_s": wait,
            }
            for pair, wait in scored
        ],
    }


COLUMNS = ("with_what_if", "pairs", "inside", "below_p10", "above_p90", "median_rel_err", "own_inside")


def _cell(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="append", choices=ELASTIC_SCENARIOS, help="repeatable; default: all")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    parser.add_argument("--pairs", type=int, default=20, help="(job, smaller size) replays per seed, at most")
    parser.add_argument("--samples", type=int, default=StartForecastSettings().samples)
    parser.add_argument("--every-s", type=float, default=30.0, help="seconds between two forecasts of a gang")
    parser.add_argument("--json", type=Path, help="write one record per run to this file")
    args = parser.parse_args(argv)
    print("| run | " + " | ".join(COLUMNS) + " |\n|" + "---|" * (len(COLUMNS) + 1), flush=True)
    records = []
    for name in args.scenario or ELASTIC_SCENARIOS:
        for seed in range(args.seed, args.seed + args.seeds):
            rec = check(name, seed, args.pairs, args.samples, args.every_s)
            print(f"| {rec['workload']} seed {seed} | " + " | ".join(_cell(rec[c]) for c in COLUMNS) + " |", flush=True)
            records.append(rec)
    pooled = [(StartBand(*d["band"]), d["wait_s"]) for rec in records for d in rec["details"]]
    inside = round(_shares(pooled)["inside"] * len(pooled))
    print(f"# pooled: {inside}/{len(pooled)} realised starts inside the what-if's p10–p90", flush=True)
    if args.json:
        args.json.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
