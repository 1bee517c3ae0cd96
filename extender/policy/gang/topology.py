"""Network-topology-aware gang placement: a gang inside the smallest network domain that can hold it.

The network is a tree, configured like Koordinator's ClusterNetworkTopology: the cluster on top, then
each configured layer (e.g. spine → block → accelerator island), then the nodes. A node's domain in a
layer is named by the first of the layer's label keys the node carries; a node carrying none is a domain
of its own there, so no link is assumed that the node does not declare. A domain is known by its path,
so two blocks of the same name under different spines stay apart.

The gather (Koordinator's topology gather, made exact for gangs whose pods differ):
1. Offer slots, bottom-up. A node offers as many of the gang's pending pods as fit on its free capacity
   alone, smallest first (for pods that differ in one resource, the most that fit), and then as many more
   of its smallest pods as the room left takes, so the tightest domain is the one left with least room;
   a domain offers the sum over its nodes. Pods are counted by shape (requests and the nodes they may
   use), so a PS and its workers count as what they are, not as copies of one representative pod; a
   domain must also offer enough slots for each shape on its own.
2. Candidates, from the node layer up to the MustGather layer (or the cluster): the domains that offer at
   least the slots the gang needs and hold every node its members already run on. Within a layer the
   tightest goes first: fewest offer slots, then the tightest parent, then the name (bin-packing).
3. Each candidate is tried by placing the gang's actual pods on that domain's nodes only, visited
   depth-first with the roomiest sub-domain first, so a spread stays in as few sub-domains as it can.
   The first candidate on which the gang reaches its minimum wins: the lowest layer, the tightest domain.
   The caller's trial places the pods: the PS–worker co-location placer on that walk, or, for pods that
   carry a network-topology index, `place_in_index_order` (in `index_order`), which lays them out along the
   walk in index order so consecutive indices share the lowest possible domain.
4. If no candidate holds the gang up to its MustGather layer, the gang is not admitted; the outcome names
   the roomiest domain of that layer and what it offers.
Pure: builds its values from its arguments; no I/O, no clock. The tree and the offers can also be
computed in steps (`tree_in_steps`, `offer_slots_in_steps`; `extender.policy.core.stepwise`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from extender.policy.core.resources import CPU, GPU, MEMORY, Resources
from extender.policy.core.snapshot import ClusterSnapshot, NodeState
from extender.policy.core.stepwise import Steps, run_whole
from extender.policy.core.views import CLUSTER_LAYER, NODE_LAYER, Gather, GatherRule, NetworkLayer, PodView
from extender.policy.gang.placement import Placement

Offer = tuple[int, ...]
"""A domain's offer: total slots first, then the slots each shape would get on its own."""
Trial = Callable[[Sequence[str]], tuple[Placement, bool]]
"""Places the gang on the given nodes (in visiting order); the placement, and whether the gang is whole."""
ITEMS_PER_STEP = 128
"""Nodes or domains handled between two pauses of the `..._in_steps` forms (a fraction of a millisecond),
for a reader that builds the tree or the offers in steps."""


@dataclass(eq=False, slots=True)
class Domain:
    """One domain of one layer: a switch's reach, or a single node in the node layer."""

    layer: str
    name: str
    depth: int
    """0 for the cluster, then one per configured layer, the node layer last."""
    parent: Domain | None
    children: dict[str, Domain] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.layer} {self.name}" if self.depth else "the whole cluster"


@dataclass(frozen=True, slots=True)
class TopologyTree:
    layers: tuple[str, ...]
    """Layer names by depth: the cluster layer, the configured layers top first, the node layer."""
    levels: tuple[tuple[Domain, ...], ...]
    """The domains of each depth."""
    leaves: Mapping[str, Domain]
    """Node name → its node-layer domain."""

    @property
    def root(self) -> Domain:
        return self.levels[0][0]

    def depth_of(self, layer: str) -> int | None:
        """The depth of a layer named case-insensitively, or None when the tree has no such layer."""
        wanted = layer.lower()
        return next((depth for depth, name in enumerate(self.layers) if name.lower() == wanted), None)


