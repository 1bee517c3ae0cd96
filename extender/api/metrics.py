"""Prometheus metrics of one service instance, in a registry of its own (no process-global state)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 2.5, 4.0,
)  # fmt: skip
"""Verb latency histogram buckets, seconds: fine below 2 ms, where the targets are; 4 s is four fifths of
kube-scheduler's `httpTimeout` in the chart (5 s), which the alert `TfjobExtenderVerbsNearTimeout` reads."""


class Metrics:
    def __init__(self, gangs_pending: Callable[[], int], gangs_partly_bound: Callable[[], int] = lambda: 0) -> None:
        self.registry = CollectorRegistry()
        self.verb_seconds = Histogram(
            "tfjob_extender_verb_duration_seconds",
            "Time to answer one extender call, from request to encoded reply.",
            ["verb"],
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.decisions = Counter(
            "tfjob_extender_decisions_total",
            "Extender decisions by verb and outcome.",
            ["verb", "outcome"],
            registry=self.registry,
        )
        self.gangs_pending = Gauge(
            "tfjob_extender_gangs_pending",
            "PodGroups with members waiting to be placed and fewer than minMember placed.",
            registry=self.registry,
        )
        self.gangs_pending.set_function(gangs_pending)
        self.gangs_partly_bound = Gauge(
            "tfjob_extender_gangs_partly_bound",
            "Waiting gangs with some but not all of their minimum placed: their barrier holds those nodes idle.",
            registry=self.registry,
        )
        self.gangs_partly_bound.set_function(gangs_partly_bound)
        self._verb_timers: dict[str, Histogram] = {}
        self._decision_counters: dict[tuple[str, str], Counter] = {}

    def observe_verb(self, verb: str, seconds: float) -> None:
        """One call answered (the labelled child is looked up once per verb: this is on every call)."""
        timer = self._verb_timers.get(verb)
        if timer is None:
            timer = self._verb_timers[verb] = self.verb_seconds.labels(verb)
        timer.observe(seconds)

    def count_decision(self, verb: str, outcome: str) -> None:
        counter = self._decision_counters.get((verb, outcome))
        if counter is None:
            counter = self._decision_counters[(verb, outcome)] = self.decisions.labels(verb, outcome)
        counter.inc()
