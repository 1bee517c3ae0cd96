"""The one way a decision reaches the model: decide on a snapshot, commit on that snapshot's generation.

HTTP verbs, the preemption loop, the scaler, the simulator and the tests all go through
`decide_and_commit`: it takes a snapshot, asks the caller's pure decision function, and commits the
decision's `LedgerChange` only if the model has not changed under it in a way it does not survive
(`ClusterState.commit`); otherwise it decides again on a fresh snapshot, a bounded number of times.
`filter_and_commit` is the filter verb's pipeline on it, the one the HTTP verb, the simulator and the tests
share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from extender.policy import FilterDecision, PolicySettings, filter_pod
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.state.store import ClusterState

COMMIT_ATTEMPTS = 3
"""Decisions made per call before giving up on a model that keeps changing under them."""


class Changing(Protocol):
    @property
    def change(self) -> LedgerChange: ...


D = TypeVar("D", bound=Changing)


@dataclass(frozen=True, slots=True)
class Outcome(Generic[D]):
    decision: D
    snapshot: ClusterSnapshot
    """The snapshot the decision was made on."""
    committed: bool
    """False when the decision changes the model and every attempt was refused."""


def decide_and_commit(
    state: ClusterState, decide: Callable[[ClusterSnapshot], D], *, attempts: int = COMMIT_ATTEMPTS
) -> Outcome[D]:
    for _ in range(attempts):
        snapshot = state.snapshot()
        decision = decide(snapshot)
        change = decision.change
        if not change or state.commit(change, decided_on=snapshot.generation):
            return Outcome(decision, snapshot, True)
    return Outcome(decision, snapshot, False)


def filter_and_commit(
    state: ClusterState, pod: PodView, candidates: Sequence[str], settings: PolicySettings, now: float
) -> Outcome[FilterDecision]:
    """`filter_pod` for `pod` among `candidates`, committed: on each snapshot the pod is the model's view when
    the model has it under the same uid, else `pod` as given (decoded from a request the watch is behind)."""

    def decide(snapshot: ClusterSnapshot) -> FilterDecision:
        known = snapshot.pods.get(pod.key)
        current = known if known is not None and known.uid == pod.uid else pod
        return filter_pod(snapshot, current, candidates, settings, now)

    return decide_and_commit(state, decide)