@dataclass(frozen=True, slots=True)
class Shape:
    """Pending pods of the gang that are interchangeable for counting: same requests, same allowed nodes."""

    requests: Resources
    count: int
    allowed: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class GatherOutcome:
    placement: Placement
    """The winning trial's placement; when nothing held the gang, the trial on the whole cluster (no
    MustGather) or an empty placement."""
    held: bool
    """The gang reached its minimum inside `domain`."""
    domain: Domain
    """Where the gang was gathered, or (when not) the roomiest domain of the deciding layer."""
    offered: int
    """Slots `domain` offers."""
    domains_at_layer: int
    """How many domains the deciding layer has."""
    anchored_apart: bool = False
    """Members already run in more than one domain of the deciding layer."""


def tree_of(snapshot: ClusterSnapshot, layers: tuple[NetworkLayer, ...]) -> TopologyTree:
    """The domain tree of the snapshot's nodes under `layers`, built once per node-labels epoch."""
    return run_whole(tree_in_steps(snapshot, layers))


def tree_in_steps(snapshot: ClusterSnapshot, layers: tuple[NetworkLayer, ...]) -> Steps[TopologyTree]:
    """`tree_of`, pausing every `ITEMS_PER_STEP` nodes while the tree is built."""
    memo = snapshot.node_labels_epoch.derived
    key = ("network-topology-tree", layers)
    tree = memo.get(key)
    if not isinstance(tree, TopologyTree):
        tree = memo[key] = yield from build_tree_in_steps(snapshot.nodes, layers)
    return tree


def build_tree(nodes: Mapping[str, NodeState], layers: Sequence[NetworkLayer]) -> TopologyTree:
    """The domain tree of `nodes` under `layers` (top first)."""
    return run_whole(build_tree_in_steps(nodes, layers))


def build_tree_in_steps(nodes: Mapping[str, NodeState], layers: Sequence[NetworkLayer]) -> Steps[TopologyTree]:
    """`build_tree`, pausing every `ITEMS_PER_STEP` nodes."""
    root = Domain(CLUSTER_LAYER, "", 0, None)
    levels: list[list[Domain]] = [[root], *([] for _ in layers), []]
    leaves: dict[str, Domain] = {}
    node_depth = len(layers) + 1
    keyed = [(depth, layer.name, layer.label_keys) for depth, layer in enumerate(layers, 1)]
    for count, (name, state) in enumerate(nodes.items(), start=1):
        labels = state.node.labels
        parent = root
        for depth, layer, keys in keyed:
            value = name
            for key in keys:
                found = labels.get(key)
                if found:
                    value = found
                    break
            domain = parent.children.get(value)
            if domain is None:
                domain = parent.children[value] = Domain(layer, value, depth, parent)
                levels[depth].append(domain)
            parent = domain
        leaf = parent.children[name] = leaves[name] = Domain(NODE_LAYER, name, node_depth, parent)
        levels[node_depth].append(leaf)
        if count % ITEMS_PER_STEP == 0:
            yield
    names = (CLUSTER_LAYER, *(layer.name for layer in layers), NODE_LAYER)
    return TopologyTree(names, tuple(tuple(level) for level in levels), leaves)


def must_gather_depth(tree: TopologyTree, rules: Sequence[GatherRule]) -> int | str:
    """The depth of the lowest MustGather layer (0 when none: the whole cluster is the limit), or why a
    MustGather rule cannot be honoured. PreferGather rules need nothing: the lowest layer that holds the
    gang is always preferred."""
    depth = 0
    for rule in rules:
        if rule.strategy is not Gather.MUST:
            continue
        found = tree.depth_of(rule.layer)
        if found is None:
            return f"MustGather layer {rule.layer!r} is not a network topology layer ({', '.join(tree.layers)})"
        depth = max(depth, found)
    return depth


def shapes_of(pods: Sequence[PodView], allowed: Mapping[str, frozenset[str]]) -> tuple[Shape, ...]:
    """The pods grouped into shapes, smallest first (GPUs, then CPU, then memory)."""
    counts = Counter((pod.requests, allowed.get(pod.key)) for pod in pods)
    shapes = [Shape(requests, count, nodes) for (requests, nodes), count in counts.items()]
    return tuple(sorted(shapes, key=lambda s: (s.requests.get(GPU), s.requests.get(CPU), s.requests.get(MEMORY))))


def offer_slots(tree: TopologyTree, free: Mapping[str, Resources], shapes: Sequence[Shape]) -> dict[Domain, Offer]:
    """Every domain's offer for the gang of `shapes`, computed bottom-up. Nodes with the same free amounts
    (and the same shapes allowed on them) offer the same, so each such offer is computed once."""
    return run_whole(offer_slots_in_steps(tree, free, shapes))


