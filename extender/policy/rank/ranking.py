"""The rank order of gangs, read from the gang queue the model keeps (see `queue` and `weights`).

A gang's rank is, in order: its PriorityClass value, its size class (smaller gangs first, a starving gang
climbing one class per starvation limit), its (aged) KOD2 weight, its arrival time (earlier wins), then
its key, so the order is total and deterministic (`weights.JobRank`). The queue holds every
gang's rank inputs, kept up to date as events arrive, so a rank is O(1) and the waiting gangs come in
rank order without ranking the whole cluster. A snapshot without a queue (one a test builds by hand)
gets one derived on the spot, with the same answers.
"""

from __future__ import annotations

from extender.policy.core.resources import Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.gang.state import gang_state
from extender.policy.rank.queue import queue_of
from extender.policy.rank.weights import (
    WEIGHT_DIMENSIONS,
    JobRank,
    aged_weight,
    cluster_capacity,
    dominant_share,
    job_weight,
    rank_of,
)


def gang_rank(
    snapshot: ClusterSnapshot,
    group_key: str,
    now: float,
    settings: PolicySettings,
    capacity: Resources | None = None,
) -> JobRank:
    """The rank of the gang `group_key` belongs to (the same for every PodGroup of a GangGroup).

    The gang's job is the TFJob its members belong to (the first by key, should a GangGroup span several);
    priority is that job's PriorityClass value if the snapshot knows it, else the highest member pod
    priority, else 0; weight is the job's KOD2 weight, or `default_weight` without a TFJob; arrival is the
    job's creation, else the PodGroups', else the earliest member's (else `now`). The gang ages only while
    it is unsatisfied and has pending members.
    """
    summary = queue_of(snapshot, settings).summary_of_group(group_key)
    if summary is not None:
        return summary.rank(now, settings)
    state = gang_state(snapshot, group_key)
    return rank_of(snapshot, state, now, settings, cluster_capacity(snapshot) if capacity is None else capacity)


def rank_gangs(snapshot: ClusterSnapshot, now: float, settings: PolicySettings) -> list[JobRank]:
    """Every gang that has members, highest rank first."""
    summaries = queue_of(snapshot, settings).summaries.values()
    return sorted((summary.rank(now, settings) for summary in summaries), key=lambda rank: rank.sort_key)


__all__ = [
    "WEIGHT_DIMENSIONS",
    "JobRank",
    "aged_weight",
    "cluster_capacity",
    "dominant_share",
    "gang_rank",
    "job_weight",
    "rank_gangs",
]
