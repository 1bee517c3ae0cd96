"""Kueue's priority boost from what taking a job would cost (pure).

Kueue preempts the admitted workloads of a ClusterQueue lowest effective priority first, then the most
recently admitted: it knows nothing of what a victim would lose. Since v0.17 (KEP-7990, its alpha gate
`PriorityBoost`) an external controller may add `kueue.x-k8s.io/priority-boost`, a signed integer, to a
Workload's priority. For each running TFJob Kueue admits, the boost is what taking it would cost
(`taking_cost`: its training since its last checkpoint and its restart, in resource-seconds) in points of
`PolicySettings.priority_boost_resource_s`, at most `max_priority_boost` and below the gap to the next
higher priority class in the cluster: it reorders the victims of one class, and never lifts a job into the
next one, where it would stop being a victim of that class's jobs (or start preempting them). Kueue's
priority of a job is that of the WorkloadPriorityClass its label `kueue.x-k8s.io/priority-class` names,
else its pods' PriorityClass; the classes above it are every PriorityClass and every WorkloadPriorityClass,
since other Workloads get their priorities from either.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.preemption.taking_cost import cost_of, summary_at_risk
from extender.policy.rank.queue import queue_of


def priority_boosts(snapshot: ClusterSnapshot, settings: PolicySettings, now: float) -> dict[str, int]:
    """TFJob key → the boost for its Kueue Workload, for every running TFJob Kueue admits."""
    classes = sorted({*snapshot.priority_classes.values(), *snapshot.workload_priority_classes.values()})
    boosts: dict[str, int] = {}
    for summary in queue_of(snapshot, settings).summaries.values():
        job = snapshot.jobs.get(summary.job) if summary.job else None
        if job is None or not job.kueue_managed or not summary.bound_pods or summary.ages:
            continue
        cost = cost_of(summary_at_risk(job, summary, now, settings), settings)
        priority = kueue_priority(snapshot, job.kueue_priority_class, summary.priority)
        boosts[job.key] = max(boosts.get(job.key, 0), boost_for(cost, priority, classes, settings))
    return boosts


def kueue_priority(snapshot: ClusterSnapshot, workload_priority_class: str, pod_priority: int) -> int:
    """The priority Kueue gives a job's Workload: its WorkloadPriorityClass's value when it names one that
    exists (Kueue admits no job naming one that does not), else its pods' priority."""
    return snapshot.workload_priority_classes.get(workload_priority_class, pod_priority)


def boost_for(cost: float, priority: int, classes: Sequence[int], settings: PolicySettings) -> int:
    """The boost for a job of `priority` whose taking costs `cost` resource-seconds, `classes` the cluster's
    PriorityClass values in ascending order."""
    cap = settings.max_priority_boost
    above = bisect.bisect_right(classes, priority)
    if above < len(classes):
        cap = min(cap, classes[above] - priority - 1)
    unit = settings.priority_boost_resource_s
    return max(0, min(int(cost // unit) if unit > 0 else 0, cap))
