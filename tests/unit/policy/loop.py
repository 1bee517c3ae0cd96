"""The scheduling loop around the policy, as `extender.api.verbs` drives it, without HTTP.

`Loop` keeps the raw objects it was built from, so a test can bind, finish or delete a pod by feeding the
model the watch event the API server would send. Every `filter` first releases expired plans, decides on
a fresh snapshot, and commits the plan changes the decision carries, exactly as the `/filter` verb does.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from extender.policy import FilterDecision, PolicySettings, ScoreDecision, filter_pod, prioritize_pod
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.state.commits import filter_and_commit
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import Obj, cluster

NOW = 1_800_000_000.0
SETTINGS = PolicySettings()


def key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


class Loop:
    def __init__(self, *objects: Obj, now: float = NOW, settings: PolicySettings = SETTINGS) -> None:
        self.raw = {key_of(obj): obj for obj in objects if obj["kind"] == "Pod"}
        self.state: ClusterState = cluster(*objects)
        self.now = now
        self.settings = settings

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self.state.snapshot()

    def pod(self, name: str) -> PodView:
        return self.snapshot.pods[name if "/" in name else f"default/{name}"]

    def nodes(self) -> list[str]:
        return sorted(self.snapshot.nodes)

    def decide(self, name: str, candidates: Sequence[str] | None = None) -> FilterDecision:
        """The filter decision on the current snapshot, without committing it."""
        self.state.release_expired(self.now)
        snapshot = self.snapshot
        offered = self.nodes() if candidates is None else list(candidates)
        return filter_pod(snapshot, self.pod(name), offered, self.settings, self.now)

    def filter(self, name: str, candidates: Sequence[str] | None = None) -> FilterDecision:
        self.state.release_expired(self.now)
        offered = self.nodes() if candidates is None else list(candidates)
        outcome = filter_and_commit(self.state, self.pod(name), offered, self.settings, self.now)
        assert outcome.committed, "nothing else changes the model during a test"
        return outcome.decision

    def run_to_binding(self, name: str, candidates: Sequence[str] | None = None) -> str | None:
        """Filter, prioritize what is feasible, and bind to the best node, as kube-scheduler would."""
        decision = self.filter(name, candidates)
        if not decision.feasible:
            return None
        scores = self.prioritize(name, decision.feasible).scores
        node = min(decision.feasible, key=lambda n: (-scores[n], n))
        self.bind(name, node)
        return node

    def prioritize(self, name: str, candidates: Sequence[str] | None = None) -> ScoreDecision:
        offered = self.nodes() if candidates is None else list(candidates)
        return prioritize_pod(self.snapshot, self.pod(name), offered, self.settings)

    # -- watch events -----------------------------------------------------------------------------------

    def add(self, obj: Obj) -> None:
        if obj["kind"] == "Pod":
            self.raw[key_of(obj)] = obj
            self.state.apply(Kind.POD, "ADDED", obj)
        else:
            raise ValueError(f"add() feeds pods only, not {obj['kind']}")

    def _modify(
        self, name: str, *, node: str | None = None, phase: str | None = None, terminating: bool = False
    ) -> None:
        key = name if "/" in name else f"default/{name}"
        obj = copy.deepcopy(self.raw[key])
        if node is not None:
            obj["spec"]["nodeName"] = node
        if phase is not None:
            obj["status"]["phase"] = phase
        if terminating:
            obj["metadata"]["deletionTimestamp"] = "2026-03-01T10:20:00Z"
        self.raw[key] = obj
        self.state.apply(Kind.POD, "MODIFIED", obj)

    def bind(self, name: str, node: str) -> None:
        self._modify(name, node=node, phase="Running")

    def finish(self, name: str, phase: str = "Succeeded") -> None:
        self._modify(name, phase=phase)

    def terminate(self, name: str) -> None:
        self._modify(name, terminating=True)

    def delete(self, name: str) -> None:
        key = name if "/" in name else f"default/{name}"
        self.state.apply(Kind.POD, "DELETED", self.raw.pop(key))
