"""The schedulable nodes split into pools by which waiting pods they admit (pure).

The forward run sums room, and on a cluster whose nodes are not all open to every pod — GPU nodes tainted
so that only pods tolerating it go there, a pool named by a node selector or a Kueue flavour — room summed
over every node is room a job may not be able to use: a CPU job would be counted on the free CPUs of GPU
nodes it cannot enter. So the nodes are split by the node sets the waiting gangs' pending pods may go to
(`gang.room.selected_nodes`): two nodes are in one pool when every such set holds both or neither. Each pool
sums its nodes' allocatable and free room; a running gang frees, when it ends, what its pods hold in each;
a waiting gang takes room only from the pools some pod of it may go to. A pool no waiting pod may go to (a
tainted control-plane node) is left out. Where no pending pod is closed to any node there is one pool, the
whole cluster, and the forward run is what it was without pools.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from extender.policy.core.capacity import CapacityTable
from extender.policy.core.resources import EMPTY, Resources, total
from extender.policy.core.views import PodView, Role

Where = Mapping[Role, frozenset[str] | None]
"""The nodes the first pending pod of each role may go to (None: any node)."""


@dataclass(frozen=True, slots=True)
class NodePools:
    """The pools, each one's allocatable and free room summed, and each schedulable node's pool."""

    sets: tuple[frozenset[str], ...]
    """The node sets the pools are split by."""
    signatures: tuple[tuple[bool, ...], ...]
    """For each pool, which of `sets` hold its nodes."""
    of_node: Mapping[str, int]
    capacity: tuple[Resources, ...]
    free: tuple[Resources, ...]

    def open_to(self, where: Where) -> tuple[int, ...]:
        """The pools some pod of a gang whose pending pods go `where` may use; empty: every pool."""
        if not where or any(nodes is None for nodes in where.values()):
            return ()
        return _reached(self.signatures, self.sets, where)

    def held(self, pods: Iterable[PodView]) -> tuple[Resources, ...]:
        """What `pods` hold in each pool (a pod on a node outside every pool, one not schedulable, counts
        nowhere)."""
        each: list[list[Resources]] = [[] for _ in self.capacity]
        for pod in pods:
            pool = self.of_node.get(pod.node_name) if pod.holds_node else None
            if pool is not None:
                each[pool].append(pod.requests)
        return tuple(total(requests) if requests else EMPTY for requests in each)


def split(table: CapacityTable | None, wheres: Iterable[Where]) -> NodePools | None:
    """The schedulable nodes in pools by the node sets in `wheres`, less the pools no waiting pod may go to
    (a tainted control-plane node, say); None when what is left is every schedulable node in one pool, or
    there is no dense table to split."""
    if table is None:
        return None
    wheres = list(wheres)
    sets = _distinct(nodes for where in wheres for nodes in where.values() if nodes is not None)
    rows = np.flatnonzero(table.schedulable)
    if not sets or not len(rows):
        return None
    pools: dict[tuple[bool, ...], list[int]] = {}
    for row in rows:
        name = table.names[row]
        pools.setdefault(tuple(name in nodes for nodes in sets), []).append(int(row))
    signatures = list(pools)
    reached = {pool for where in wheres if where for pool in _reached(signatures, sets, where)}
    if not reached or len(pools) == 1:
        return None
    kept = [signature for index, signature in enumerate(signatures) if index in reached]
    members = [pools[signature] for signature in kept]
    return NodePools(
        sets,
        tuple(kept),
        {table.names[row]: pool for pool, chosen in enumerate(members) for row in chosen},
        tuple(table.resources(table.allocatable[chosen].sum(axis=0)) for chosen in members),
        tuple(table.resources(table.available[chosen].sum(axis=0)) for chosen in members),
    )


def _reached(signatures: Sequence[tuple[bool, ...]], sets: Sequence[frozenset[str]], where: Where) -> tuple[int, ...]:
    """The pools (by their `signatures`: membership of `sets`) some pending pod going `where` may use; a gang
    with none pending reaches none, one with a pod that may go anywhere every one."""
    if any(nodes is None for nodes in where.values()):
        return tuple(range(len(signatures)))
    columns = [sets.index(nodes) for nodes in where.values() if nodes is not None]
    return tuple(pool for pool, signature in enumerate(signatures) if any(signature[c] for c in columns))


def take_order(pools: Sequence[int], needs: Sequence[float], capacities: Sequence[Sequence[float]]) -> tuple[int, ...]:
    """`pools` in the order a gang needing `needs` takes room from them: first those with some of more of the
    kinds of resources it needs (GPU nodes before CPU nodes for a GPU job), then as given."""
    asked = [index for index, amount in enumerate(needs) if amount > 0]
    return tuple(sorted(pools, key=lambda pool: -sum(capacities[pool][index] > 0 for index in asked)))


def _distinct(sets: Iterable[frozenset[str]]) -> tuple[frozenset[str], ...]:
    seen: dict[frozenset[str], None] = {}
    for nodes in sets:
        seen.setdefault(nodes, None)
    return tuple(sorted(seen, key=lambda nodes: (len(nodes), sorted(nodes))))
