"""The network topology in the model: the ClusterNetworkTopology CR, the gather-spec and pod-index
annotations, the node-labels epoch, and the round trip through a dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.policy.core.views import Gather, GatherRule, NetworkLayer
from extender.state import convert
from extender.state.kinds import Kind
from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import cluster, make_network_topology, make_node, make_pod, make_podgroup

SPINE = NetworkLayer("SpineLayer", ("network.topology.nvidia.com/spine",))
BLOCK = NetworkLayer("BlockLayer", ("network.topology.nvidia.com/block",))


def topology(*entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "ClusterNetworkTopology",
        "metadata": {"name": "default"},
        "spec": {"networkTopologySpec": list(entries)},
    }


KOORDINATOR_EXAMPLE = topology(
    {"labelKey": ["network.topology.nvidia.com/spine"], "topologyLayer": "SpineLayer"},
    {
        "labelKey": ["network.topology.nvidia.com/block"],
        "parentTopologyLayer": "SpineLayer",
        "topologyLayer": "BlockLayer",
    },
    {"parentTopologyLayer": "BlockLayer", "topologyLayer": "NodeTopologyLayer"},
)


@pytest.mark.parametrize(
    ("obj", "layers"),
    [
        pytest.param(KOORDINATOR_EXAMPLE, (SPINE, BLOCK), id="Koordinator's example"),
        pytest.param(
            topology(
                {"parentTopologyLayer": "BlockLayer", "topologyLayer": "NodeTopologyLayer"},
                {"labelKey": ["b", "block"], "parentTopologyLayer": "SpineLayer", "topologyLayer": "BlockLayer"},
                {"labelKey": ["s"], "parentTopologyLayer": "ClusterTopologyLayer", "topologyLayer": "SpineLayer"},
            ),
            (NetworkLayer("SpineLayer", ("s",)), NetworkLayer("BlockLayer", ("b", "block"))),
            id="any order, several label keys, the cluster layer named as parent",
        ),
        pytest.param(
            topology({"labelKey": ["s"], "topologyLayer": "SpineLayer"}),
            (NetworkLayer("SpineLayer", ("s",)),),
            id="the node layer left out",
        ),
    ],
)
def test_layers_are_read_top_first(obj: dict[str, Any], layers: tuple[NetworkLayer, ...]) -> None:
    assert convert.network_layers(obj) == layers


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        pytest.param([{"labelKey": ["s"]}], "must be a list of entries with a topologyLayer", id="no layer name"),
        pytest.param(
            [{"topologyLayer": "A", "labelKey": ["a"]}, {"topologyLayer": "A", "labelKey": ["b"]}],
            "lists a layer twice",
            id="twice",
        ),
        pytest.param(
            [{"topologyLayer": "A", "labelKey": ["a"]}, {"topologyLayer": "B", "labelKey": ["b"]}],
            "must form one chain",
            id="two chains",
        ),
        pytest.param(
            [{"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "RackLayer"}],
            "layer 'RackLayer' is not defined",
            id="undefined parent",
        ),
        pytest.param(
            [
                {"topologyLayer": "A", "parentTopologyLayer": "B", "labelKey": ["a"]},
                {"topologyLayer": "B", "parentTopologyLayer": "A", "labelKey": ["b"]},
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "A"},
            ],
            "is in a cycle",
            id="cycle",
        ),
        pytest.param(
            [{"topologyLayer": "A"}, {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "A"}],
            "layer 'A' has no labelKey",
            id="no label key",
        ),
        pytest.param(
            [
                {"topologyLayer": "A", "labelKey": ["a"]},
                {"topologyLayer": "B", "labelKey": ["b"]},
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "A"},
            ],
            "layers ['B'] are not on the chain",
            id="stray layer",
        ),
    ],
)
def test_a_broken_topology_is_refused_saying_why(entries: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(convert.ConversionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        convert.network_layers(topology(*entries))


def test_gather_rules_and_the_pod_index_are_read() -> None:
    group = make_podgroup("g", min_member=2, gather={"BlockLayer": "mustgather", "SpineLayer": "PreferGather"})
    assert convert.group_view(group, "scheduling.x-k8s.io").gather == (
        GatherRule("BlockLayer", Gather.MUST),
        GatherRule("SpineLayer", Gather.PREFER),
    )
    assert convert.group_view(make_podgroup("g", min_member=2), "scheduling.x-k8s.io").gather == ()
    pod = make_pod("p", annotations={convert.NETWORK_TOPOLOGY_INDEX_ANNOTATION: "7"})
    assert convert.pod_view(pod).topology_index == 7
    assert convert.pod_view(make_pod("p")).topology_index is None


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        pytest.param("{", "is not JSON", id="not JSON"),
        pytest.param('{"gatherStrategy": {}}', 'must be an object with a "gatherStrategy" list', id="not a list"),
        pytest.param(
            '{"gatherStrategy": [{"layer": "BlockLayer", "strategy": "Gather"}]}', "PreferGather or", id="bad"
        ),
        pytest.param('{"gatherStrategy": [{"strategy": "MustGather"}]}', 'needs a "layer"', id="no layer"),
    ],
)
def test_a_bad_gather_spec_is_refused_saying_why(annotation: str, message: str) -> None:
    group = make_podgroup("g", min_member=2)
    group["metadata"]["annotations"] = {convert.NETWORK_TOPOLOGY_SPEC_ANNOTATION: annotation}
    with pytest.raises(convert.ConversionError, match=message):
        convert.group_view(group, "scheduling.x-k8s.io")


def test_a_bad_pod_index_is_refused() -> None:
    pod = make_pod("p", annotations={convert.NETWORK_TOPOLOGY_INDEX_ANNOTATION: "first"})
    with pytest.raises(convert.ConversionError, match="is not an integer"):
        convert.pod_view(pod)


def test_only_the_topology_named_default_counts_and_a_change_may_let_failed_plans_succeed() -> None:
    state = cluster(make_node("node-0"), make_network_topology({"RackLayer": "rack"}, name="other"))
    assert state.snapshot().network_topology is None
    before = state.snapshot().capacity_generation
    state.apply(Kind.NETWORK_TOPOLOGY, "ADDED", KOORDINATOR_EXAMPLE)
    assert state.snapshot().network_topology == (SPINE, BLOCK)
    assert state.snapshot().capacity_generation > before
    broken = topology({"topologyLayer": "A"}, {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "A"})
    state.apply(Kind.NETWORK_TOPOLOGY, "MODIFIED", broken)
    assert state.snapshot().network_topology == (SPINE, BLOCK), "an unreadable update keeps the last good layers"
    assert "has no labelKey" in state.last_rejection
    state.apply(Kind.NETWORK_TOPOLOGY, "DELETED", KOORDINATOR_EXAMPLE)
    assert state.snapshot().network_topology is None


def test_the_node_labels_epoch_moves_only_when_nodes_or_their_labels_change() -> None:
    state = cluster(make_node("node-0", labels={"rack": "r1"}))
    epoch = state.snapshot().node_labels_epoch
    state.apply(Kind.POD, "ADDED", make_pod("p", node="node-0", phase="Running"))
    state.apply(Kind.NODE, "MODIFIED", make_node("node-0", cpu="16", labels={"rack": "r1"}))
    assert state.snapshot().node_labels_epoch is epoch
    state.apply(Kind.NODE, "MODIFIED", make_node("node-0", cpu="16", labels={"rack": "r2"}))
    relabelled = state.snapshot().node_labels_epoch
    assert relabelled is not epoch
    state.apply(Kind.NODE, "ADDED", make_node("node-1"))
    assert state.snapshot().node_labels_epoch is not relabelled


def test_a_dump_keeps_the_topology_the_gather_rules_and_the_indices(tmp_path: Path) -> None:
    original = cluster(
        make_node("node-0", labels={"network.topology.nvidia.com/block": "b1"}),
        make_podgroup("g", min_member=1, legacy=True, gather={"BlockLayer": "MustGather"}),
        make_pod("g-0", group="g", legacy_group=True, annotations={convert.NETWORK_TOPOLOGY_INDEX_ANNOTATION: "3"}),
        KOORDINATOR_EXAMPLE,
    )
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(dump_state(original.snapshot())))))
    loaded = ClusterState()
    load_snapshot_file(loaded, path)
    before, after = original.snapshot(), loaded.snapshot()
    assert after.network_topology == before.network_topology == (SPINE, BLOCK)
    assert after.groups == before.groups
    assert after.pods["default/g-0"].topology_index == 3
