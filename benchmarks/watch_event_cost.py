"""Watch-event handling cost, in process: `ClusterState.apply` for one event, and the first snapshot after it.

A live model takes every pod, node and PodGroup change from its watches, so an event must cost what it
changes, not the size of the cluster. On synthetic clusters of 500 and 5000 nodes (32 CPU / 128 GiB each,
every node running one gang of 8: 1 PS + 7 workers of 4 CPU, with its PodGroup and TFJob; 8 pods per node),
with the heap settled as `serve` does, each case applies events in turn and times:
- `apply`: the event itself (conversion, the model's maps, the capacity table, the gang queue);
- `+ snapshot`: the same event and then `snapshot()`, which a verb would take next (what the event
  invalidated is rebuilt on first read).
Cases:
- a plain pod bound, then unbound (Pending → Running on a node, and back);
- a gang member's status changing (the gang's queue summary is rebuilt);
- a node's labels changing (its capacity row is rewritten);
- a PodGroup's `minMember` changing.
Prints p50 / p99 microseconds per event at each size: flat across sizes means O(what changed).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.cli.serving import settle_heap
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_sized_tfjob, running_job_pods

Obj = dict[str, Any]


def busy_cluster(nodes: int) -> list[Obj]:
    objects: list[Obj] = []
    for n in range(nodes):
        node = f"node-{n:05d}"
        name = f"job-{n:05d}"
        objects.append(make_node(node, cpu="32", memory="128Gi"))
        objects += running_job_pods(name, node=node, workers=7, cpu="4", memory="16Gi")
        objects += [
            make_podgroup(name, min_member=8),
            make_sized_tfjob(name, workers=7, cpu="4", memory="16Gi", min_workers=None, dynamic=False),
        ]
    return objects


def alternating(kind: Kind, first: Obj, second: Obj) -> Callable[[ClusterState, int], None]:
    """Apply `first` and `second` in turn as MODIFIED events, each a new resourceVersion."""

    def apply(state: ClusterState, step: int) -> None:
        obj = copy.copy(first if step % 2 else second)
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(1000 + step)}
        state.apply(kind, "MODIFIED", obj)

    return apply


def cases(nodes: int) -> dict[str, tuple[Kind, Obj, Callable[[ClusterState, int], None]]]:
    pending = make_pod("filler", cpu="1", memory="1Gi")
    bound = make_pod("filler", cpu="1", memory="1Gi", node="node-00001", phase="Running")
    member = running_job_pods("job-00002", node="node-00002", workers=7, cpu="4", memory="16Gi")[3]
    member_ready = copy.deepcopy(member)
    member_ready.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "True"}]
    node = make_node("node-00003", cpu="32", memory="128Gi")
    node_labelled = copy.deepcopy(node)
    node_labelled["metadata"].setdefault("labels", {})["zone"] = "b"
    group = make_podgroup("job-00004", min_member=8)
    group_smaller = make_podgroup("job-00004", min_member=6)
    return {
        "plain pod bound / unbound": (Kind.POD, pending, alternating(Kind.POD, bound, pending)),
        "gang member status change": (Kind.POD, member, alternating(Kind.POD, member_ready, member)),
        "node labels change": (Kind.NODE, node, alternating(Kind.NODE, node_labelled, node)),
        "PodGroup minMember change": (Kind.PODGROUP, group, alternating(Kind.PODGROUP, group_smaller, group)),
    }


def measure(state: ClusterState, apply: Callable[[ClusterState, int], None], runs: int, *, read: bool) -> list[float]:
    timings = []
    for step in range(runs):
        started = time.perf_counter()
        apply(state, step)
        if read:
            state.snapshot()
        timings.append(time.perf_counter() - started)
    return timings


def micros(timings: list[float]) -> str:
    ordered = sorted(timings)
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)]
    return f"{statistics.median(ordered) * 1e6:>8.0f} {p99 * 1e6:>8.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    args = parser.parse_args()
    print(f"{'case (µs per event)':<28} {'nodes':>6} | {'apply p50':>9} {'p99':>8} | {'+ snapshot p50':>14} {'p99':>8}")
    for nodes in args.nodes:
        state = cluster(*busy_cluster(nodes))
        for name, (kind, initial, apply) in cases(nodes).items():
            state.apply(kind, "ADDED" if name.startswith("plain") else "MODIFIED", initial)
            state.snapshot()
            settle_heap()
            alone = measure(state, apply, args.runs, read=False)
            with_read = measure(state, apply, args.runs, read=True)
            print(f"{name:<28} {nodes:>6} | {micros(alone)} {'':>1}| {micros(with_read)}", flush=True)


if __name__ == "__main__":
    main()