def offer_slots_in_steps(
    tree: TopologyTree, free: Mapping[str, Resources], shapes: Sequence[Shape]
) -> Steps[dict[Domain, Offer]]:
    """`offer_slots`, pausing every `ITEMS_PER_STEP` nodes or domains (or children of one wide domain)."""
    offers: dict[Domain, Offer] = {}
    memo: dict[tuple[tuple[tuple[str, int], ...], tuple[bool, ...]], Offer] = {}
    restricted = any(shape.allowed is not None for shape in shapes)
    nothing: Offer = (0,) * (len(shapes) + 1)
    step = ITEMS_PER_STEP
    leaves = list(tree.leaves.items())
    for start in range(0, len(leaves), step):
        yield
        for name, leaf in leaves[start : start + step]:
            available = free.get(name)
            if available is None:
                offers[leaf] = nothing
                continue
            mask = tuple(s.allowed is None or name in s.allowed for s in shapes) if restricted else ()
            key = (tuple(available.amounts.items()), mask)
            offer = memo.get(key)
            if offer is None:
                offer = memo[key] = _node_offer(available, shapes, mask)
            offers[leaf] = offer
    for level in reversed(tree.levels[:-1]):
        for start in range(0, len(level), step):
            for domain in level[start : start + step]:
                if len(domain.children) <= step:
                    children = (offers[child] for child in domain.children.values())
                    offers[domain] = tuple(map(sum, zip(nothing, *children, strict=True)))
                else:
                    offers[domain] = yield from _wide_offer(domain, offers, nothing)
            yield
    return offers


def _wide_offer(domain: Domain, offers: Mapping[Domain, Offer], nothing: Offer) -> Steps[Offer]:
    """The sum of the offers of a domain's many children, `ITEMS_PER_STEP` children at a time."""
    children = [offers[child] for child in domain.children.values()]
    offer = nothing
    for start in range(0, len(children), ITEMS_PER_STEP):
        yield
        offer = tuple(map(sum, zip(offer, *children[start : start + ITEMS_PER_STEP], strict=True)))
    return offer


def _node_offer(available: Resources, shapes: Sequence[Shape], mask: tuple[bool, ...]) -> Offer:
    """Slots of one node: each shape's count taken smallest first while it fits, then the room left in
    units of the smallest shape; and how many of each shape would fit alone."""
    usable = [not mask or mask[i] for i in range(len(shapes))]
    alone = [
        _fit_count(shape.requests.amounts, available.amounts) if usable[i] else 0 for i, shape in enumerate(shapes)
    ]
    left = dict(available.amounts)
    total = 0
    for i, shape in enumerate(shapes):
        taken = min(shape.count, alone[i], _fit_count(shape.requests.amounts, left))
        if taken:
            for name, amount in shape.requests.amounts.items():
                left[name] = left.get(name, 0) - amount * taken
            total += taken
    smallest = next((shape for i, shape in enumerate(shapes) if usable[i]), None)
    if smallest is not None:
        total += _fit_count(smallest.requests.amounts, left)
    return (total, *alone)


def _fit_count(requests: Mapping[str, int], available: Mapping[str, int]) -> int:
    """How many copies of `requests` fit in `available`."""
    fits = None
    for name, amount in requests.items():
        copies = available.get(name, 0) // amount
        if fits is None or copies < fits:
            fits = copies
    return max(fits or 0, 0)


