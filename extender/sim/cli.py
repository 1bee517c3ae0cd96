"""`tfjob-extender simulate`: build the workload, run each policy on it, write the report.

Runs are independent and deterministic: each policy gets its own cluster and a generator seeded with
`--seed`, so the same arguments always give the same report. A progress line goes to stderr when it is
a terminal.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extender.sim import baselines, policies, report, workload
from extender.sim.engine import RunResult, Simulation

POLICIES: dict[str, Callable[[], policies.Policy]] = {
    "ours": policies.Ours,
    "default": policies.DefaultKubeScheduler,
    "gang-fifo": baselines.GangFifo,
    "kod2": baselines.Kod2,
    "tiresias": baselines.Tiresias,
    "optimus": baselines.Optimus,
}


SCENARIOS = ("kod2", "pai", "gpu-gangs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", choices=SCENARIOS, help="a built-in workload")
    source.add_argument("--trace", type=Path, help="a trace file (JSON: nodes and jobs, see extender/sim/workload.py)")
    source.add_argument("--cluster-snapshot", type=Path, help="replay the nodes and TFJobs of a /debug/state dump")
    parser.add_argument("--seed", type=int, default=1, help="seed of the workload generator and tie-breaks")
    parser.add_argument("--jobs", type=int, help="jobs in a generated scenario (default: pai 200, gpu-gangs 100)")
    parser.add_argument("--nodes", type=int, help="nodes in a generated scenario (default: pai 32, gpu-gangs 8)")
    parser.add_argument(
        "--policy", action="append", choices=sorted(POLICIES), help="policies to compare (repeatable; default: all)"
    )
    parser.add_argument("--out", type=Path, required=True, help="directory for report.json, table.md and plots")
    parser.add_argument("--save-trace", action="store_true", help="also write the workload as DIR/trace.json")


def build_workload(args: argparse.Namespace) -> workload.Workload:
    if args.trace is not None:
        return workload.load_trace(args.trace)
    if args.cluster_snapshot is not None:
        return workload.from_snapshot(args.cluster_snapshot)
    if args.scenario == "kod2":
        return workload.kod2(args.seed)
    if args.scenario == "gpu-gangs":
        return workload.gpu_gangs(args.seed, jobs=args.jobs or 100, nodes=args.nodes or 8)
    return workload.pai_like(args.seed, jobs=args.jobs or 200, nodes=args.nodes or 32)


def run(args: argparse.Namespace) -> int:
    load = build_workload(args)
    names = args.policy or list(POLICIES)
    results: list[RunResult] = []
    for name in names:
        started = time.perf_counter()
        simulation = Simulation(load, POLICIES[name](), seed=args.seed, on_progress=_progress(name))
        results.append(simulation.run())
        print(f"{name}: simulated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    meta: dict[str, Any] = {"workload": load.name, "seed": args.seed, "jobs": len(load.jobs), "nodes": len(load.nodes)}
    written = report.write(results, args.out, meta)
    if not (args.out / "jct_cdf.png").exists():
        print("matplotlib is not installed: plots skipped (pip install 'tfjob-extender[sim]')", file=sys.stderr)
    if args.save_trace:
        workload.save_trace(load, args.out / "trace.json")
    print(report.table(written), end="")
    return 0


def _progress(name: str) -> Callable[[float], None] | None:
    """A progress bar on stderr, only when it is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(fraction: float) -> None:
        filled = int(fraction * 30)
        end = "\n" if fraction >= 1 else ""
        print(f"\r{name:>10} [{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%}", end=end, file=sys.stderr)

    return show
