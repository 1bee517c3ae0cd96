"""`GET /debug/topology`: the network-topology tree the model derives, with what each domain offers.

The layers come from the ClusterNetworkTopology named `default` when the cluster has one, else from the
settings. Every domain shows its layer, name, node count, free capacity (bound pods and gang reservations
counted as used) and offer slots: how many pods of a shape it could take — the pending members of one
gang (`?gang=namespace/name`), or one pod of the requests given as `?cpu=&memory=&gpu=` (default 1 CPU,
1 GiB). `?depth=` cuts the tree below that depth (1: the top layer's domains).
"""

from __future__ import annotations

from typing import Any

from extender.policy.core.resources import CPU, EMPTY, MEMORY, PODS, Resources, describe, to_base_units, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import NODE_LAYER, PodView
from extender.policy.gang.state import gang_state
from extender.policy.gang.topology import Domain, offer_slots, shapes_of, tree_of

DEFAULT_REQUESTS = {CPU: "1", MEMORY: "1Gi"}


class TopologyQueryError(ValueError):
    """A query the view cannot answer (an unknown gang, an unreadable quantity)."""


def render_topology(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    *,
    gang: str | None = None,
    requests: dict[str, str] | None = None,
    depth: int | None = None,
) -> dict[str, Any]:
    from_cluster = snapshot.network_topology is not None
    layers = snapshot.network_topology if snapshot.network_topology is not None else settings.network_topology
    tree = tree_of(snapshot, layers)
    free = {name: node.available for name, node in snapshot.nodes.items() if node.node.schedulable}
    pods = _pods(snapshot, gang, requests)
    offers = offer_slots(tree, free, shapes_of(pods, {}))
    capacity: dict[Domain, Resources] = {}
    counts: dict[Domain, int] = {}
    for level in reversed(tree.levels):
        for domain in level:
            if domain.layer == NODE_LAYER:
                capacity[domain] = free.get(domain.name, EMPTY)
                counts[domain] = 1
            else:
                capacity[domain] = total(capacity[child] for child in domain.children.values())
                counts[domain] = sum(counts[child] for child in domain.children.values())

    def render(domain: Domain) -> dict[str, Any]:
        rendered: dict[str, Any] = {
            "layer": domain.layer,
            "name": domain.name,
            "nodes": counts[domain],
            "free": describe(capacity[domain]),
            "offerSlots": offers[domain][0],
        }
        if domain.children and (depth is None or domain.depth < depth):
            children = sorted(domain.children.values(), key=lambda child: child.name)
            rendered["children"] = [render(child) for child in children]
        return rendered

    return {
        "source": "ClusterNetworkTopology default" if from_cluster else "settings",
        "layers": [{"layer": layer.name, "labelKeys": list(layer.label_keys)} for layer in layers],
        "offerSlotsFor": _describe_pods(pods, gang),
        "tree": render(tree.root),
    }


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
