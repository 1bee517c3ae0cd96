"""What the scaler did: its actions' kinds and outcomes as `Literal`s, the records and the counters.

A `ScalerRecord` keeps the typed outcome of one action and, apart, why it was not done; `/debug/scaler`
shows both as one line (`stale: the pod is already gone`), and the actions metric is labelled by kind and
typed outcome (`extender.api.scaler`). The counters are plain: the scaler never imports Prometheus.
"""

from __future__ import annotations

from collections import Counter as CounterOf
from dataclasses import dataclass, field
from typing import Literal

from extender.loops.leadership import TickRole
from extender.policy.core.snapshot import Reservation
from extender.policy.scaling.scale_out import ActionKind

ScalerActionKind = Literal["scale-out", "migrate"]
"""What a scaler action does: add workers to a job, or move one worker onto its PS node."""

ACTION_KINDS: dict[ActionKind, ScalerActionKind] = {ActionKind.SCALE_OUT: "scale-out", ActionKind.MIGRATE: "migrate"}

ScalerOutcome = Literal["done", "stale", "failed", "refused", "dry-run"]
"""What became of a scaler action: done; stale (the cluster or the job changed since the plan); failed (an
API error); refused (a PodDisruptionBudget forbade the eviction); dry-run (planned in shadow mode)."""

OUTCOME_TEXT: dict[ScalerOutcome, str] = {"refused": "refused by a PodDisruptionBudget"}
"""How an outcome reads before its detail, where that differs from the outcome itself."""


@dataclass(frozen=True, slots=True)
class ScalerRecord:
    """One action the scaler carried out (or tried), as `/debug/scaler` shows it."""

    at: float
    kind: ScalerActionKind
    job: str
    replicas_from: int
    replicas_to: int
    pods: tuple[str, ...]
    plan: tuple[tuple[str, str], ...]
    """(pod, node) the extender is told to steer to."""
    reason: str
    result: ScalerOutcome
    detail: str = ""
    """Why it was not done ("" when it was done)."""

    @property
    def outcome(self) -> str:
        """`done`, or the outcome and why, as one line (e.g. `stale: the pod is already gone`)."""
        return "done" if self.result == "done" else f"{OUTCOME_TEXT.get(self.result, self.result)}: {self.detail}"


@dataclass(frozen=True, slots=True)
class Migration:
    """A worker deleted to be recreated on `target.node`."""

    old_uid: str
    target: Reservation
    started: float


@dataclass
class ScalerCounts:
    """What the scaler has done since it started, as plain counters (the HTTP layer exports them to
    Prometheus)."""

    actions: CounterOf[tuple[ScalerActionKind, ScalerOutcome]] = field(default_factory=CounterOf)
    """(kind, outcome) → actions: scale-out or migrate; done, stale, failed, refused, dry-run."""
    left_alone: int = 0
    """Elastic TFJobs reported as left alone (once per job and reason)."""
    conflicts: int = 0
    """TFJob writes refused with 409 Conflict and retried."""
    ticks: CounterOf[TickRole] = field(default_factory=CounterOf)
    """Role (leader, follower) → ticks."""
