"""Recent decisions, kept so that any of them can be explained after the fact.

A bounded ring buffer of records (verb, pod, outcome, summary, per-node reasons and scores). Recording
stores references to the decision objects already built, so it adds O(1) to the verb's latency; the
JSON rendering — reasons grouped with the nodes that share them — happens only when someone reads it.
Two bounds hold: at most `capacity` records, and at most `node_budget` node entries (feasible, failed,
scored or victim nodes) across all of them, oldest records dropped first — so a run of 5000-node calls
keeps a few of them, not hundreds (a record always keeps at least the newest decision).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from extender.policy.core.decisions import FilterDecision, PreemptDecision, ScoreDecision

Decision = FilterDecision | ScoreDecision | PreemptDecision


@dataclass(frozen=True, slots=True)
class Record:
    at: float
    verb: str
    pod: str
    generation: int
    decision: Decision


class DecisionHistory:
    def __init__(self, capacity: int, node_budget: int = 50_000) -> None:
        self._records: deque[tuple[Record, int]] = deque()
        self._capacity = capacity
        self._node_budget = node_budget
        self._nodes = 0
        self._lock = threading.Lock()

    def add(self, record: Record) -> None:
        size = _node_entries(record.decision)
        with self._lock:
            self._records.append((record, size))
            self._nodes += size
            while len(self._records) > 1 and (len(self._records) > self._capacity or self._nodes > self._node_budget):
                self._nodes -= self._records.popleft()[1]

    def render(self, *, pod: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Newest first; only `pod`'s decisions when given."""
        return [render_record(record) for record in self.latest(pod=pod, limit=limit)]

    def latest(self, *, pod: str | None = None, limit: int = 50) -> list[Record]:
        """The records `render` renders, for a reader that renders them one at a time."""
        with self._lock:
            records = [record for record, _ in self._records]
        return [r for r in reversed(records) if pod is None or r.pod == pod][:limit]


def _node_entries(decision: Decision) -> int:
    """How many node entries a decision holds (what its record costs in memory)."""
    if isinstance(decision, FilterDecision):
        return 1 + len(decision.feasible) + len(decision.failed) + len(decision.unresolvable)
    if isinstance(decision, ScoreDecision):
        return 1 + len(decision.hosts)
    return 1 + sum(len(uids) + 1 for uids in decision.victims.values())


def render_record(record: Record) -> dict[str, Any]:
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
