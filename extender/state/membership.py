"""What the model indexes per pod: each node's usage, each PodGroup's and TFJob's members.

`NodeUsage` keeps, per node, what its bound pods request, which pods they are, and how many of them each job
has (what the capacity table's jobs-per-node column and the scorer's co-location read). `index_member` moves
a pod between the member sets of its PodGroup or TFJob; `membership_changed` says whether a pod's change
counts as a membership change of its gang. Parts of `ClusterState`, called under its lock.
"""

from __future__ import annotations

from collections import Counter

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.views import PodView


class NodeUsage:
    """Per node: the requests of its bound pods, their keys, and its bound pods per job."""

    def __init__(self) -> None:
        self._usage: dict[str, tuple[Resources, frozenset[str]]] = {}
        self._jobs_on: dict[str, Counter[str]] = {}
        """Node → bound pods per job (a pod without a job counts under its own key)."""

    def on(self, node: str) -> tuple[Resources, frozenset[str]]:
        """What the pods bound to `node` request, and their keys."""
        return self._usage.get(node, (EMPTY, frozenset()))

    def jobs_on(self, node: str) -> int:
        """How many jobs (a pod without a job counting as its own) have pods bound to `node`."""
        return len(self._jobs_on.get(node, ()))

    def add(self, pod: PodView, sign: int) -> None:
        """Count a pod that holds its node (`sign` +1), or stop counting it (-1)."""
        requested, pods = self.on(pod.node_name)
        jobs = self._jobs_on.setdefault(pod.node_name, Counter())
        owner = pod.job or pod.key
        if sign > 0:
            self._usage[pod.node_name] = (requested + pod.requests, pods | {pod.key})
            jobs[owner] += 1
        else:
            self._usage[pod.node_name] = (requested - pod.requests, pods - {pod.key})
            jobs[owner] -= 1
            if jobs[owner] <= 0:
                del jobs[owner]


def index_member(index: CowMap[str, frozenset[str]], old: str, new: str, key: str) -> None:
    """Move `key` from the members of `old` to those of `new` in `index` (an empty name: none)."""
    if old == new:
        if new and key not in (index.get(new) or frozenset()):
            index.set(new, (index.get(new) or frozenset()) | {key})
        return
    if old:
        remaining = (index.get(old) or frozenset()) - {key}
        if remaining:
            index.set(old, remaining)
        else:
            index.delete(old)
    if new:
        index.set(new, (index.get(new) or frozenset()) | {key})


def membership_changed(old: PodView, new: PodView) -> bool:
    """Whether a pod's change moves its gang's membership generation (and so voids a failed plan)."""
    return (
        old.node_name != new.node_name
        or old.phase != new.phase
        or old.terminating != new.terminating
        or old.group != new.group
        or old.requests != new.requests
        or old.constraint != new.constraint
        or old.scheduling_gated != new.scheduling_gated
    )
