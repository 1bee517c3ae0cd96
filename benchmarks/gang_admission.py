"""The filter call that plans a gang, in process, as more and more gangs wait.

N nodes of 32 CPU / 128 GiB, W waiting gangs of 8 pods (1 PS + 7 workers of 1 CPU, each its own TFJob
and PodGroup, created one second apart so their ranks follow arrival). Times `filter_pod` for a member
of the highest-ranked gang (nothing goes before it) and of the lowest-ranked one (every gang above it
that fits now is checked, up to `rank_gangs_checked`), at `now` before any gang starves and at a `now`
when every gang starves. A third case ("held room") runs every node three quarters full with a starving
gang of 8 × 16 CPU that fits nowhere: it holds the room its minimum needs on the nodes that clear
soonest, and the lowest-ranked gang is planned around that room. A fourth ("loop pass, full") times one
pass of the preemption loop's walk (`choose_preemption`, with the loop's bounds) on a cluster with no
room left: every waiting gang needs more than is free in all, so none is planned, and the pass ends in
the victim searches for the first three. Nothing is committed, so each call plans afresh on the same
snapshot. Each snapshot is moved out of the cyclic collector's reach once built, as `serve` settles its
model (`settle_heap`), so no call pays for a collection walking the whole model.
Prints p50 / p99 / max milliseconds. Target: ≤ 5 ms at 500 nodes with 250 gangs waiting, and the cost
must not grow with the number of waiting gangs.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.cli.serving import settle_heap
from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.policy import PolicySettings, filter_pod
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.preemption.choice import choose_preemption
from extender.state.store import ClusterState
from tests.builders import make_node, make_pod, make_podgroup, make_sized_tfjob, running_job_pods, snapshot

SETTINGS = PolicySettings()
CREATED = datetime(2026, 3, 1, 10, 0, tzinfo=UTC).timestamp()


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting_gang(index: int) -> list[dict[str, Any]]:
    name = f"g{index:05d}"
    created = stamp(CREATED + index)
    pods = [make_pod(f"{name}-ps-0", job=name, role="ps", group=name)]
    pods += [make_pod(f"{name}-worker-{i}", job=name, role="worker", index=i, group=name) for i in range(7)]
    group = make_podgroup(name, min_member=8)
    job = make_sized_tfjob(name, workers=7, created=created)
    for obj in (*pods, group):
        obj["metadata"]["creationTimestamp"] = created
    return [*pods, group, job]


def cluster(nodes: int, gangs: int) -> ClusterSnapshot:
    objects = [make_node(f"node-{i:05d}", cpu="32", memory="128Gi") for i in range(nodes)]
    return snapshot(*objects, *waiting_gangs(gangs))


def held_room_cluster(nodes: int, gangs: int) -> ClusterSnapshot:
    """Every node runs a job of 6 × 4 CPU; the gang `big` (8 × 16 CPU, created first) fits nowhere."""
    objects = nodes_running_a_job(nodes, workers=5)
    big = [make_pod("big-ps-0", job="big", role="ps", group="big", cpu="16")]
    big += [make_pod(f"big-worker-{i}", job="big", role="worker", index=i, group="big", cpu="16") for i in range(7)]
    long_ago = stamp(CREATED - SETTINGS.starvation_limit_s * 3)
    for obj in (*big, group := make_podgroup("big", min_member=8)):
        obj["metadata"]["creationTimestamp"] = long_ago
    objects += [*big, group, make_sized_tfjob("big", workers=7, cpu="16", created=long_ago)]
    return snapshot(*objects, *waiting_gangs(gangs))


def full_cluster(nodes: int, gangs: int) -> ClusterSnapshot:
    """Every node runs a rigid job of 8 × 4 CPU (nothing free, nothing to scale in) and the gangs wait."""
    return snapshot(*nodes_running_a_job(nodes, workers=7), *waiting_gangs(gangs))


def nodes_running_a_job(nodes: int, *, workers: int) -> list[dict[str, Any]]:
    """Nodes of 32 CPU / 128 GiB, each running a job of its own: a PS and `workers` workers of 4 CPU."""
    objects: list[dict[str, Any]] = []
    for i in range(nodes):
        node = f"node-{i:05d}"
        objects.append(make_node(node, cpu="32", memory="128Gi"))
        objects += running_job_pods(f"run-{i:05d}", node=node, workers=workers, cpu="4", memory="16Gi")
    return objects


def waiting_gangs(gangs: int) -> list[dict[str, Any]]:
    return [obj for index in range(gangs) for obj in waiting_gang(index)]


def time_loop_pass(snap: ClusterSnapshot, now: float, runs: int) -> tuple[list[float], str]:
    knobs = PreemptionLoop(ClusterState(), RecordingActuator(), SETTINGS, lambda: now).loop_settings

    def walk() -> str:
        choice = choose_preemption(
            snap,
            SETTINGS,
            now,
            {},
            max_gangs=knobs.max_gangs_per_tick,
            max_checked=knobs.max_gangs_checked_per_tick,
            max_walked=knobs.max_gangs_walked_per_tick,
        )
        return "admit" if choice.admit else ("preempt" if choice.plan else f"nothing ({len(choice.refused)} refused)")

    return timed(walk, runs)


def settled(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot, with the heap settled as `serve` settles its model (the previous one's let go first)."""
    gc.unfreeze()
    settle_heap()
    return snap


def time_filter(snap: ClusterSnapshot, gang: int, now: float, runs: int) -> tuple[list[float], str]:
    pod = snap.pods[f"default/g{gang:05d}-ps-0"]
    candidates = sorted(snap.nodes)
    return timed(lambda: filter_pod(snap, pod, candidates, SETTINGS, now).outcome, runs)


def timed(call: Callable[[], str], runs: int) -> tuple[list[float], str]:
    """Seconds taken by each of `runs` calls, after one untimed call whose outcome is returned."""
    outcome = call()
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return timings, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--gangs", type=int, nargs="+", default=[10, 250, 1000])
    args = parser.parse_args()
    print(f"{'nodes':>6} {'waiting':>8} {'planned gang':<14} {'clock':<9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for nodes in args.nodes:
        for gangs in args.gangs:
            snap = settled(cluster(nodes, gangs))
            fresh = CREATED + gangs + 60
            starved = fresh + 10 * SETTINGS.starvation_limit_s
            for label, gang in (("highest", 0), ("lowest", gangs - 1)):
                for clock, now in (("fresh", fresh), ("starving", starved)):
                    report(nodes, gangs, label, clock, *time_filter(snap, gang, now, args.runs))
            held = settled(held_room_cluster(nodes, gangs))
            report(nodes, gangs, "lowest", "held room", *time_filter(held, gangs - 1, CREATED + gangs + 60, args.runs))
            full = settled(full_cluster(nodes, gangs))
            report(nodes, gangs, "loop pass", "full", *time_loop_pass(full, CREATED + gangs + 60, args.runs))


def report(nodes: int, gangs: int, label: str, clock: str, timings: list[float], outcome: str) -> None:
    ordered = sorted(timings)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000
    print(
        f"{nodes:>6} {gangs:>8} {label:<14} {clock:<9} {statistics.median(ordered) * 1000:>8.2f} "
        f"{p99:>8.2f} {ordered[-1] * 1000:>8.2f}  {outcome}",
        flush=True,
    )


if __name__ == "__main__":
    main()
