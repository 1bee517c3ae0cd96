"""The CPU mix of `benchmarks/peers.py`, in the simulator: ours against a first-come gang scheduler.

`benchmarks/peers.py` runs the CPU mix (24 TFJobs submitted at once on 8 × 16 CPU) through the real
schedulers; this runs the same jobs, seed by seed, through the simulator's `ours` (the extender's policy and
loops behind an emulated kube-scheduler) and `gang-fifo` (whole gangs in arrival order, spread, no queue
delays), and prints each run's makespan and average JCT. It shows the trade-off of starting small gangs
first (a lower average JCT, a later end of an all-at-once batch), and, with `--max-backoff-s`, what the
emulated kube-scheduler's pod backoff costs ours (kube-scheduler's default maximum is 10 s).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.peer_workloads import cpu_mix
from extender.sim.baselines import GangFifo
from extender.sim.cluster import SimCluster
from extender.sim.engine import RunResult, Simulation
from extender.sim.policies import JobProgress, Ours, Policy


class OursWithBackoff(Ours):
    """`ours` behind an emulated kube-scheduler whose maximum pod backoff is `max_backoff_s` seconds."""

    def __init__(self, max_backoff_s: float) -> None:
        super().__init__()
        self.max_backoff_s = max_backoff_s

    def attach(self, cluster: SimCluster, rng: random.Random, progress: Mapping[str, JobProgress]) -> None:
        super().attach(cluster, rng, progress)
        self.kube.max_backoff_s = self.max_backoff_s


def figures(result: RunResult) -> tuple[float, float]:
    """Makespan and average JCT (s) of a run."""
    jcts = [job.finished - job.spec.arrival_s for job in result.jobs.values() if job.finished is not None]
    return result.makespan_s, statistics.mean(jcts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-backoff-s", type=float, nargs="*", default=[10.0, 2.0])
    args = parser.parse_args()
    columns = [f"ours, backoff ≤ {value:g} s" for value in args.max_backoff_s] + ["gang-fifo"]
    print("| seed | " + " | ".join(f"{column}: makespan / avg JCT s" for column in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for seed in range(args.seed, args.seed + args.seeds):
        workload = cpu_mix(seed)
        policies: list[Policy] = [OursWithBackoff(value) for value in args.max_backoff_s] + [GangFifo()]
        cells = []
        for policy in policies:
            makespan, jct = figures(Simulation(workload, policy, seed=seed, startup_s=0.0).run())
            cells.append(f"{makespan:.1f} / {jct:.1f}")
        print(f"| {seed} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
