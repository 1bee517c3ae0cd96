"""`tfjob-extender replay`: the flags, the report, the exit codes.

Reads the Nodes and TFJobs (`--state FILE`, else the API server with `--kubeconfig`, in-cluster credentials or the
default kubeconfig, as every process of the extender does), turns them into a workload (`history`), runs
`simulate`'s comparison on it over `--seeds` seeds (`comparison`) and prints what was read and assumed, the
per-policy table and what ours would gain; `--json PATH` writes the same as one JSON object. The exit code is
for scripts: `EXIT_REPLAYED`, `EXIT_UNREADABLE` when the input cannot be read or holds nothing to replay (no
schedulable node, no TFJob that can be replayed), `EXIT_UNREACHABLE` when the API server could not be asked.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config

from extender.config.settings import LOG_LEVELS
from extender.k8s.client import make_api_client
from extender.k8s.reads import Unreachable
from extender.replay import reading
from extender.replay.comparison import compare, render
from extender.replay.history import (
    DEFAULT_BATCH,
    DEFAULT_MODEL,
    DEFAULT_NIC_GBPS,
    Assumptions,
    History,
    RunTimeSource,
    history,
)
from extender.sim.throughput import MODELS

EXIT_REPLAYED = 0
EXIT_UNREADABLE = 2
EXIT_UNREACHABLE = 3
DEFAULT_SEEDS = 1
"""Seeds the comparison runs by default (each seed redraws the undeclared checkpoints and the tie-breaks)."""
HELP = "run this cluster's own TFJob history through the simulator: ours against the default scheduler and the "
HELP += (
    "baselines, and what the team would gain (exit 0 replayed, 2 input unreadable or empty, 3 API server not reachable)"
)
DESCRIPTION = f"""\
Replays a cluster's TFJobs through the simulator (`tfjob-extender simulate`'s comparison): ours, the default
scheduler (kube-scheduler alone) and the baselines, on the cluster's schedulable nodes, each job arriving when
it was created. Prints per policy the average and p95 JCT, the makespan and the average wait, and ours ÷ default
and ours ÷ the best honest baseline.

Input: --state FILE (a /debug/state dump) or the API server (--kubeconfig, else in-cluster credentials, else
~/.kube/config; it needs to list Nodes and TFJobs, nothing else).

What a cluster does not say is assumed, and printed:
  model, batch      every job trains {DEFAULT_MODEL} at batch {DEFAULT_BATCH} (--model, --batch; a TFJob's
                    tfjob-extender.io/sim-model and sim-batch annotations win)
  work              set so a job alone, at its submitted size, PS and workers on one node, runs as long as it
                    ran: tfjob-extender.io/run-s (written by the preemption loop), else status completionTime
                    - startTime; a running or pending job runs the median of the known run times
                    (--assumed-run-s)
  network           {DEFAULT_NIC_GBPS:g} Gb/s between nodes (--nic-gbps)
  checkpoints       tfjob-extender.io/checkpoint-interval-s where declared, else drawn per seed as simulate
                    draws a trace's

Exit 0 replayed, 2 the input cannot be read or holds nothing to replay, 3 the API server cannot be reached."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--state", type=Path, metavar="FILE", help="a /debug/state dump (or a file of manifests)")
    source.add_argument(
        "--kubeconfig", help="read the API server with this kubeconfig (default: in-cluster, else ~/.kube/config)"
    )
    parser.add_argument("--namespace", default="", help="only the TFJobs of this namespace (default: every one)")
    parser.add_argument(
        "--node-selector",
        action="append",
        default=[],
        type=_label,
        metavar="KEY=VALUE",
        help="only the nodes with this label (repeatable)",
    )
    parser.add_argument(
        "--seeds",
        type=_positive_int,
        default=DEFAULT_SEEDS,
        help=f"run seeds 1..N and average (default {DEFAULT_SEEDS})",
    )
    parser.add_argument(
        "--model", choices=sorted(MODELS), default=DEFAULT_MODEL, help="what every job is taken to train"
    )
    parser.add_argument("--batch", type=_positive_int, default=DEFAULT_BATCH, help="its batch size per worker")
    parser.add_argument("--nic-gbps", type=_positive_float, default=DEFAULT_NIC_GBPS, help="node network, Gb/s")
    parser.add_argument(
        "--assumed-run-s",
        type=_positive_float,
        metavar="SECONDS",
        help="how long a job of unknown run time runs (default: the median of the known run times)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the report as JSON here")
    parser.add_argument("--log-level", default="warning", choices=LOG_LEVELS)


