"""The state of each TFJob, as users read it: WAITING, RUNNING, STARVING, PREEMPTED, COMPLETED.

- COMPLETED: every pod of the job has succeeded.
- PREEMPTED: a recorded job-level preemption scaled it in or evicted it, and it has not been placed
  whole again since (an evicted job that starts again is RUNNING; a scaled-in job stays PREEMPTED, running
  on fewer workers, until it is scaled out).
- RUNNING: its gang has `minMember` placed (or, without a gang, all its pods are bound).
- STARVING: waiting beyond the starvation limit (its weight is ageing).
- WAITING: anything else that has pods, or no pods yet.
Each state comes with the reason a person can act on. Pure: `now` is a parameter.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GangKey, PodView, PreemptionRecord
from extender.policy.gang.state import gang_state, is_satisfied, waiting_reason
from extender.policy.rank.queue import queue_of
from extender.policy.rank.ranking import gang_rank


class JobState(enum.Enum):
    WAITING = "WAITING"
    RUNNING = "RUNNING"
    STARVING = "STARVING"
    PREEMPTED = "PREEMPTED"
    COMPLETED = "COMPLETED"


@dataclass(frozen=True, slots=True)
class JobStatus:
    job: str
    state: JobState
    reason: str
    pods: int
    bound: int
    placed: bool = False
    """Its gang has `minMember` placed, so it trains: RUNNING, or PREEMPTED by a scale-in and running on
    fewer workers (a run that a scale-in neither ends nor restarts)."""


def job_states(snapshot: ClusterSnapshot, now: float, settings: PolicySettings) -> list[JobStatus]:
    """The state of every TFJob the model knows, sorted by key."""
    return list(each_job_state(snapshot, now, settings))


def each_job_state(snapshot: ClusterSnapshot, now: float, settings: PolicySettings) -> Iterator[JobStatus]:
    """`job_states` one job at a time (for a reader that pauses between jobs)."""
    for key in sorted(snapshot.jobs):
        yield job_state(snapshot, key, now, settings)


def job_state(snapshot: ClusterSnapshot, key: str, now: float, settings: PolicySettings) -> JobStatus:
    """The state of the TFJob `key` (for a reader that orders the jobs itself)."""
    pods = [pod for k in snapshot.job_members.get(key, frozenset()) if (pod := snapshot.pods.get(k)) is not None]
    bound = sum(1 for pod in pods if pod.holds_node)
    if pods and all(pod.phase == "Succeeded" for pod in pods):
        return JobStatus(key, JobState.COMPLETED, "every pod succeeded", len(pods), bound)
    job = snapshot.jobs.get(key)
    if job is not None and (job.succeeded or job.failed) and not bound:
        ended = "succeeded" if job.succeeded else "failed"
        return JobStatus(key, JobState.COMPLETED, f"the TFJob {ended}; no pod of it holds a node", len(pods), 0)
    group = next((pod.group for pod in pods if pod.group), "")
    preempted = _preemption_of(snapshot, key, group)
    running = _running(snapshot, group, pods)
    if preempted is not None and (key in preempted.scaled_in or not running):
        return JobStatus(key, JobState.PREEMPTED, preempted.reason, len(pods), bound, placed=running)
    if running:
        return JobStatus(key, JobState.RUNNING, f"{bound} pods bound", len(pods), bound, placed=True)
    if not pods:
        return JobStatus(key, JobState.WAITING, _podless_reason(snapshot, key), 0, 0)
    if group:
        rank = gang_rank(snapshot, group, now, settings)
        state = gang_state(snapshot, group)
        failed = snapshot.failed_plans.get(state.key)
        why = waiting_reason(state) or (failed.reason if failed is not None else "not planned yet")
        if rank.starving:
            return JobStatus(key, JobState.STARVING, f"waiting {rank.waited_s:.0f}s: {why}", len(pods), bound)
        return JobStatus(key, JobState.WAITING, why, len(pods), bound)
    return JobStatus(key, JobState.WAITING, f"{bound}/{len(pods)} pods bound", len(pods), bound)


def _podless_reason(snapshot: ClusterSnapshot, key: str) -> str:
    job = snapshot.jobs.get(key)
    if job is None or not job.suspended:
        return "no pods created yet"
    if job.suspended_by_extender:
        return "suspended by the preemption loop for a fresh gang; resumed once its pods are gone"
    if job.kueue_managed:
        return "suspended (spec.runPolicy.suspend): waiting for Kueue to admit it"
    return "suspended (spec.runPolicy.suspend), not by the extender: it stays so until its owner resumes it"


def _running(snapshot: ClusterSnapshot, group: str, pods: list[PodView]) -> bool:
    if group:
        return any(pod.holds_node for pod in pods) and is_satisfied(snapshot, gang_state(snapshot, group))
    return bool(pods) and all(pod.holds_node or pod.finished for pod in pods)


def _preemption_of(snapshot: ClusterSnapshot, job: str, group: str) -> PreemptionRecord | None:
    latest: PreemptionRecord | None = None
    for record in snapshot.preemptions.values():
        hit = job in record.scaled_in or any(group and group in GangKey(subject).groups for subject in record.evicted)
        if hit and (latest is None or record.at > latest.at):
            latest = record
    return latest


class JobStateTracker:
    """The state of every TFJob, re-derived only for jobs whose inputs changed since the last call.

    A job's state depends on the job, its pods (through its gang's summary in the gang queue, which the
    model replaces whenever a member changes), the failed plan and the preemption recorded for it, and,
    while it waits, on whether it has started starving. Those are compared by identity, so a call on a
    cluster where little changed costs a dictionary lookup per job. Jobs without a gang are always
    re-derived. The memo never changes a result: it only skips recomputing one.
    """

    def __init__(self) -> None:
        self._memo: dict[str, tuple[tuple[object, ...], JobStatus]] = {}

    def states(self, snapshot: ClusterSnapshot, now: float, settings: PolicySettings) -> list[JobStatus]:
        queue = queue_of(snapshot, settings)
        records = _records_by_subject(snapshot)
        fresh: dict[str, tuple[tuple[object, ...], JobStatus]] = {}
        statuses = []
        for key, job in snapshot.jobs.items():
            members = snapshot.job_members.get(key, frozenset())
            pod = snapshot.pods.get(next(iter(members))) if members else None
            summary = queue.summary_of_group(pod.group) if pod is not None and pod.group else None
            inputs: tuple[object, ...] | None = None
            if summary is not None or not members:
                starving = summary is not None and summary.rank(now, settings).starving
                failed = snapshot.failed_plans.get(summary.key) if summary is not None else None
                record = records.get(key) or (records.get(summary.key) if summary is not None else None)
                inputs = (job, members, summary, failed, record, starving)
            known = self._memo.get(key)
            if inputs is not None and known is not None and _same(known[0], inputs):
                status = known[1]
            else:
                status = job_state(snapshot, key, now, settings)
            if inputs is not None:
                fresh[key] = (inputs, status)
            statuses.append(status)
        self._memo = fresh
        return sorted(statuses, key=lambda status: status.job)


def _same(old: tuple[object, ...], new: tuple[object, ...]) -> bool:
    return len(old) == len(new) and all(a is b or a == b for a, b in zip(old, new, strict=True))


def _records_by_subject(snapshot: ClusterSnapshot) -> dict[str, PreemptionRecord]:
    """TFJob keys and gang keys → the latest preemption that scaled in or evicted them."""
    latest: dict[str, PreemptionRecord] = {}
    for record in snapshot.preemptions.values():
        for subject in (*record.scaled_in, *record.evicted):
            if subject not in latest or record.at > latest[subject].at:
                latest[subject] = record
    return latest
