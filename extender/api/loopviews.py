"""What the loops running in this process did or, in shadow mode, would have done: read for the debug
routes and the page.

The scaler and the preemption loop are created after the HTTP service (they need its metrics registry),
so the service holds a `LoopViews` that the command line fills in once the loops exist. Reading copies the
loops' bounded deques (`tuple(...)`), so a render never races a tick appending to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from extender.loops.forecast_loop import ForecastLoop
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop, ScalerRecord


@dataclass
class LoopViews:
    scaler: ScalerLoop | None = None
    preemption: PreemptionLoop | None = None
    forecast: ForecastLoop | None = None

    @property
    def shadow(self) -> bool:
        """Whether the loops here only plan (`--dry-run`)."""
        return any(loop is not None and loop.dry_run for loop in (self.scaler, self.preemption))

    def scaler_actions(self, limit: int) -> list[dict[str, Any]]:
        """The scaler's latest actions (planned only, in shadow mode), newest first."""
        if self.scaler is None:
            return []
        return [render_record(record) for record in reversed(tuple(self.scaler.records)[-limit:])]

    def shadow_preemptions(self, limit: int) -> list[dict[str, Any]]:
        """The preemptions the loop would have carried out in shadow mode, newest first."""
        if self.preemption is None:
            return []
        return [
            {
                "gang": record.gang,
                "reason": record.reason,
                "at": record.at,
                "scaledIn": list(record.scaled_in),
                "evicted": list(record.evicted),
                "victims": sorted(record.victims),
                "outcome": "dry-run: planned, not carried out",
            }
            for record in reversed(tuple(self.preemption.shadowed)[-limit:])
        ]

    def shadow_plans(self, limit: int) -> list[dict[str, Any]]:
        """In shadow mode: every plan a loop made and did not carry out, newest first."""
        if not self.shadow:
            return []
        scaled = [{"loop": "scaler", **action} for action in self.scaler_actions(limit)]
        preempted = [{"loop": "preemption", **record} for record in self.shadow_preemptions(limit)]
        return sorted([*scaled, *preempted], key=lambda plan: -float(plan["at"]))[:limit]


def render_record(record: ScalerRecord) -> dict[str, Any]:
    return {
        "at": record.at,
        "kind": record.kind,
        "job": record.job,
        "replicasFrom": record.replicas_from,
        "replicasTo": record.replicas_to,
        "pods": list(record.pods),
        "plan": [{"pod": pod, "node": node} for pod, node in record.plan],
        "reason": record.reason,
        "outcome": record.outcome,
    }
