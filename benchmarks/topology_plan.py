"""Network-topology-aware gang planning time, in process: `plan_gang` for a 64-pod gang on 5000 nodes.

The cluster has three network layers under the default ClusterNetworkTopology layers: 4 spines × 10 blocks
(125 nodes each) × accelerator islands of 8 nodes (16 per block), nodes of 8 GPUs / 96 CPU / 768 GiB.
Background pods take 1–8 GPUs on most nodes (seeded), so few places hold the gang. Cases, each a gang of
64 pods planned whole:
- no topology spec: the plain co-location planner on the whole cluster (the reference);
- PreferGather, one island holds it: 64 × 1 GPU, a handful of islands are empty;
- PreferGather, needs a block: every island is partly used, the gang gathers in the tightest block;
- MustGather block, heterogeneous: 4 PS (8 CPU, no GPU) + 60 workers (1 GPU, 4 CPU);
- index-ordered: as "needs a block", with network-topology indices on every pod;
- MustGather island, refused: no island holds the gang, the plan fails with the reason.
Prints p50 / p99 / max milliseconds per case and where the gang went. Target: p99 ≤ 20 ms. Each timing
is a cold plan on its snapshot except for the topology tree, which the model keeps per node-labels epoch
(built once, then reused until a node is added, removed or relabelled); the first call builds it.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.gang.planner import GangVerdict, plan_gang
from extender.policy.gang.state import gang_state
from extender.policy.gang.topology import build_tree
from tests.builders import make_node, make_pod, make_podgroup, snapshot

NOW = 1_772_359_300.0
SETTINGS = PolicySettings()
NODES = 5000
SPINES, BLOCKS_PER_SPINE, ISLAND_SIZE = 4, 10, 8
GANG = 64
INDEX = "gang.scheduling.koordinator.sh/network-topology-index"


def topology_labels(node: int) -> dict[str, str]:
    per_block = NODES // (SPINES * BLOCKS_PER_SPINE)
    block = node // per_block
    return {
        "network.topology.nvidia.com/spine": f"spine-{block // BLOCKS_PER_SPINE}",
        "network.topology.nvidia.com/block": f"block-{block:02d}",
        "network.topology.nvidia.com/accelerator": f"island-{block:02d}-{(node % per_block) // ISLAND_SIZE:02d}",
    }


def cluster(*, empty_islands: int, seed: int = 7) -> list[dict[str, Any]]:
    """Nodes, and background pods using 1–8 GPUs on most nodes; the first `empty_islands` islands of
    every tenth block are left idle, and one node in every other island keeps at least one GPU busy."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = []
    idle = {f"island-{b:02d}-{i:02d}" for b in range(0, SPINES * BLOCKS_PER_SPINE, 10) for i in range(empty_islands)}
    for n in range(NODES):
        name = f"node-{n:05d}"
        labels = topology_labels(n)
        objects.append(make_node(name, cpu="96", memory="768Gi", gpu=8, labels=labels))
        if labels["network.topology.nvidia.com/accelerator"] in idle:
            continue
        used = rng.choice((0, 0, 1, 2, 4, 8)) or (1 if n % ISLAND_SIZE == 0 else 0)
        if used:
            busy = make_pod(f"busy-{n}", cpu=str(4 * used), memory="32Gi", gpu=used, node=name, phase="Running")
            objects.append(busy)
    return objects


def gang(name: str, gather: dict[str, str] | None, *, ps: int = 0, indexed: bool = False) -> list[dict[str, Any]]:
    pods = [
        make_pod(f"{name}-ps-{i}", cpu="8", memory="16Gi", job=name, role="ps", index=i, group=name) for i in range(ps)
    ]
    pods += [
        make_pod(
            f"{name}-worker-{i}",
            cpu="4",
            memory="32Gi",
            gpu=1,
            job=name,
            role="worker",
            index=i,
            group=name,
            annotations={INDEX: str(GANG - 1 - i)} if indexed else None,
        )
        for i in range(GANG - ps)
    ]
    return [*pods, make_podgroup(name, min_member=GANG, gather=gather)]


def measure(snap: ClusterSnapshot, group: str, runs: int) -> tuple[list[float], GangVerdict]:
    verdict = plan_gang(snap, gang_state(snap, group), SETTINGS, NOW)
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        verdict = plan_gang(snap, gang_state(snap, group), SETTINGS, NOW)
        timings.append(time.perf_counter() - started)
    return timings, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with_idle_islands = cluster(empty_islands=2)
    busy_islands = cluster(empty_islands=0)
    prefer = {"AcceleratorLayer": "PreferGather", "BlockLayer": "PreferGather", "SpineLayer": "PreferGather"}
    cases = [
        ("no topology spec (reference)", busy_islands, gang("g", None)),
        ("PreferGather, one island holds it", with_idle_islands, gang("g", prefer)),
        ("PreferGather, needs a block", busy_islands, gang("g", prefer)),
        ("MustGather block, 4 PS + 60 workers", busy_islands, gang("g", {"BlockLayer": "MustGather"}, ps=4)),
        ("index-ordered, needs a block", busy_islands, gang("g", prefer, indexed=True)),
        ("MustGather island, refused", busy_islands, gang("g", {"AcceleratorLayer": "MustGather"})),
    ]
    print(f"{'case':<38} {'nodes':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  outcome")
    nodes = snapshot(*busy_islands).nodes
    builds = []
    for _ in range(max(5, args.runs // 5)):
        started = time.perf_counter()
        tree = build_tree(nodes, SETTINGS.network_topology)
        builds.append(time.perf_counter() - started)
    ordered = sorted(builds)
    print(
        f"{'topology tree build (per label change)':<38} {len(nodes):>6} {statistics.median(ordered) * 1000:>8.2f} "
        f"{ordered[-1] * 1000:>8.2f} {ordered[-1] * 1000:>8.2f}  {sum(len(level) for level in tree.levels)} domains",
        flush=True,
    )
    for case, objects, members in cases:
        snap = snapshot(*objects, *members)
        gc.collect()
        gc.freeze()  # as `serve` settles its heap once the model is loaded
        timings, verdict = measure(snap, "default/g", args.runs)
        ordered = sorted(timings)
        p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000
        print(
            f"{case:<38} {len(snap.nodes):>6} {statistics.median(ordered) * 1000:>8.2f} {p99:>8.2f} "
            f"{ordered[-1] * 1000:>8.2f}  {verdict.reason[:110]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
