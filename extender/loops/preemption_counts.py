"""What the preemption loop has done, as typed outcomes and plain counters.

Each thing the loop counts by kind is keyed by a `Literal`, so the executor, the loop and the HTTP layer
that exports the counters to Prometheus (`extender.api.loop_metrics`, where the literals become the label
values) agree on the names by type rather than by string. The counters are plain: the loop never imports
Prometheus.
"""

from __future__ import annotations

from collections import Counter as CounterOf
from dataclasses import dataclass, field
from typing import Literal

from extender.loops.leadership import TickRole

PlanReservedFor = Literal["admission", "preemption", "completion"]
"""Why the loop reserved a gang's plan: a gang that may start, ahead of its pods; the room freed for a
preemptor; a half-placed gang completed."""

PreemptionOutcome = Literal["carried-out", "stale", "blocked", "dry-run"]
"""What became of a preemption: carried out; stale (the model changed under the plan); blocked (a
PodDisruptionBudget refused an eviction); dry-run (planned in shadow mode)."""


@dataclass
class PreemptionCounts:
    """What the preemption loop has done since it started, as plain counters (the HTTP layer exports them
    to Prometheus)."""

    ticks: CounterOf[TickRole] = field(default_factory=CounterOf)
    """Role → ticks."""
    plans_reserved: CounterOf[PlanReservedFor] = field(default_factory=CounterOf)
    """Why → gang plans reserved."""
    preemptions: CounterOf[PreemptionOutcome] = field(default_factory=CounterOf)
    """Outcome → preemptions."""
    evictions: int = 0
    """Pods evicted (preemption victims, and members of half-placed gangs released whole)."""
    suspensions: int = 0
    """TFJobs suspended (`spec.runPolicy.suspend` set)."""
    resumptions: int = 0
    """TFJobs this loop had suspended and resumed."""
    scale_ins: int = 0
    """TFJobs whose Worker replicas were lowered for a preemptor."""
    pdb_refusals: int = 0
    """Evictions a PodDisruptionBudget refused (in the dry run or for real): each abandons its preemption."""