def run(args: argparse.Namespace) -> int:
    try:
        manifests, source = _read(args)
    except reading.Unreadable as error:
        sys.stderr.write(f"replay: {error}\n")
        return EXIT_UNREADABLE
    except Unreachable as error:
        sys.stderr.write(f"replay: {error}\n")
        return EXIT_UNREACHABLE
    assumptions = Assumptions(
        args.model, args.batch, args.nic_gbps, args.assumed_run_s, args.namespace, dict(args.node_selector)
    )
    found = history(manifests, assumptions)
    empty = "no schedulable node" if not found.workload.nodes else "no TFJob that can be replayed"
    if not found.workload.nodes or not found.workload.jobs:
        sys.stderr.write("".join(skip.line() + "\n" for skip in found.skipped) + f"replay: {source}: {empty}\n")
        return EXIT_UNREADABLE
    comparison = compare(found, args.seeds)
    sys.stdout.write(describe(found, source, args.seeds) + "\n" + render(comparison))
    if args.json is not None:
        args.json.write_text(json.dumps(as_json(found, source, args.seeds, comparison), indent=1) + "\n")
    return EXIT_REPLAYED


def _read(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str]:
    """The manifests and a name for where they came from."""
    if args.state is not None:
        return reading.from_dump(args.state), str(args.state)
    try:
        api = make_api_client(args.kubeconfig)
    except (config.ConfigException, OSError, ValueError, yaml.YAMLError) as error:
        raise Unreachable(f"cannot load the credentials: {error}") from error
    try:
        where = api.configuration.host
        return reading.from_api(api, args.namespace), f"the API server at {where}"
    finally:
        api.close()  # type: ignore[no-untyped-call]


def describe(found: History, source: str, seeds: int) -> str:
    """What was replayed, where its run times came from, what was assumed and what was skipped."""
    load = found.workload
    counts = {kind: found.count(kind) for kind in RunTimeSource}
    known = ", ".join(f"{counts[s]} {s.value}" for s in (RunTimeSource.RECORDED, RunTimeSource.STATUS))
    model = {job.model for job in load.jobs}
    batch = {job.batch for job in load.jobs}
    jobs_skipped = sum(skip.kind == "TFJob" for skip in found.skipped)
    nodes_skipped = len(found.skipped) - jobs_skipped
    lines = [
        f"replay of {source}: {len(load.jobs)} TFJob(s) on {len(load.nodes)} node(s), {jobs_skipped} TFJob(s) "
        f"skipped{f', {nodes_skipped} node(s) left out' if nodes_skipped else ''}, seeds 1..{seeds}",
        f"  run times: {known}, {counts[RunTimeSource.ASSUMED]} assumed to run {found.assumed_run_s:.0f} s "
        f"({found.assumed_because})",
        f"  assumed: every job trains {'/'.join(sorted(model))} at batch {'/'.join(map(str, sorted(batch)))} "
        f"(a cluster does not say), on a {load.nic_gbps:g} Gb/s network; its work is what it trains in its run time "
        "alone at its submitted size, PS and workers on one node",
        f"  checkpoints: {len(found.declared_checkpoints)} declared (tfjob-extender.io/checkpoint-interval-s), "
        f"the other {len(load.jobs) - len(found.declared_checkpoints)} drawn per seed as simulate draws a trace's",
        *(f"  {skip.line()}" for skip in found.skipped),
    ]
    return "\n".join(lines) + "\n"


def as_json(found: History, source: str, seeds: int, comparison: dict[str, Any]) -> dict[str, Any]:
    load = found.workload
    jobs = {
        job.name: {
            "arrival_s": job.arrival_s,
            "run_s": round(found.run_s[job.name], 3),
            "run_time": found.sources[job.name].name.lower(),
            "ps": job.ps,
            "workers": job.workers,
            "min_workers": job.min_workers,
            "max_workers": job.max_workers,
            "elastic": job.elastic,
            "worker_gpu": job.worker_gpu,
            "checkpoint_s": job.checkpoint_s if job.name in found.declared_checkpoints else None,
        }
        for job in load.jobs
    }
    return {
        "source": source,
        "seeds": list(range(1, seeds + 1)),
        "nodes": len(load.nodes),
        "assumptions": {
            "models": sorted({job.model for job in load.jobs}),
            "batches": sorted({job.batch for job in load.jobs}),
            "nic_gbps": load.nic_gbps,
            "assumed_run_s": found.assumed_run_s,
            "assumed_because": found.assumed_because,
        },
        "run_times": {s.name.lower(): found.count(s) for s in RunTimeSource},
        "skipped": [{"what": skip.what, "reason": skip.reason} for skip in found.skipped],
        "jobs": jobs,
        **comparison,
    }


def _label(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value
