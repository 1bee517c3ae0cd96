"""Scaler planning time, in process: the pure planners on synthetic clusters of 500 and 5000 nodes.

Every node (32 CPU / 128 GiB) runs one elastic dynamic-worker TFJob: 1 PS + 3 workers of 4 CPU, may grow
to 7 workers or shrink to 2. Cases:
- scale-out: half of every node idle, so every job grows (one action per job);
- steady: every job at its maximum, the nodes full: nothing to do (the common tick);
- scale-in: the steady cluster and a high-priority gang of 8 pods × 4 CPU waiting (KOD2 scale-in).
Each case also runs consolidation where it applies. The heap is settled before timing (collected and
frozen), as `serve` does once its model is loaded. Prints p50 / p99 / max milliseconds and the result.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.cli.serving import settle_heap
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.preemption.scale_in import plan_scale_in
from extender.policy.scaling.consolidation import plan_consolidation
from extender.policy.scaling.scale_out import plan_scale_out
from tests.builders import make_node, make_pod, make_podgroup, make_sized_tfjob, running_job_pods, snapshot

NOW = 1_772_359_300.0
SETTINGS = PolicySettings()
T = TypeVar("T")


def tfjob(name: str, workers: int) -> dict[str, Any]:
    return make_sized_tfjob(name, workers=workers, cpu="4", memory="16Gi", min_workers=2, max_workers=7)


def cluster(nodes: int, workers: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for n in range(nodes):
        node, name = f"node-{n:05d}", f"job-{n:05d}"
        objects.append(make_node(node, cpu="32", memory="128Gi"))
        objects += running_job_pods(name, node=node, workers=workers, cpu="4", memory="16Gi")
        objects += [make_podgroup(name, min_member=1 + workers), tfjob(name, workers)]
    return objects


def waiting_gang() -> list[dict[str, Any]]:
    pods = [
        make_pod(f"urgent-worker-{i}", job="urgent", role="worker", index=i, group="urgent", cpu="4", memory="16Gi")
        for i in range(8)
    ]
    for pod in pods:
        pod["spec"]["priority"] = 1000
    return [*pods, make_podgroup("urgent", min_member=8)]


def measure(runs: int, work: Callable[[], T]) -> tuple[list[float], T]:
    times: list[float] = []
    result = work()
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        times.append((time.perf_counter() - start) * 1000)
    return times, result


def report(label: str, times: list[float], result: str) -> None:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    print(
        f"{label:<34} p50 {statistics.median(ordered):8.1f} ms  p99 {p99:8.1f} ms  max {ordered[-1]:8.1f} ms  {result}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    args = parser.parse_args()
    for nodes in args.nodes:
        run(nodes, args.runs)


def run(nodes: int, runs: int) -> None:
    growing: ClusterSnapshot = snapshot(*cluster(nodes, 3))
    steady: ClusterSnapshot = snapshot(*cluster(nodes, 7))
    crowded: ClusterSnapshot = snapshot(*cluster(nodes, 7), *waiting_gang())
    settle_heap()
    times, grown = measure(runs, lambda: plan_scale_out(growing, SETTINGS, NOW, {}).actions)
    report(f"{nodes} nodes: scale-out", times, f"{len(grown)} actions")
    times, quiet = measure(
        runs,
        lambda: (
            plan_scale_out(steady, SETTINGS, NOW, {}).actions
            + plan_consolidation(steady, SETTINGS, NOW, {}, {}).actions
        ),
    )
    report(f"{nodes} nodes: steady (out + consolidation)", times, f"{len(quiet)} actions")
    times, shrink = measure(runs, lambda: plan_scale_in(crowded, "default/urgent", SETTINGS, NOW))
    report(f"{nodes} nodes: scale-in for a gang", times, getattr(shrink, "reason", "")[:70])


if __name__ == "__main__":
    main()