def gather(
    tree: TopologyTree,
    offers: Mapping[Domain, Offer],
    shapes: Sequence[Shape],
    *,
    needed: int,
    whole: bool,
    must_depth: int,
    anchors: Collection[str],
    free: Mapping[str, Resources],
    trial: Trial,
) -> GatherOutcome:
    """The lowest, tightest domain on which `trial` places the gang (see the module's steps 2–4).

    `needed`: pods that must be placed; `whole`: every pending pod is needed (then each shape must fit on
    its own too); `anchors`: nodes the gang's members already run on, which the domain must contain.
    """
    required = tuple(shape.count if whole else 0 for shape in shapes)
    anchored = _anchor_domains(tree, anchors)
    holding = _holding(tree, offers, needed, required, anchored)
    ancestry: dict[Domain, tuple[int, ...]] = {}
    failed: dict[Domain, Placement] = {}
    for depth in range(len(tree.levels) - 1, must_depth - 1, -1):
        candidates = holding[depth]
        if not candidates:
            continue
        rank = _ranking(offers, ancestry)
        first = min(candidates, key=rank)
        for domain in [first, *sorted((c for c in candidates if c is not first), key=rank)]:
            placement, held = trial(walk(domain, offers, free))
            if held:
                return GatherOutcome(placement, True, domain, offers[domain][0], len(tree.levels[depth]))
            failed[domain] = placement
    level = tree.levels[must_depth] if anchored is None else anchored[must_depth]
    roomiest = min(level or tree.levels[must_depth] or [tree.root], key=lambda d: (-offers[d][0], d.name))
    placement = Placement({}, ())
    if must_depth == 0:
        placement = failed.get(roomiest) or trial(walk(roomiest, offers, free))[0]
    return GatherOutcome(
        placement, False, roomiest, offers[roomiest][0], len(tree.levels[must_depth]), anchored_apart=not level
    )


def _anchor_domains(tree: TopologyTree, anchors: Collection[str]) -> list[list[Domain]] | None:
    """Per depth, the one domain holding every anchor node (an empty list where they are apart); None
    when there are no anchors."""
    leaves = [tree.leaves[node] for node in anchors if node in tree.leaves]
    if not leaves:
        return None
    found = [{_ancestor(leaf, depth) for leaf in leaves} for depth in range(len(tree.levels))]
    return [list(domains) if len(domains) == 1 else [] for domains in found]


def _holding(
    tree: TopologyTree,
    offers: Mapping[Domain, Offer],
    needed: int,
    required: tuple[int, ...],
    anchored: list[list[Domain]] | None,
) -> list[list[Domain]]:
    """Per depth, the domains whose offer can hold the gang and that contain every anchor. Found from the
    top: offers add up, so a domain can only hold the gang if its parent can."""
    level = [tree.root]
    holding: list[list[Domain]] = []
    for depth in range(len(tree.levels)):
        if depth:
            level = [child for domain in level for child in domain.children.values()]
        level = [
            domain
            for domain in level
            if _holds(offers[domain], needed, required) and (anchored is None or domain in anchored[depth])
        ]
        holding.append(level)
    return holding


def _ancestor(domain: Domain, depth: int) -> Domain:
    while domain.depth > depth and domain.parent is not None:
        domain = domain.parent
    return domain


def _holds(offer: Offer, needed: int, required: tuple[int, ...]) -> bool:
    return offer[0] >= needed and all(have >= want for have, want in zip(offer[1:], required, strict=True))


def _ranking(
    offers: Mapping[Domain, Offer], ancestry: dict[Domain, tuple[int, ...]]
) -> Callable[[Domain], tuple[tuple[int, ...], str]]:
    """Tightest first: the domain's offer, then its parent's, and so on up, then the name."""

    def chain(domain: Domain) -> tuple[int, ...]:
        known = ancestry.get(domain)
        if known is None:
            above = chain(domain.parent) if domain.parent is not None else ()
            known = ancestry[domain] = (offers[domain][0], *above)
        return known

    return lambda domain: (chain(domain), domain.name)


def walk(domain: Domain, offers: Mapping[Domain, Offer], free: Mapping[str, Resources]) -> list[str]:
    """The schedulable nodes of `domain`, depth-first, the sub-domain offering most slots first."""
    nodes: list[str] = []
    stack = [domain]
    while stack:
        current = stack.pop()
        if current.layer == NODE_LAYER:
            if current.name in free:
                nodes.append(current.name)
            continue
        children = sorted(current.children.values(), key=lambda child: (-offers[child][0], child.name))
        stack.extend(reversed(children))
    return nodes


def nodes_under(domain: Domain) -> frozenset[str]:
    """The names of every node in `domain`."""
    nodes: list[str] = []
    stack = [domain]
    while stack:
        current = stack.pop()
        if current.layer == NODE_LAYER:
            nodes.append(current.name)
        stack.extend(current.children.values())
    return frozenset(nodes)


def anchored_domain(tree: TopologyTree, depth: int, anchors: Collection[str]) -> Domain | None:
    """The domain of `depth` holding every anchor node, or None when they are apart or there are none."""
    found = _anchor_domains(tree, anchors)
    return found[depth][0] if found is not None and found[depth] else None
