"""`tfjob-extender simulate`: build the workload, run each policy on it, write the report.

Runs are independent and deterministic: each policy gets its own cluster and a generator seeded with
`--seed`, so the same arguments always give the same report. A progress line goes to stderr when it is
a terminal.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from extender.sim import baselines, gpu_traces, optimus, policies, report, workload
from extender.sim.engine import RunResult, Simulation

POLICIES: dict[str, Callable[[], policies.Policy]] = {
    "ours": policies.Ours,
    "default": policies.DefaultKubeScheduler,
    "gang-fifo": baselines.GangFifo,
    "kod2": baselines.Kod2,
    "tiresias": baselines.Tiresias,
    "optimus": optimus.Optimus,
}


SCENARIOS: dict[str, Callable[..., workload.Workload]] = {
    "kod2": workload.kod2,
    "pai": workload.pai_like,
    "pai-pools": workload.pai_pools,
    "gpu-gangs": gpu_traces.gpu_gangs,
    "heavy-tail": gpu_traces.heavy_tail,
    "mixed": gpu_traces.mixed,
}
"""Built-in workloads: each takes a seed, the generated ones also `jobs` and `nodes`."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", choices=sorted(SCENARIOS), help="a built-in workload")
    source.add_argument("--trace", type=Path, help="a trace file (JSON: nodes and jobs, see extender/sim/workload.py)")
    source.add_argument("--cluster-snapshot", type=Path, help="replay the nodes and TFJobs of a /debug/state dump")
    parser.add_argument("--seed", type=int, default=1, help="seed of the workload generator and tie-breaks")
    parser.add_argument("--jobs", type=int, help="jobs in a generated scenario (default: pai 200, the GPU ones 100)")
    parser.add_argument("--nodes", type=int, help="nodes in a generated scenario (default: pai 32, the GPU ones 8)")
    parser.add_argument(
        "--load", type=float, default=1.0, help="compress arrivals by this factor (2: twice as fast; default 1)"
    )
    parser.add_argument(
        "--policy", action="append", choices=sorted(POLICIES), help="policies to compare (repeatable; default: all)"
    )
    parser.add_argument("--out", type=Path, required=True, help="directory for report.json, table.md and plots")
    parser.add_argument("--save-trace", action="store_true", help="also write the workload as DIR/trace.json")


def build_workload(args: argparse.Namespace) -> workload.Workload:
    if args.trace is not None:
        built = workload.load_trace(args.trace)
    elif args.cluster_snapshot is not None:
        built = workload.from_snapshot(args.cluster_snapshot)
    else:
        built = scenario(args.scenario, args.seed, jobs=args.jobs, nodes=args.nodes)
    return workload.with_load(built, args.load)


def scenario(name: str, seed: int, *, jobs: int | None = None, nodes: int | None = None) -> workload.Workload:
    """A built-in workload; `jobs` and `nodes` resize a generated one (the KOD2 experiment is fixed)."""
    sizes = {key: value for key, value in (("jobs", jobs), ("nodes", nodes)) if value is not None}
    if name == "kod2" and sizes:
        raise ValueError("the kod2 scenario has a fixed size (10 jobs, 3 nodes)")
    return SCENARIOS[name](seed, **sizes)


def run(args: argparse.Namespace) -> int:
    load = build_workload(args)
    results = run_policies(load, args.policy or list(POLICIES), args.seed)
    meta: dict[str, Any] = {
        "workload": load.name,
        "seed": args.seed,
        "load": args.load,
        "jobs": len(load.jobs),
        "nodes": len(load.nodes),
    }
    written = report.write(results, args.out, meta)
    if not (args.out / "jct_cdf.png").exists():
        print("matplotlib is not installed: plots skipped (pip install 'tfjob-extender[sim]')", file=sys.stderr)
    if args.save_trace:
        workload.save_trace(load, args.out / "trace.json")
    print(report.table(written), end="")
    return 0


def run_policies(load: workload.Workload, names: Sequence[str], seed: int) -> list[RunResult]:
    """`load` through each policy of `names` (keys of `POLICIES`), one after the other, each on its own
    cluster with a generator seeded with `seed`; how long each took goes to stderr."""
    results: list[RunResult] = []
    for name in names:
        started = time.perf_counter()
        simulation = Simulation(load, POLICIES[name](), seed=seed, on_progress=_progress(name))
        results.append(simulation.run())
        print(f"{name}: simulated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return results


def _progress(name: str) -> Callable[[float], None] | None:
    """A progress bar on stderr, only when it is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(fraction: float) -> None:
        filled = int(fraction * 30)
        end = "\n" if fraction >= 1 else ""
        print(f"\r{name:>10} [{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%}", end=end, file=sys.stderr)

    return show
