"""The priority booster: Kueue's victim order steered by what taking each admitted TFJob would cost.

With `PolicySettings.kueue_priority_boost` on, each pass of the preemption loop asks the pure policy
(`policy.preemption.priority_boost`) for the boost of every running TFJob Kueue admits and writes it as
`kueue.x-k8s.io/priority-boost` on that TFJob's Workloads (Kueue's alpha gate `PriorityBoost` must be on
for Kueue to read it). A job's boost is written when it changes, at most once per `interval_s` per job:
its cost grows with every second it trains. Nothing else of Kueue's is touched: not its suspend, not its
queues. A write that fails is tried again on a later pass. Leader only, and never in shadow mode.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from extender.loops.actuator import Actuator
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.preemption.priority_boost import priority_boosts

log = logging.getLogger(__name__)

PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
"""Kueue's annotation (KEP-7990): a signed integer added to the Workload's priority."""


@dataclass
class PriorityBooster:
    actuator: Actuator
    settings: PolicySettings
    interval_s: float
    """The least time between two writes of one job's boost (seconds)."""
    written: dict[str, tuple[int, float]] = field(default_factory=dict)
    """TFJob → (boost, when) last written."""

    def tick(self, snapshot: ClusterSnapshot, now: float) -> None:
        if not self.settings.kueue_priority_boost:
            return
        boosts = priority_boosts(snapshot, self.settings, now)
        self.written = {job: last for job, last in self.written.items() if job in boosts}
        for job, boost in sorted(boosts.items()):
            last = self.written.get(job)
            if last is not None and (last[0] == boost or now - last[1] < self.interval_s):
                continue
            view = snapshot.jobs[job]
            try:
                found = self.actuator.annotate_kueue_workloads(job, view.uid, {PRIORITY_BOOST_ANNOTATION: str(boost)})
            except Exception as error:  # tried again on a later pass
                log.warning("could not write the priority boost of %s: %s", job, error)
                continue
            if found:
                self.written[job] = (boost, now)
