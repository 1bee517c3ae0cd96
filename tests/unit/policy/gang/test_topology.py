"""Network-topology-aware gang placement on Koordinator's example: two spines × two blocks × two nodes.

    cluster ── s1 ── b1: node-1, node-2          every node: 4 CPU, 16 GiB
            │     └─ b2: node-3, node-4          gang members: 1 CPU, 1 GiB unless said otherwise
            └─ s2 ── b3: node-5, node-6
                  └─ b4: node-7, node-8

Layers: the default settings (spine → block → accelerator → node); no node carries an accelerator label,
so each node is its own accelerator island, and a gang that fits one node gathers on one node.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.resources import Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import NodeState
from extender.policy.core.views import NODE_LAYER, Gather, GatherRule, NetworkLayer, NodeView
from extender.policy.gang.planner import plan_gang
from extender.policy.gang.state import gang_state
from extender.policy.gang.topology import build_tree, must_gather_depth
from tests.builders import Obj, make_network_topology, make_node, make_pod, make_podgroup, snapshot
from tests.unit.policy.loop import NOW, SETTINGS, Loop

SPINE = "network.topology.nvidia.com/spine"
BLOCK = "network.topology.nvidia.com/block"
LAYOUT = {
    "node-1": ("s1", "b1"),
    "node-2": ("s1", "b1"),
    "node-3": ("s1", "b2"),
    "node-4": ("s1", "b2"),
    "node-5": ("s2", "b3"),
    "node-6": ("s2", "b3"),
    "node-7": ("s2", "b4"),
    "node-8": ("s2", "b4"),
}
BLOCK_OF = {node: block for node, (_, block) in LAYOUT.items()}
SPINE_OF = {node: spine for node, (spine, _) in LAYOUT.items()}
PREFER_ALL = {"SpineLayer": "PreferGather", "BlockLayer": "PreferGather", "AcceleratorLayer": "PreferGather"}
INDEX = "gang.scheduling.koordinator.sh/network-topology-index"


def nodes(cpu: str = "4") -> list[Obj]:
    return [make_node(name, cpu=cpu, memory="16Gi", labels={SPINE: s, BLOCK: b}) for name, (s, b) in LAYOUT.items()]


def busy(used: dict[str, int]) -> list[Obj]:
    """Running pods taking `used[node]` CPU on each node."""
    return [make_pod(f"busy-{node}", cpu=str(cpu), node=node, phase="Running") for node, cpu in used.items() if cpu]


def gang(size: int, gather: dict[str, str] | None, *, name: str = "g", cpu: str = "1") -> list[Obj]:
    pods = [make_pod(f"{name}-{i}", cpu=cpu, group=name, legacy_group=True) for i in range(size)]
    return [*pods, make_podgroup(name, min_member=size, legacy=True, gather=gather)]


def plan(
    *objects: Obj, group: str = "default/g", policy: PolicySettings = SETTINGS
) -> tuple[bool, str, dict[str, str]]:
    """Admitted?, the reason, and pod name → planned node."""
    snap = snapshot(*objects)
    verdict = plan_gang(snap, gang_state(snap, group), policy, NOW)
    return verdict.admitted, verdict.reason, {r.pod.split("/")[1]: r.node for r in verdict.reservations}


# -- PreferGather: the lowest layer that fits, the tightest domain -------------------------------------------


@pytest.mark.parametrize(
    ("size", "used", "where", "reason"),
    [
        # 3 × 1 CPU fit one node: the node layer; all nodes offer 4, the tie goes to the first by name
        pytest.param(3, {}, {"node-1"}, "in NodeTopologyLayer node-1 (offers 4 slots)", id="one node holds it"),
        # node-6 has exactly 3 CPU free: the tightest node (offer slots count all the room, not just 3)
        pytest.param(3, {"node-6": 1}, {"node-6"}, "in NodeTopologyLayer node-6", id="the tightest node"),
        # 6 pods need 6 CPU: no node; b2 offers 2 + 4 = 6 slots, the others 8: b2
        pytest.param(6, {"node-3": 2}, {"node-3", "node-4"}, "in BlockLayer b2 (offers 6 slots)", id="tightest block"),
        # 10 pods: no block (8 at most); s2 offers 3 + 4 + 4 + 4 = 15 slots, s1 16: s2
        pytest.param(10, {"node-5": 1}, None, "in SpineLayer s2 (offers 15 slots)", id="tightest spine"),
        # 17 pods: more than a spine (16): the whole cluster
        pytest.param(17, {}, None, "spread over the whole cluster", id="no domain holds it"),
    ],
)
def test_prefer_gather_uses_the_lowest_layer_that_holds_the_gang_and_its_tightest_domain(
    size: int, used: dict[str, int], where: set[str] | None, reason: str
) -> None:
    admitted, why, placed = plan(*nodes(), *busy(used), *gang(size, PREFER_ALL))
    assert admitted, why
    assert len(placed) == size
    assert reason in why
    if where is not None:
        assert set(placed.values()) == where


def test_a_spine_wide_gang_fills_whole_blocks_before_it_opens_another() -> None:
    # 10 pods in s2: the roomier block b4 (8 slots) is filled first, b3 (7 slots) takes the last 2
    admitted, why, placed = plan(*nodes(), *busy({"node-5": 1}), *gang(10, PREFER_ALL))
    assert admitted, why
    assert Counter(BLOCK_OF[node] for node in placed.values()) == {"b4": 8, "b3": 2}


def test_prefer_gather_spreads_over_blocks_only_when_no_block_can_hold_the_gang() -> None:
    # every block has 3 CPU taken: 5 free slots per block, the 6-pod gang needs a spine
    full_blocks = busy({"node-1": 3, "node-3": 3, "node-5": 3, "node-7": 3})
    admitted, why, placed = plan(*nodes(), *full_blocks, *gang(6, {"BlockLayer": "PreferGather"}))
    assert admitted, why
    assert "in SpineLayer s1" in why
    assert {SPINE_OF[node] for node in placed.values()} == {"s1"}
    assert {BLOCK_OF[node] for node in placed.values()} == {"b1", "b2"}


# -- MustGather: one domain or nothing -----------------------------------------------------------------------


def test_must_gather_keeps_the_gang_in_one_block() -> None:
    admitted, why, placed = plan(*nodes(), *busy({"node-3": 2}), *gang(6, {"BlockLayer": "MustGather"}))
    assert admitted, why
    assert {BLOCK_OF[node] for node in placed.values()} == {"b2"}


def test_must_gather_refuses_to_spread_and_says_why() -> None:
    full_blocks = busy({"node-1": 3, "node-3": 3, "node-5": 3, "node-7": 3})
    admitted, why, placed = plan(*nodes(), *full_blocks, *gang(6, {"BlockLayer": "MustGather"}))
    assert not admitted
    assert placed == {}
    assert why == (
        "gang default/g must gather in one BlockLayer: needs 6 pods (6 × 1 CPU, 1 GiB); no BlockLayer domain can "
        "hold them (the roomiest of 4, b1, offers 5 slots)"
    )


def test_the_strictest_must_gather_wins_and_prefer_gather_still_packs_below_it() -> None:
    # MustGather spine and block: the block rule is the stricter one; 3 pods still land on one node
    rules = {"SpineLayer": "MustGather", "BlockLayer": "MustGather"}
    admitted, why, placed = plan(*nodes(), *gang(3, rules))
    assert admitted, why
    assert len(set(placed.values())) == 1
    full_blocks = busy({"node-1": 3, "node-3": 3, "node-5": 3, "node-7": 3})
    admitted, why, _ = plan(*nodes(), *full_blocks, *gang(6, rules))
    assert not admitted
    assert "must gather in one BlockLayer" in why


def test_layer_names_match_case_insensitively_as_in_koordinators_example() -> None:
    admitted, why, placed = plan(*nodes(), *busy({"node-3": 2}), *gang(6, {"blockLayer": "MustGather"}))
    assert admitted, why
    assert {BLOCK_OF[node] for node in placed.values()} == {"b2"}


def test_a_must_gather_layer_the_topology_does_not_have_is_refused() -> None:
    admitted, why, _ = plan(*nodes(), *gang(2, {"RackLayer": "MustGather"}))
    assert not admitted
    assert why == (
        "gang default/g: MustGather layer 'RackLayer' is not a network topology layer (ClusterTopologyLayer, "
        "SpineLayer, BlockLayer, AcceleratorLayer, NodeTopologyLayer)"
    )


def test_an_unknown_prefer_gather_layer_is_ignored() -> None:
    admitted, why, placed = plan(*nodes(), *gang(3, {"RackLayer": "PreferGather"}))
    assert admitted, why
    assert len(set(placed.values())) == 1


def test_members_already_running_pin_the_domain() -> None:
    # 2 of 6 members already run on node-7 (b4); the other 4 must join them in b4, though b2 is tighter
    running = [
        make_pod(f"g-{i}", cpu="1", group="g", legacy_group=True, node="node-7", phase="Running") for i in range(2)
    ]
    pending = [make_pod(f"g-{i}", cpu="1", group="g", legacy_group=True) for i in range(2, 6)]
    group = make_podgroup("g", min_member=6, legacy=True, gather={"BlockLayer": "MustGather"})
    admitted, why, placed = plan(*nodes(), *busy({"node-3": 4}), *running, *pending, group)
    assert admitted, why
    assert {BLOCK_OF[node] for node in placed.values()} == {"b4"}


def test_members_running_in_two_blocks_cannot_must_gather_in_one() -> None:
    running = [
        make_pod(f"g-{i}", cpu="1", group="g", legacy_group=True, node=node, phase="Running")
        for i, node in enumerate(["node-1", "node-8"])
    ]
    pending = [make_pod("g-2", cpu="1", group="g", legacy_group=True)]
    group = make_podgroup("g", min_member=3, legacy=True, gather={"BlockLayer": "MustGather"})
    admitted, why, _ = plan(*nodes(), *running, *pending, group)
    assert not admitted
    assert why.endswith("but its running members already span several BlockLayer domains")


# -- heterogeneous gangs: exact, not one representative pod --------------------------------------------------


def test_a_ps_that_fits_nowhere_in_a_block_rules_the_block_out() -> None:
    # 1 PS of 3 CPU + 3 workers of 1 CPU (6 CPU, 4 pods); free CPU per node after the busy pods:
    #   b1: 4 + 4   b2: 4 + 2   b3: 2 + 2   b4: 4 + 4
    # Counting workers only, b3 offers 4 slots, just what the gang needs: a representative-pod count would
    # choose it, yet the PS fits on no node of b3. b2 offers 4 (3 workers + 1 more) + 2 = 6 slots, the
    # tightest block that holds the gang; inside it the PS lands with a worker on node-3, the roomier node.
    used = {"node-4": 2, "node-5": 2, "node-6": 2}
    ps = make_pod("g-ps-0", cpu="3", group="g", legacy_group=True, job="g", role="ps")
    workers = [
        make_pod(f"g-worker-{i}", cpu="1", group="g", legacy_group=True, job="g", role="worker", index=i)
        for i in range(3)
    ]
    group = make_podgroup("g", min_member=4, legacy=True, gather={"BlockLayer": "MustGather"})
    admitted, why, placed = plan(*nodes(), *busy(used), ps, *workers, group)
    assert admitted, why
    assert "in BlockLayer b2 (offers 6 slots)" in why
    assert placed["g-ps-0"] == "node-3"
    assert Counter(placed.values()) == {"node-3": 2, "node-4": 2}


def test_a_block_whose_slots_suffice_but_whose_nodes_cannot_take_the_pods_is_passed_over() -> None:
    # pods a (3 CPU), b and c (2 CPU each): 7 CPU. b1 has 4 + 3 free: 3 slots, as many as the gang has, and
    # each size fits somewhere; but the planner puts a on node-1 and then neither b nor c fits beside it or
    # on node-2 with c. The trial on b1 fails, and b2 (4 + 4) takes the gang.
    used = {"node-2": 1, "node-5": 4, "node-6": 4, "node-7": 4, "node-8": 4}
    pods = [make_pod(name, cpu=cpu, group="g", legacy_group=True) for name, cpu in (("a", "3"), ("b", "2"), ("c", "2"))]
    group = make_podgroup("g", min_member=3, legacy=True, gather={"BlockLayer": "MustGather"})
    admitted, why, placed = plan(*nodes(), *busy(used), *pods, group)
    assert admitted, why
    assert "in BlockLayer b2" in why
    assert {BLOCK_OF[node] for node in placed.values()} == {"b2"}


@pytest.mark.parametrize(
    ("used", "where"),
    [
        # b2 has room for all 6 pending pods: they all go there
        pytest.param({"node-1": 3, "node-3": 1, "node-5": 4, "node-6": 4, "node-7": 4, "node-8": 4}, {"b2"}, id="all"),
        # no block takes 6: the minimum of 4 gathers in the lowest domain that holds it, node-2; the rest wait
        pytest.param(
            {"node-1": 3, "node-3": 4, "node-4": 4, "node-5": 4, "node-6": 4, "node-7": 4, "node-8": 4},
            {"node-2"},
            id="minimum",
        ),
    ],
)
def test_a_domain_for_every_pending_member_is_preferred_to_one_for_the_minimum(
    used: dict[str, int], where: set[str]
) -> None:
    pods = [make_pod(f"g-{i}", cpu="1", group="g", legacy_group=True) for i in range(6)]
    group = make_podgroup("g", min_member=4, legacy=True, gather={"BlockLayer": "MustGather"})
    admitted, why, placed = plan(*nodes(), *busy(used), *pods, group)
    assert admitted, why
    assert len(placed) == (6 if where == {"b2"} else 4)
    assert {BLOCK_OF[node] if where == {"b2"} else node for node in placed.values()} == where


def test_a_gang_group_gathers_as_one() -> None:
    # master (1 pod of 2 CPU) and workers (4 pods of 1 CPU) form a GangGroup; the spec sits on one PodGroup
    members = ["default/master", "default/workers"]
    objects = [
        make_podgroup("master", min_member=1, legacy=True, gang_group=members, gather={"BlockLayer": "MustGather"}),
        make_podgroup("workers", min_member=4, legacy=True, gang_group=members),
        make_pod("master-0", cpu="2", group="master", legacy_group=True),
        *[make_pod(f"worker-{i}", cpu="1", group="workers", legacy_group=True) for i in range(4)],
    ]
    admitted, why, placed = plan(*nodes(), *busy({"node-5": 2}), *objects, group="default/master")
    assert admitted, why
    assert len(placed) == 5
    assert {BLOCK_OF[node] for node in placed.values()} == {"b3"}


# -- pod index -------------------------------------------------------------------------------------------


def test_consecutive_indices_share_the_lowest_domain() -> None:
    # 12 pods need a spine; names run against the index order (g-0 has index 11)
    pods = [
        make_pod(f"g-{i}", cpu="1", group="g", legacy_group=True, annotations={INDEX: str(11 - i)}) for i in range(12)
    ]
    group = make_podgroup("g", min_member=12, legacy=True, gather={"SpineLayer": "MustGather"})
    admitted, why, placed = plan(*nodes(), *pods, group)
    assert admitted, why
    by_index = [placed[f"g-{11 - index}"] for index in range(12)]
    # s1 walked depth-first: b1 (node-1, node-2), then b2 (node-3)
    assert by_index == ["node-1"] * 4 + ["node-2"] * 4 + ["node-3"] * 4


def test_pods_without_an_index_follow_the_indexed_ones() -> None:
    pods = [make_pod("g-a", cpu="1", group="g", legacy_group=True)]
    pods += [make_pod(f"g-{i}", cpu="1", group="g", legacy_group=True, annotations={INDEX: str(i)}) for i in range(8)]
    group = make_podgroup("g", min_member=9, legacy=True, gather={"SpineLayer": "PreferGather"})
    admitted, why, placed = plan(*nodes(), *pods, group)
    assert admitted, why
    assert [placed[f"g-{i}"] for i in range(8)] == ["node-1"] * 4 + ["node-2"] * 4
    assert placed["g-a"] == "node-3"


# -- where the layers come from; no spec, no change --------------------------------------------------------


def test_the_cluster_network_topology_named_default_replaces_the_settings() -> None:
    # the CR knows only racks (label `rack`): node-1..4 in r1, node-5..8 in r2
    racks = [make_node(f"node-{i}", cpu="4", labels={"rack": "r1" if i <= 4 else "r2"}) for i in range(1, 9)]
    cr = make_network_topology({"RackLayer": "rack"})
    # node-1 is full: r1 offers 12 slots, r2 16; the 10-pod gang goes to the tighter r1
    admitted, why, placed = plan(*racks, *busy({"node-1": 4}), cr, *gang(10, {"RackLayer": "MustGather"}))
    assert admitted, why
    assert "in RackLayer r1 (offers 12 slots)" in why
    assert set(placed.values()) == {"node-2", "node-3", "node-4"}
    other = make_network_topology({"RackLayer": "rack"}, name="other")
    admitted, why, _ = plan(*racks, other, *gang(10, {"RackLayer": "MustGather"}))
    assert not admitted
    assert "'RackLayer' is not a network topology layer" in why


def test_without_a_spec_topology_labels_change_nothing() -> None:
    labelled = plan(*nodes(), *busy({"node-3": 2}), *gang(10, None))
    bare = [make_node(name, cpu="4", memory="16Gi") for name in LAYOUT]
    assert plan(*bare, *busy({"node-3": 2}), *gang(10, None)) == labelled
    assert labelled[1] == "gang default/g: planned 10 pods on 3 node(s)"


def test_nodes_without_labels_are_domains_of_their_own() -> None:
    bare = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(1, 5)]
    admitted, why, _ = plan(*bare, *gang(6, {"BlockLayer": "MustGather"}))
    assert not admitted
    assert "offers 4 slots" in why
    admitted, why, _ = plan(*bare, *gang(6, {"BlockLayer": "PreferGather"}))
    assert admitted, why
    assert "spread over the whole cluster" in why


@pytest.mark.parametrize("gather", [{"BlockLayer": "MustGather"}, PREFER_ALL], ids=["MustGather", "PreferGather"])
def test_a_cluster_without_nodes_admits_nothing(gather: dict[str, str]) -> None:
    admitted, why, _ = plan(*gang(2, gather))
    assert not admitted
    assert "2 pods" in why


def test_through_filter_the_member_is_steered_into_the_chosen_block() -> None:
    loop = Loop(*nodes(), *busy({"node-3": 2}), *gang(6, {"BlockLayer": "MustGather"}))
    decision = loop.filter("g-0")
    assert decision.outcome == "planned"
    assert decision.feasible[0] in {"node-3", "node-4"}
    assert {r.node for r in loop.snapshot.reservations.values()} == {"node-3", "node-4"}
    assert "in BlockLayer b2" in decision.summary


@pytest.mark.parametrize(
    ("gather", "feasible"),
    [
        pytest.param({"BlockLayer": "MustGather"}, ("node-3", "node-4"), id="MustGather: only its block"),
        pytest.param({"BlockLayer": "PreferGather"}, tuple(LAYOUT), id="PreferGather: anywhere"),
    ],
)
def test_a_late_member_of_a_running_gang_joins_its_must_gather_domain(
    gather: dict[str, str], feasible: tuple[str, ...]
) -> None:
    # minMember 2 is met by the two members on node-3 (b2); a third, surplus member arrives
    running = [make_pod(f"g-{i}", group="g", legacy_group=True, node="node-3", phase="Running") for i in range(2)]
    late = make_pod("g-2", group="g", legacy_group=True)
    loop = Loop(*nodes(), *running, late, make_podgroup("g", min_member=2, legacy=True, gather=gather))
    decision = loop.filter("g-2")
    assert decision.feasible == feasible
    if len(feasible) == 2:
        assert decision.unresolvable["node-1"] == "gang default/g must gather in BlockLayer b2"
        assert decision.summary == "8/8 nodes fit 1 CPU, 1 GiB; 2 inside BlockLayer b2"


# -- the tree ------------------------------------------------------------------------------------------------


def test_the_tree_keeps_same_named_domains_of_different_parents_apart() -> None:
    states = {
        name: NodeState(NodeView(name, Resources({"cpu": 1000}), labels))
        for name, labels in {
            "a": {"spine": "s1", "block": "b1"},
            "b": {"spine": "s2", "block": "b1"},
            "c": {"spine": "s2"},
        }.items()
    }
    tree = build_tree(states, (NetworkLayer("SpineLayer", ("spine",)), NetworkLayer("BlockLayer", ("block",))))
    assert tree.layers == ("ClusterTopologyLayer", "SpineLayer", "BlockLayer", NODE_LAYER)
    assert sorted((d.parent.name if d.parent else "", d.name) for d in tree.levels[2]) == [
        ("s1", "b1"),
        ("s2", "b1"),
        ("s2", "c"),
    ]
    assert must_gather_depth(tree, [GatherRule("blocklayer", Gather.MUST)]) == 2
    assert must_gather_depth(tree, [GatherRule("SpineLayer", Gather.PREFER)]) == 0
    assert must_gather_depth(tree, [GatherRule(NODE_LAYER, Gather.MUST)]) == 3


# -- properties ----------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    used=st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8),
    size=st.integers(min_value=1, max_value=20),
    must=st.sampled_from([None, "SpineLayer", "BlockLayer", NODE_LAYER]),
)
def test_gathered_gangs_stay_in_one_domain_and_are_admitted_exactly_when_one_can_hold_them(
    used: list[int], size: int, must: str | None
) -> None:
    load = dict(zip(LAYOUT, used, strict=True))
    gather = {**PREFER_ALL, must: "MustGather"} if must else PREFER_ALL
    admitted, why, placed = plan(*nodes(), *busy(load), *gang(size, gather))
    free = {node: 4 - cpu for node, cpu in load.items()}

    def domain_of(node: str) -> str:
        return {None: "cluster", "SpineLayer": SPINE_OF[node], "BlockLayer": BLOCK_OF[node]}.get(must, node)

    room = Counter[str]()
    for node, cpu in free.items():
        room[domain_of(node)] += cpu
    assert admitted == (max(room.values()) >= size), why
    if admitted:
        assert len({domain_of(node) for node in placed.values()}) == 1
        for node, count in Counter(placed.values()).items():
            assert count <= free[node]
