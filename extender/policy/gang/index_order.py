"""Placement along a topology walk by network-topology index: for pods that carry an index (from the pod's
network-topology index annotation), `place_in_index_order` lays them out along the nodes a gather trial
visits, each pod on the node the previous one used or the next one after it with room, so consecutive
indices share a node, then the lowest possible domain. It is the trial placer `gang` hands to
`topology.gather` for such gangs; pods without an index follow, in role order. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

from extender.policy.core.resources import Resources
from extender.policy.core.views import PodView
from extender.policy.gang.placement import Placement, PlacementUnit, role_order


def place_in_index_order(
    units: Sequence[PlacementUnit], free: Mapping[str, Resources], order: Sequence[str]
) -> Placement:
    """Lay the pods of every unit out along `order` by network-topology index (pods without one last, in
    role order): each pod goes on the node the previous one used or the next one after it with room, so
    consecutive indices share a node, then a sub-domain; a pod that fits nowhere further on takes the
    first earlier node with room."""
    remaining = {node: free[node] for node in order}
    allowed = {key: nodes for unit in units for key, nodes in unit.allowed.items()}
    pods = [pod for unit in units for pod in role_order(unit.pods)]
    ranked = sorted(
        enumerate(pods),
        key=lambda item: (item[1].topology_index is None, item[1].topology_index or 0, item[0]),
    )
    assignments: dict[str, str] = {}
    unplaced: list[PodView] = []
    cursor = 0
    for _, pod in ranked:
        nodes = allowed.get(pod.key)
        spot = next(
            (
                i
                for i in chain(range(cursor, len(order)), range(cursor))
                if pod.requests.fits_in(remaining[order[i]]) and (nodes is None or order[i] in nodes)
            ),
            None,
        )
        if spot is None:
            unplaced.append(pod)
            continue
        node = order[spot]
        assignments[pod.key] = node
        remaining[node] = remaining[node] - pod.requests
        cursor = max(cursor, spot)
    return Placement(assignments, tuple(unplaced))
