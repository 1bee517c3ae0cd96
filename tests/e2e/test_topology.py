"""End to end on a real control plane: topology-aware gangs on labelled kwok nodes.

Each test builds Koordinator's example under its own names: two spines × two blocks × two nodes of 4 CPU,
labelled with NVIDIA topograph's keys. Gangs are plain pods of 1 CPU in a `scheduling.sigs.k8s.io`
PodGroup carrying the network-topology spec; fillers are plain pods pinned to one node.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import ApiError, LocalControlPlane, wait_until
from tests.e2e.conftest import Scene
from tests.e2e.waits import OBSERVE_S
from tests.e2e.workloads import debug_gang, never_bound, placement, pod, podgroup, wait_bound

pytestmark = pytest.mark.e2e
SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
TOPOLOGIES = "/apis/scheduling.koordinator.sh/v1alpha1/clusternetworktopologies"


def two_spines(scene: Scene) -> dict[str, str]:
    """Eight 4-CPU nodes, two per block, two blocks per spine; node → its block (`<scene>-b1` ...)."""
    block_of: dict[str, str] = {}
    for block in range(1, 5):
        labels = {SPINE: f"{scene.namespace}-s{(block + 1) // 2}", BLOCK: f"{scene.namespace}-b{block}"}
        for node in scene.add_nodes(2, labels=labels):
            block_of[node] = labels[BLOCK]
    return block_of


def fill(plane: LocalControlPlane, scene: Scene, used: dict[str, int]) -> None:
    """Bind a filler of `used[node]` CPU to each node and wait until they run."""
    for node, cpu in used.items():
        body = pod(f"filler-{node.rsplit('-', 1)[1]}", scene=scene.namespace, cpu=str(cpu), labels={"role": "filler"})
        body["spec"]["nodeSelector"]["kubernetes.io/hostname"] = node
        plane.create_pod(scene.namespace, body)
    wait_bound(plane, scene.namespace, "role=filler", len(used))


def submit_gang(plane: LocalControlPlane, scene: Scene, name: str, size: int, gather: dict[str, str]) -> str:
    """A PodGroup with the network-topology spec and `size` pods of 1 CPU; returns their label selector."""
    group = podgroup(name, min_member=size, legacy=True)
    rules = [{"layer": layer, "strategy": strategy} for layer, strategy in gather.items()]
    group["metadata"].setdefault("annotations", {})[SPEC] = json.dumps({"gatherStrategy": rules})
    plane.create_podgroup(scene.namespace, group)
    for i in range(size):
        plane.create_pod(scene.namespace, pod(f"{name}-{i}", scene=scene.namespace, labels={GROUP_LABEL: name}))
    return f"{GROUP_LABEL}={name}"


def debug_topology(plane: LocalControlPlane, **query: str) -> dict[str, Any]:
    url = f"{plane.observe_url}/debug/topology?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=5) as response:
        result: dict[str, Any] = json.load(response)
        return result


@pytest.fixture
def koordinator_topology(plane: LocalControlPlane) -> Iterator[None]:
    """The ClusterNetworkTopology `default` of Koordinator's example (spine → block → node), for one test."""
    body = {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": "default"},
        "spec": {
            "networkTopologySpec": [
                {"labelKey": [SPINE], "topologyLayer": "SpineLayer"},
                {"labelKey": [BLOCK], "parentTopologyLayer": "SpineLayer", "topologyLayer": "BlockLayer"},
                {"parentTopologyLayer": "BlockLayer", "topologyLayer": "NodeTopologyLayer"},
            ]
        },
    }
    plane.post(TOPOLOGIES, body)
    try:
        wait_until(
            "the extender to read ClusterNetworkTopology default",
            lambda: debug_topology(plane, depth="0")["source"] == "ClusterNetworkTopology default",
            30,
        )
        yield
    finally:
        try:
            plane.delete(f"{TOPOLOGIES}/default")
        except ApiError as error:
            if error.status != 404:
                raise


def test_a_must_gather_gang_lands_in_the_tightest_block(
    plane: LocalControlPlane, scene: Scene, koordinator_topology: None
) -> None:
    block_of = two_spines(scene)
    nodes = sorted(block_of)
    # b2 keeps 2 + 4 = 6 CPU free, exactly what the gang needs; the other blocks 8
    fill(plane, scene, {nodes[2]: 2})
    tree = debug_topology(plane, depth="2")["tree"]
    spine = next(s for s in tree["children"] if s["name"] == f"{scene.namespace}-s1")
    assert [(b["name"], b["nodes"], b["offerSlots"]) for b in spine["children"]] == [
        (f"{scene.namespace}-b1", 2, 8),
        (f"{scene.namespace}-b2", 2, 6),
    ]
    selector = submit_gang(plane, scene, "tight", 6, {"BlockLayer": "MustGather"})
    pods = wait_bound(plane, scene.namespace, selector, 6)
    assert Counter(block_of[node] for node in placement(pods).values()) == {f"{scene.namespace}-b2": 6}


def test_a_must_gather_gang_waits_with_the_reason_while_every_block_is_too_full(
    plane: LocalControlPlane, scene: Scene
) -> None:
    # the layers come from the extender's settings here (no ClusterNetworkTopology): spine, block, accelerator
    block_of = two_spines(scene)
    nodes = sorted(block_of)
    fill(plane, scene, {nodes[0]: 3, nodes[2]: 3, nodes[4]: 3, nodes[6]: 3})  # 5 CPU free in every block
    selector = submit_gang(plane, scene, "strict", 6, {"BlockLayer": "MustGather"})
    never_bound(plane, scene.namespace, selector, OBSERVE_S)
    why = debug_gang(plane, scene.namespace, "strict")["why"]
    assert why.startswith(
        f"gang {scene.namespace}/strict must gather in one BlockLayer: needs 6 pods (6 × 1 CPU, 1 GiB); "
        "no BlockLayer domain can hold them"
    ), why
    assert why.endswith("offers 5 slots)"), why


def test_a_prefer_gather_gang_spreads_over_blocks_only_when_it_must(plane: LocalControlPlane, scene: Scene) -> None:
    block_of = two_spines(scene)
    nodes = sorted(block_of)
    spine_of = {node: f"{scene.namespace}-s{1 if block_of[node][-1] in '12' else 2}" for node in nodes}
    fill(plane, scene, {nodes[0]: 3, nodes[2]: 3, nodes[4]: 3})  # b1, b2, b3: 5 free; b4: 8 free
    first = submit_gang(plane, scene, "first", 6, {"BlockLayer": "PreferGather"})
    started = time.monotonic()
    placed = placement(wait_bound(plane, scene.namespace, first, 6))
    assert {block_of[node] for node in placed.values()} == {f"{scene.namespace}-b4"}, placed
    # now no block holds 6 (b4 has 2 free): the next gang spreads, over the tighter spine s2 (5 + 2 free)
    second = submit_gang(plane, scene, "second", 6, {"BlockLayer": "PreferGather"})
    placed = placement(wait_bound(plane, scene.namespace, second, 6))
    assert {spine_of[node] for node in placed.values()} == {f"{scene.namespace}-s2"}, placed
    assert Counter(block_of[node] for node in placed.values()) == {
        f"{scene.namespace}-b3": 5,
        f"{scene.namespace}-b4": 1,
    }, placed
    assert time.monotonic() - started < 90
