"""kube-scheduler's loop, emulated: one pod at a time, default plugins, and an optional extender.

The active queue is every pending pod ordered by priority, then creation time, then name (PrioritySort).
A cycle runs NodeResourcesFit (requests against what bound pods use), hands the feasible nodes to the
extender's filter when one is configured, scores with the default plugins — NodeResourcesFit
LeastAllocated and NodeResourcesBalancedAllocation, 0–100 each, weight 1 — plus the extender's 0–10
score × 10 × its weight (5, as in scheduler-config/), and binds to the best node, breaking ties with
the run's seeded random generator. Unschedulable pods wait until the cluster changes (any pod or object
event) or until `flush_s` has passed, like kube-scheduler's unschedulable queue and its periodic flush.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from extender.policy.resources import CPU, MEMORY, Resources
from extender.sim.cluster import SimCluster, SimPod

MAX_NODE_SCORE = 100
EXTENDER_WEIGHT = 5
"""`extenders[].weight` in scheduler-config/kube-scheduler-config.yaml."""


class Extender(Protocol):
    def filter(self, pod: SimPod, nodes: Sequence[str], now: float) -> list[str]: ...

    def prioritize(self, pod: SimPod, nodes: Sequence[str]) -> dict[str, int]: ...


@dataclass
class KubeScheduler:
    cluster: SimCluster
    rng: random.Random
    extender: Extender | None = None
    flush_s: float = 60.0
    """Seconds after which unschedulable pods are retried even without a cluster event."""
    _seen_version: int = -1
    _last_flush: float = float("-inf")
    attempts: int = 0

    def cycle(self, now: float) -> int:
        """Try every pending pod once, in queue order; returns how many were bound."""
        if self.cluster.version == self._seen_version and now - self._last_flush < self.flush_s:
            return 0
        self._last_flush = now
        queue = sorted(self.cluster.pending_pods(), key=lambda pod: (pod.created, pod.key))
        bound = 0
        for pod in queue:
            if pod.node or pod.key not in self.cluster.pods:
                continue
            node = self.schedule_one(pod, now)
            if node is not None:
                self.cluster.bind(pod.key, node)
                bound += 1
        self._seen_version = self.cluster.version
        return bound

    def schedule_one(self, pod: SimPod, now: float) -> str | None:
        self.attempts += 1
        feasible = [name for name in self.cluster.nodes if pod.requests.fits_in(self.cluster.free(name))]
        if feasible and self.extender is not None:
            feasible = self.extender.filter(pod, feasible, now)
        if not feasible:
            return None
        extra = self.extender.prioritize(pod, feasible) if self.extender is not None else {}
        scores = {
            node: default_score(self.cluster, node, pod.requests) + 10 * EXTENDER_WEIGHT * extra.get(node, 0)
            for node in feasible
        }
        best = max(scores.values())
        return self.rng.choice(sorted(node for node, score in scores.items() if score == best))


def default_score(cluster: SimCluster, node: str, requests: Resources) -> float:
    """LeastAllocated + BalancedAllocation over CPU and memory, as kube-scheduler's default profile."""
    allocatable = cluster.nodes[node]
    after = cluster.used[node] + requests
    fractions = [after.get(name) / allocatable.get(name) for name in (CPU, MEMORY) if allocatable.get(name)]
    least = sum(MAX_NODE_SCORE * (1 - f) for f in fractions) / len(fractions)
    balanced = MAX_NODE_SCORE * (1 - abs(fractions[0] - fractions[1]) / 2) if len(fractions) == 2 else 0.0
    return least + balanced
