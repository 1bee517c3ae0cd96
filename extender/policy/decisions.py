"""What the policy answers: a filter decision, a score decision, a preemption decision.

Each carries, besides the answer kube-scheduler needs, a one-line summary and per-node reasons, so every
decision can be explained later from `/debug/decisions`. A filter decision may also carry the one change
gang admission makes to the model — reservations to commit, plans to release, a failed plan to
remember — which the caller applies; the policy itself never mutates anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.policy.model import FailedPlan, Reservation


@dataclass(frozen=True, slots=True)
class FilterDecision:
    outcome: str
    """passthrough | fit | no-fit | steered | planned | waiting | unplannable | yielding."""
    summary: str
    feasible: tuple[str, ...]
    failed: Mapping[str, str] = field(default_factory=dict)
    """Node → reason; kube-scheduler may still preempt on these nodes."""
    unresolvable: Mapping[str, str] = field(default_factory=dict)
    """Node → reason; preemption on these nodes would not help."""
    reserve: tuple[Reservation, ...] = ()
    release_groups: tuple[str, ...] = ()
    failed_plan: FailedPlan | None = None
    model_behind: bool = False
    """The pod's gang is gated by kube-scheduler, which lets members through only once `minCount` exist,
    yet the model lacks some: its watch is behind, and deciding again a moment later may plan the gang."""


@dataclass(frozen=True, slots=True)
class ScoreDecision:
    outcome: str
    summary: str
    scores: Mapping[str, int]
    breakdown: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    """Node → the score's components, named by `components`."""
    components: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PreemptDecision:
    outcome: str
    summary: str
    victims: Mapping[str, tuple[str, ...]]
    """Node → victim pod UIDs, in the order kube-scheduler proposed them."""
    pdb_violations: Mapping[str, int] = field(default_factory=dict)
