"""Every weight and threshold the policy uses, named, with its unit and default.

The policy receives one frozen `PolicySettings`; it never reads the environment or a global. The command
line builds it (see `extender.config`), tests build it directly.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PolicySettings:
    scheduler_name: str = "tfjob-scheduler"
    """Pods whose `spec.schedulerName` differs are passed through untouched."""

    default_plan_timeout_s: float = 60.0
    """Seconds a gang's reserved plan lives when its PodGroup sets no `scheduleTimeoutSeconds`."""

    max_score: int = 10
    """The extender score scale's top (kube-scheduler's MaxExtenderPriority)."""

    colocation_weight: float = 0.7
    """Share of a prioritize score given to sitting beside the pod's own job (PS with its workers)."""

    idleness_weight: float = 0.3
    """Share of a prioritize score given to how idle the node stays after placing the pod."""

    colocation_ps_bonus: float = 1.0
    """Co-location credit (0..1) for a worker on a node holding its job's PS, or a PS beside its workers."""

    colocation_same_job: float = 0.6
    """Co-location credit (0..1) for a node holding other pods of the same job but no PS/worker partner."""
