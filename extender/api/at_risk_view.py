"""What a running job would lose if taken now, as `/debug/explain` and `explain` show it.

`atRisk`: `seconds` (training thrown away), `resourceSeconds` with its `unit` (GPU or CPU), `basis` (what it
rests on: a checkpoint its pods `reported`, an interval its owner `declared`, or the interval `assumed`
for jobs that say nothing), `intervalSeconds`, `sinceCheckpointSeconds`, `nextCheckpointSeconds` (when its
next checkpoint is due, for a job that declares its interval) and `text` (the same in words).
"""

from __future__ import annotations

from typing import Any

from extender.policy.preemption.lost_work import AtRisk

MINUTE_S = 60.0


def render_at_risk(risk: AtRisk) -> dict[str, Any]:
    return {
        "seconds": round(risk.seconds, 1),
        "resourceSeconds": round(risk.resource_seconds, 1),
        "unit": risk.unit,
        "basis": risk.basis,
        "intervalSeconds": risk.interval_s,
        "sinceCheckpointSeconds": None if risk.since_checkpoint_s is None else round(risk.since_checkpoint_s, 1),
        "nextCheckpointSeconds": None if risk.next_checkpoint_s is None else round(risk.next_checkpoint_s, 1),
        "text": at_risk_phrase(risk),
    }


def at_risk_phrase(risk: AtRisk) -> str:
    lost = f"about {_minutes(risk.seconds)} of training ({risk.resource_seconds / MINUTE_S:.0f} {risk.unit}-min)"
    if risk.basis == "reported":
        why = f"its pods reported a checkpoint {_minutes(risk.since_checkpoint_s or 0.0)} ago"
    elif risk.basis == "declared":
        why = f"it checkpoints every {_minutes(risk.interval_s or 0.0)}, as declared, counted from its start"
    else:
        why = (
            f"it declares no checkpoints: every {_minutes(risk.interval_s or 0.0)} is assumed "
            "(tfjob-extender.io/checkpoint-interval-s declares it)"
        )
    return f"if taken now it would lose {lost}: {why}"


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / MINUTE_S:.0f} min"
