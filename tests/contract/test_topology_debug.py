"""`GET /debug/topology`: the tree the model derives from node labels, with node counts and offer slots."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.api.app import make_service
from extender.cli.args import parse_args, settings_from
from extender.config import Settings
from extender.policy.core.settings import DEFAULT_NETWORK_TOPOLOGY
from extender.policy.core.views import NetworkLayer
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_network_topology, make_node, make_pod, make_podgroup
from tests.contract.listeners import ListenerClient, client_of
from tests.contract.support import Clock

SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"


@pytest.fixture
def topology_state() -> ClusterState:
    nodes = [
        make_node(
            f"node-{i}", cpu="4", memory="16Gi", labels={SPINE: f"s{1 + (i - 1) // 4}", BLOCK: f"b{1 + (i - 1) // 2}"}
        )
        for i in range(1, 9)
    ]
    gang = [make_pod(f"g-{i}", cpu="2", memory="1Gi", group="g", legacy_group=True) for i in range(3)]
    return cluster(
        *nodes,
        make_pod("busy", cpu="3", node="node-3", phase="Running"),
        *gang,
        make_podgroup("g", min_member=3, legacy=True, gather={"BlockLayer": "MustGather"}),
    )


@pytest.fixture
def topology_client(topology_state: ClusterState) -> Iterator[ListenerClient]:
    with client_of(make_service(Settings(), topology_state, Clock())) as client:
        yield client


def test_the_tree_shows_domains_node_counts_and_offer_slots(topology_client: ListenerClient) -> None:
    body = topology_client.get("/debug/topology", params={"depth": 2}).json()
    assert body["source"] == "settings"
    assert [layer["layer"] for layer in body["layers"]] == ["SpineLayer", "BlockLayer", "AcceleratorLayer"]
    assert body["offerSlotsFor"] == "one pod of 1 CPU, 1 GiB"
    root = body["tree"]
    assert (root["layer"], root["nodes"], root["offerSlots"], root["free"]) == (
        "ClusterTopologyLayer",
        8,
        29,
        "29 CPU, 127 GiB",
    )
    s1 = root["children"][0]
    assert (s1["name"], s1["nodes"], s1["offerSlots"]) == ("s1", 4, 13)
    b2 = s1["children"][1]
    assert b2 == {"layer": "BlockLayer", "name": "b2", "nodes": 2, "free": "5 CPU, 31 GiB", "offerSlots": 5}


def test_offer_slots_for_a_gang_and_for_a_given_pod(topology_client: ListenerClient) -> None:
    body = topology_client.get("/debug/topology", params={"gang": "default/g", "depth": 2}).json()
    assert body["offerSlotsFor"] == "gang default/g: 3 × 2 CPU, 1 GiB"
    blocks = {b["name"]: b["offerSlots"] for s in body["tree"]["children"] for b in s["children"]}
    assert blocks == {"b1": 4, "b2": 2, "b3": 4, "b4": 4}
    body = topology_client.get("/debug/topology", params={"cpu": "4", "depth": 1}).json()
    assert body["offerSlotsFor"] == "one pod of 4 CPU"
    assert [s["offerSlots"] for s in body["tree"]["children"]] == [3, 4]
    assert "children" not in body["tree"]["children"][0]


def test_the_cluster_network_topology_replaces_the_settings(
    topology_state: ClusterState, topology_client: ListenerClient
) -> None:
    topology_state.apply(Kind.NETWORK_TOPOLOGY, "ADDED", make_network_topology({"SpineLayer": SPINE}))
    body = topology_client.get("/debug/topology", params={"depth": 1}).json()
    assert body["source"] == "ClusterNetworkTopology default"
    assert body["layers"] == [{"layer": "SpineLayer", "labelKeys": [SPINE]}]
    assert [(s["name"], s["nodes"]) for s in body["tree"]["children"]] == [("s1", 4), ("s2", 4)]


def test_a_cluster_without_nodes_is_a_bare_root() -> None:
    with client_of(make_service(Settings(), cluster(), Clock())) as client:
        tree = client.get("/debug/topology").json()["tree"]
    assert tree == {"layer": "ClusterTopologyLayer", "name": "", "nodes": 0, "free": "nothing", "offerSlots": 0}


@pytest.mark.parametrize(
    ("params", "status", "error"),
    [
        pytest.param({"gang": "default/nope"}, 404, "no PodGroup or gang members named default/nope", id="no gang"),
        pytest.param({"cpu": "lots"}, 400, "not a resource quantity: 'lots'", id="bad quantity"),
    ],
)
def test_a_bad_query_is_answered_with_the_reason(
    topology_client: ListenerClient, params: dict[str, str], status: int, error: str
) -> None:
    response = topology_client.get("/debug/topology", params=params)
    assert response.status_code == status
    assert response.json() == {"error": error}


def test_the_command_line_sets_the_fallback_layers() -> None:
    args = parse_args(["serve", "--network-topology", "SpineLayer=spine, RackLayer=rack"])
    assert settings_from(args).policy.network_topology == (
        NetworkLayer("SpineLayer", ("spine",)),
        NetworkLayer("RackLayer", ("rack",)),
    )
    assert settings_from(parse_args(["serve", "--network-topology", ""])).policy.network_topology == ()
    assert settings_from(parse_args(["serve"])).policy.network_topology == DEFAULT_NETWORK_TOPOLOGY
    with pytest.raises(SystemExit):
        parse_args(["serve", "--network-topology", "SpineLayer"])
