"""Recent decisions, kept so that any of them can be explained after the fact.

A bounded ring buffer of records (verb, pod, outcome, summary, per-node reasons and scores). Recording
stores references to the decision objects already built, so it adds O(1) to the verb's latency; the
JSON rendering — reasons grouped with the nodes that share them — happens only when someone reads it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from extender.policy.decisions import FilterDecision, PreemptDecision, ScoreDecision

Decision = FilterDecision | ScoreDecision | PreemptDecision


@dataclass(frozen=True, slots=True)
class Record:
    at: float
    verb: str
    pod: str
    generation: int
    decision: Decision


class DecisionHistory:
    def __init__(self, capacity: int) -> None:
        self._records: deque[Record] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def add(self, record: Record) -> None:
        with self._lock:
            self._records.append(record)

    def render(self, *, pod: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Newest first; only `pod`'s decisions when given."""
        with self._lock:
            records = list(self._records)
        chosen = [r for r in reversed(records) if pod is None or r.pod == pod][:limit]
        return [_render(record) for record in chosen]


def _render(record: Record) -> dict[str, Any]:
    decision = record.decision
    rendered: dict[str, Any] = {
        "at": record.at,
        "verb": record.verb,
        "pod": record.pod,
        "generation": record.generation,
        "outcome": decision.outcome,
        "summary": decision.summary,
    }
    if isinstance(decision, FilterDecision):
        rendered["feasible"] = list(decision.feasible)
        rendered["failed"] = _group_by_reason(decision.failed)
        rendered["unresolvable"] = _group_by_reason(decision.unresolvable)
    elif isinstance(decision, ScoreDecision):
        rendered["scores"] = dict(decision.scores)
        rendered["breakdown"] = {
            node: dict(zip(decision.components, (round(part, 3) for part in parts), strict=True))
            for node, parts in decision.breakdown.items()
        }
    else:
        rendered["victims"] = {node: list(uids) for node, uids in decision.victims.items()}
    return rendered


def _group_by_reason(reasons: dict[str, str] | Any) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for node, reason in reasons.items():
        grouped.setdefault(reason, []).append(node)
    return {reason: sorted(nodes) for reason, nodes in grouped.items()}
