"""What the policy answers: a filter decision, a score decision, a preemption decision.

Each carries, besides the answer kube-scheduler needs, a one-line summary and per-node reasons, so every
decision can be explained later from `/debug/decisions`. A filter decision may also carry the one change
gang admission makes to the model — reservations to commit, plans to release, a failed plan to
remember — which the caller applies; the policy itself never mutates anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from extender.policy.core.capacity import Floats
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import FailedPlan, Reservation

FilterOutcome = Literal[
    "passthrough", "fit", "no-fit", "steered", "planned", "waiting", "unplannable", "yielding", "left-over"
]
"""How `filter` answered: not ours or left to another plugin (`passthrough`); plain fit (`fit`, `no-fit`); a
gang member sent to its reserved node (`steered`) or to the plan just made (`planned`); or a member turned
away because its gang waits for members or room (`waiting`), cannot be placed (`unplannable`), yields to a
higher-ranked gang (`yielding`) or is a leftover of a finished job (`left-over`)."""

ScoreOutcome = Literal["passthrough", "planned", "no-opinion", "scored"]
"""How `prioritize` answered: no preference (`passthrough`), the planned node first (`planned`), no score
because the pod belongs to no TFJob or gang (`no-opinion`), or co-location and idleness scores (`scored`)."""

PreemptOutcome = Literal["passthrough", "job-level"]
"""How `preempt` answered: kube-scheduler's candidates kept (`passthrough`), or none because preemption for
this gang is job-level, planned by the preemption loop (`job-level`)."""


@dataclass(frozen=True, slots=True)
class FilterDecision:
    outcome: FilterOutcome
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

    @property
    def change(self) -> LedgerChange:
        """What committing this decision changes in the model (empty for most decisions)."""
        return LedgerChange(self.release_groups, self.reserve, self.failed_plan)


@dataclass(frozen=True, slots=True)
class ScoreDecision:
    outcome: ScoreOutcome
    summary: str
    hosts: Sequence[str]
    """The candidate nodes, as asked (each once)."""
    values: Sequence[int]
    """The score of each of `hosts`, in the same order."""
    parts: tuple[Floats, ...] = ()
    """For each of `components`, its value on each of `hosts` (kept as computed, rendered on demand)."""
    components: tuple[str, ...] = ()

    @property
    def scores(self) -> dict[str, int]:
        """Node → score."""
        return dict(zip(self.hosts, self.values, strict=True))

    @property
    def breakdown(self) -> dict[str, tuple[float, ...]]:
        """Node → the score's components, named by `components`."""
        if not self.parts:
            return {}
        return {host: tuple(float(part[i]) for part in self.parts) for i, host in enumerate(self.hosts)}


@dataclass(frozen=True, slots=True)
class PreemptDecision:
    outcome: PreemptOutcome
    summary: str
    victims: Mapping[str, tuple[str, ...]]
    """Node → victim pod UIDs, in the order kube-scheduler proposed them."""
    pdb_violations: Mapping[str, int] = field(default_factory=dict)
