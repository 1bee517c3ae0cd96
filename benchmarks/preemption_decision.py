"""Job-level preemption decision time, in process: `plan_preemption` on synthetic full clusters.

At 500 and 5000 nodes (32 CPU / 128 GiB each), the cluster is filled with lower-ranked work: elastic
TFJobs (1 PS + 7 workers of 4 CPU, may shrink to 2 workers) and non-elastic gangs of 8 pods. Cases:
- feasible: a high-priority gang of 32 pods of 4 CPU (128 CPU) needs room;
- whole gangs only: the same, when every running job is non-elastic;
- hopeless: the same gang when every running job is of its own PriorityClass and not elastic, so nothing
  ranked below it could free anything (refused from the gang queue's per-class totals);
- bigger than the cluster: a gang larger than the whole cluster.
The heap is settled before timing (collected and frozen), as `serve` does once its model is loaded.
Prints p50 / p99 / max milliseconds and the decision. Targets: p99 ≤ 50 ms at 5000 nodes; a hopeless gang
refused in ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.cli.serving import settle_heap
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from tests.builders import make_node, make_pod, make_podgroup, make_sized_tfjob, running_job_pods, snapshot

NOW = 1_772_359_300.0
SETTINGS = PolicySettings()


def tfjob(name: str, workers: int, *, elastic: bool) -> dict[str, Any]:
    return make_sized_tfjob(
        name, workers=workers, cpu="4", memory="16Gi", min_workers=2 if elastic else None, dynamic=elastic
    )


def full_cluster(nodes: int, *, elastic: bool, priority: int = 0) -> list[dict[str, Any]]:
    """Every node holds one job of 8 pods × 4 CPU (1 PS + 7 workers), spread over 8 slots per node."""
    objects: list[dict[str, Any]] = []
    for n in range(nodes):
        node = f"node-{n:05d}"
        objects.append(make_node(node, cpu="32", memory="128Gi"))
        name = f"job-{n:05d}"
        pods = running_job_pods(name, node=node, workers=7, cpu="4", memory="16Gi")
        for pod in pods:
            pod["spec"]["priority"] = priority
        objects += pods
        objects += [make_podgroup(name, min_member=3 if elastic else 8), tfjob(name, 7, elastic=elastic)]
    return objects


def preemptor(name: str, pods: int) -> list[dict[str, Any]]:
    members = [
        make_pod(
            f"{name}-worker-{i}", job=name, role="worker", index=i, group=name, cpu="4", memory="16Gi", priority=1000
        )
        for i in range(pods)
    ]
    return [*members, make_podgroup(name, min_member=pods)]


def measure(snap: ClusterSnapshot, gang: str, runs: int) -> tuple[list[float], object]:
    decision = plan_preemption(snap, gang, SETTINGS, NOW)
    settle_heap()
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        decision = plan_preemption(snap, gang, SETTINGS, NOW)
        timings.append(time.perf_counter() - started)
    return timings, decision


def describe(decision: object) -> str:
    if isinstance(decision, PreemptionPlan):
        return f"{len(decision.victims)} victims, {decision.disrupted} jobs disrupted"
    return f"refused: {getattr(decision, 'reason', decision)}"[:90]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    print(f"{'case':<34} {'nodes':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  decision")
    for nodes in (500, 5000):
        cases = [
            ("feasible (elastic surplus)", full_cluster(nodes, elastic=True), 32),
            ("whole gangs only", full_cluster(nodes, elastic=False), 32),
            ("hopeless (nothing lower to free)", full_cluster(nodes, elastic=False, priority=1000), 32),
            ("bigger than the cluster", full_cluster(nodes, elastic=True), nodes * 8 + 8),
        ]
        for case, objects, size in cases:
            snap = snapshot(*objects, *preemptor("urgent", size))
            timings, decision = measure(snap, "default/urgent", max(20, args.runs // (10 if nodes > 1000 else 1)))
            ordered = sorted(timings)
            p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000
            print(
                f"{case:<34} {nodes:>6} {statistics.median(ordered) * 1000:>8.2f} {p99:>8.2f} "
                f"{ordered[-1] * 1000:>8.2f}  {describe(decision)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
