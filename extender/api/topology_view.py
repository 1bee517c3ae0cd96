"""`GET /debug/topology`: the network-topology tree the model derives, with what each domain offers.

The layers come from the ClusterNetworkTopology named `default` when the cluster has one, else from the
settings. Every domain shows its layer, name, node count, free capacity (bound pods and gang reservations
counted as used) and offer slots: how many pods of a shape it could take — the pending members of one
gang (`?gang=namespace/name`), or one pod of the requests given as `?cpu=&memory=&gpu=` (default 1 CPU,
1 GiB). `?depth=` cuts the tree below that depth (1: the top layer's domains).

A tree of 5000 nodes under three layers has 20 000 domains, so the view is computed and written in
steps (`topology_document`): the tree and the offers through the policy's stepped forms, then each
domain's figures, then one domain per piece of JSON. Free capacity is summed up the tree as tuples of
integers and kept as text, which the cyclic garbage collector leaves alone, so a large tree does not
bring on its full collections.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from operator import add

import orjson

from extender.api.pacing import SORTED_RUN_ITEMS, Piece, sorted_in_steps
from extender.policy.core.resources import CPU, EMPTY, MEMORY, PODS, Resources, describe, to_base_units
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import NODE_LAYER, PodView
from extender.policy.gang.state import gang_state
from extender.policy.gang.topology import Domain, Offer, offer_slots_in_steps, shapes_of, tree_in_steps

DEFAULT_REQUESTS = {CPU: "1", MEMORY: "1Gi"}


class TopologyQueryError(ValueError):
    """A query the view cannot answer (an unknown gang, an unreadable quantity)."""


def topology_document(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    *,
    gang: str | None = None,
    requests: dict[str, str] | None = None,
    depth: int | None = None,
) -> Iterator[Piece]:
    """The view as JSON pieces, computed in steps; a query it cannot answer raises `TopologyQueryError` here,
    before any piece."""
    pods = _pods(snapshot, gang, requests)
    return _document(snapshot, settings, pods, gang, depth)


def _document(
    snapshot: ClusterSnapshot, settings: PolicySettings, pods: list[PodView], gang: str | None, depth: int | None
) -> Iterator[Piece]:
    from_cluster = snapshot.network_topology is not None
    layers = snapshot.network_topology if snapshot.network_topology is not None else settings.network_topology
    tree = yield from tree_in_steps(snapshot, layers)
    free: dict[str, Resources] = {}
    named: set[str] = set()
    for name, node in snapshot.nodes.items():
        if node.node.schedulable:
            free[name] = node.available
            named.update(node.available.amounts)
        yield None
    offers = yield from offer_slots_in_steps(tree, free, shapes_of(pods, {}))
    names = tuple(sorted(named))
    nothing = (0,) * len(names)
    totals: dict[Domain, tuple[int, ...]] = {}
    described: dict[Domain, str] = {}
    counts: dict[Domain, int] = {}
    for level in reversed(tree.levels):
        for domain in level:
            if domain.layer == NODE_LAYER:
                available = free.get(domain.name, EMPTY)
                amounts = tuple(available.get(name) for name in names)
                counts[domain] = 1
            else:
                amounts = totals.pop(domain, nothing)
                counts.setdefault(domain, 0)
            described[domain] = describe(Resources(zip(names, amounts, strict=True)))
            parent = domain.parent
            if parent is not None:
                totals[parent] = tuple(map(add, totals.get(parent, nothing), amounts))
                counts[parent] = counts.get(parent, 0) + counts[domain]
            yield None
    head = {
        "source": "ClusterNetworkTopology default" if from_cluster else "settings",
        "layers": [{"layer": layer.name, "labelKeys": list(layer.label_keys)} for layer in layers],
        "offerSlotsFor": _describe_pods(pods, gang),
    }
    yield orjson.dumps(head)[:-1] + b',"tree":'
    yield from _domain_pieces(tree.root, Figures(described, counts, offers), depth)
    yield b"}"


@dataclass(frozen=True, slots=True)
class Figures:
    """What the view shows of each domain: free capacity (described; strings keep the cyclic collector's
    work small), node count, offer."""

    free: dict[Domain, str]
    counts: dict[Domain, int]
    offers: dict[Domain, Offer]


def _domain_pieces(domain: Domain, figures: Figures, depth: int | None) -> Iterator[Piece]:
    """One domain and, down to `depth`, its children (by name), one domain per piece; each domain's figures
    are dropped once written, so they are freed a few at a time rather than all at the end."""
    rendered = orjson.dumps(
        {
            "layer": domain.layer,
            "name": domain.name,
            "nodes": figures.counts.pop(domain),
            "free": figures.free.pop(domain),
            "offerSlots": figures.offers.pop(domain)[0],
        }
    )
    if not domain.children or (depth is not None and domain.depth >= depth):
        yield rendered
        return
    yield rendered[:-1] + b',"children":['
    children = domain.children
    names = sorted(children) if len(children) <= SORTED_RUN_ITEMS else (yield from sorted_in_steps(children))
    for index, name in enumerate(names):
        if index:
            yield b","
        yield from _domain_pieces(children[name], figures, depth)
    yield b"]}"


def _pods(snapshot: ClusterSnapshot, gang: str | None, requests: dict[str, str] | None) -> list[PodView]:
    if gang is not None:
        if gang not in snapshot.groups and gang not in snapshot.group_members:
            raise TopologyQueryError(f"no PodGroup or gang members named {gang}")
        state = gang_state(snapshot, gang)
        return [pod for members in state.members.values() for pod in members if pod.pending]
    wanted = requests or DEFAULT_REQUESTS
    try:
        amounts = {name: to_base_units(name, quantity) for name, quantity in wanted.items()}
    except ValueError as error:
        raise TopologyQueryError(str(error)) from error
    return [PodView("", "offer-slot", "", Resources({**amounts, PODS: 1}))]


def _describe_pods(pods: list[PodView], gang: str | None) -> str:
    if gang is None:
        return f"one pod of {describe(pods[0].requests)}"
    shapes = shapes_of(pods, {})
    return f"gang {gang}: " + (" + ".join(f"{s.count} × {describe(s.requests)}" for s in shapes) or "no pending pods")
