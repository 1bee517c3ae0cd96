"""kube-scheduler's loop, emulated: one pod at a time, default plugins, and an optional extender.

The active queue is every pending pod ordered by priority, then creation time, then name (PrioritySort).
A cycle runs NodeResourcesFit (requests against what bound pods use), hands the feasible nodes to the
extender's filter when one is configured, scores with the default plugins — NodeResourcesFit
LeastAllocated and NodeResourcesBalancedAllocation, 0–100 each, weight 1 — plus the extender's 0–10
score × 10 × its weight (5, as in scheduler-config/), and binds to the best node, breaking ties with
the run's seeded random generator. A pod that does not fit backs off (1 s doubling to 10 s, kube-scheduler's
defaults) and is retried only after a cluster event (any pod change: kube-scheduler watches pods and
nodes, not TFJobs or PodGroups, so a plan written on a PodGroup does not wake it) or the 60 s flush of the
unschedulable queue — so, as in kube-scheduler, a new pod can take freed room before an older pod that is
still backing off. Steps come every `tick_s` of the policy, so backoffs resolve to that granularity.
Unlike kube-scheduler 1.33 and later (`SchedulerPopFromBackoffQ`), a pod is never taken out of backoff early
when nothing else is ready, so the waits it models are upper bounds.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from extender.policy.core.resources import CPU, MEMORY, Resources
from extender.sim.cluster import SimCluster, SimPod

MAX_NODE_SCORE = 100
EXTENDER_WEIGHT = 5
"""`extenders[].weight` in scheduler-config/kube-scheduler-config.yaml."""


class Extender(Protocol):
    def filter(self, pod: SimPod, nodes: Sequence[str], now: float) -> list[str]: ...

    def prioritize(self, pod: SimPod, nodes: Sequence[str]) -> dict[str, int]: ...


@dataclass
class _Backoff:
    attempts: int
    retry_at: float
    """Earliest retry (backoff expiry)."""
    version: int
    """The cluster's pods version when the pod was last found unschedulable."""
    failed_at: float


@dataclass
class KubeScheduler:
    cluster: SimCluster
    rng: random.Random
    extender: Extender | None = None
    initial_backoff_s: float = 1.0
    """podInitialBackoffSeconds: the first retry delay, doubled per failed attempt."""
    max_backoff_s: float = 10.0
    """podMaxBackoffSeconds."""
    flush_s: float = 60.0
    """An unschedulable pod is retried after this long even without a cluster event."""
    attempts: int = 0
    _backoff: dict[str, _Backoff] = field(default_factory=dict)

    def cycle(self, now: float) -> int:
        """One pass over the active queue: every pending pod whose backoff has expired and that a cluster
        event (or the periodic flush) has made worth retrying, in queue order; returns how many bound."""
        queue = sorted(
            (pod for pod in self.cluster.pending_pods() if self._ready(pod, now)),
            key=lambda pod: (pod.created, pod.key),
        )
        bound = 0
        for pod in queue:
            if pod.node or pod.key not in self.cluster.pods:
                continue
            node = self.schedule_one(pod, now)
            if node is None:
                self._failed(pod, now)
                continue
            self._backoff.pop(pod.key, None)
            self.cluster.bind(pod.key, node, at=now)
            bound += 1
        return bound

    def _ready(self, pod: SimPod, now: float) -> bool:
        state = self._backoff.get(pod.key)
        if state is None or state.failed_at < pod.created:
            return True
        moved = self.cluster.pods_version != state.version or now - state.failed_at >= self.flush_s
        return moved and now >= state.retry_at

    def _failed(self, pod: SimPod, now: float) -> None:
        state = self._backoff.get(pod.key)
        attempts = 1 if state is None or state.failed_at < pod.created else state.attempts + 1
        delay = min(self.initial_backoff_s * 2 ** (attempts - 1), self.max_backoff_s)
        self._backoff[pod.key] = _Backoff(attempts, now + delay, self.cluster.pods_version, now)

    def schedule_one(self, pod: SimPod, now: float) -> str | None:
        self.attempts += 1
        feasible = [
            name
            for name in self.cluster.nodes
            if pod.requests.fits_in(self.cluster.free(name)) and self.cluster.admits(name, pod.job)
        ]
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
