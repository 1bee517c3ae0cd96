"""The suspension keeper: which running TFJobs are worth suspending, suspending them, and resuming them.

A TFJob that checkpoints (`tfjob-extender.io/suspendable`) may be suspended for a fresh gang instead of
evicted: `spec.runPolicy.suspend` is set, training-operator deletes its pods, and once they are all gone
the keeper resumes it, so it comes back pending and waits in rank. Whether a job is worth suspending
depends on how long it is likely to run on (`policy.preemption.residual_life`), weighed from the run times the
`RunClock` has seen; a job that started moments ago (`suspension_newcomer_s`) may be suspended for a
starving gang without being demoted. The keeper also keeps that history: each job seen finish has its run
time written on its TFJob (`tfjob-extender.io/run-s`), from which a loop that starts later recalls it.
In shadow mode it looks and weighs but writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from extender.loops.actuator import Actuator
from extender.loops.preemption_counts import PreemptionCounts
from extender.loops.run_clock import RunClock
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.takings import takings_with
from extender.policy.core.views import JobView
from extender.policy.preemption.residual_life import NO_SUSPENSIONS, RunTimes, Suspendable, suspension_margins
from extender.policy.preemption.run_protection import fallback_min_run_s
from extender.policy.preemption.victims import PreemptionPlan
from extender.policy.rank.jobstates import JobStatus
from extender.policy.rank.queue import queue_of
from extender.state.gang_annotations import (
    ATTAINED_ANNOTATION,
    RESUMED_AT_ANNOTATION,
    RUN_TIME_ANNOTATION,
    SUSPENDED_AT_ANNOTATION,
    TAKEN_ANNOTATION,
)
from extender.state.store import ClusterState

log = logging.getLogger(__name__)


@dataclass
class SuspensionKeeper:
    state: ClusterState
    actuator: Actuator
    settings: PolicySettings
    counts: PreemptionCounts
    dry_run: bool
    run_clock: RunClock | None = None
    """How long jobs ran and run (made on first use, keeping `suspension_history_jobs` run times)."""
    suspendable: Suspendable = NO_SUSPENSIONS
    """The TFJobs that may be suspended for a fresh gang, as of the last `weigh`."""
    _to_resume: dict[str, float] | None = field(default=None, init=False)
    """TFJob → when this loop suspended it, until the model shows it resumed (None until the first pass has
    looked for jobs a loop suspended before a restart)."""

    @property
    def clock(self) -> RunClock:
        if self.run_clock is None:
            self.run_clock = RunClock(self.settings.suspension_history_jobs)
        return self.run_clock

    def resume_suspended(self, snapshot: ClusterSnapshot, now: float) -> None:
        """Resume every job this loop suspended once training-operator has deleted all its pods: it comes
        back pending and waits in rank (after the fresh jobs of its PriorityClass)."""
        if self.dry_run:
            return
        if self._to_resume is None:
            self._to_resume = {key: job.suspended_at for key, job in snapshot.jobs.items() if job.suspended_by_extender}
        for key, suspended_at in sorted(self._to_resume.items()):
            job = snapshot.jobs.get(key)
            if job is None or (job.suspended_at >= suspended_at and not job.suspended):
                del self._to_resume[key]  # gone, or resumed (by this loop or by someone else)
                continue
            if not job.suspended_by_extender or snapshot.job_members.get(key):
                continue
            try:
                self.actuator.suspend_job(key, False, {RESUMED_AT_ANNOTATION: f"{max(now, job.suspended_at):.3f}"})
            except Exception as error:  # tried again next tick
                log.warning("could not resume %s: %s", key, error)
                continue
            self.counts.resumptions += 1

    def weigh(self, snapshot: ClusterSnapshot, now: float) -> bool:
        """Refresh `suspendable` on `snapshot`; whether it changed (a refused plan may be possible now)."""
        suspendable = self._candidates(snapshot, now)
        changed = suspendable != self.suspendable
        self.suspendable = suspendable
        return changed

    def _candidates(self, snapshot: ClusterSnapshot, now: float) -> Suspendable:
        """The running suspendable TFJobs expected to run on for longer than a fresh job runs in all, and
        those that ran past their minimum (none for a job that declares its checkpoints:
        `fallback_min_run_s`) by at most `suspension_newcomer_s` and were never suspended (none while no
        gang waits)."""
        if next(queue_of(snapshot, self.settings).waiting(now, self.settings), None) is None:
            return NO_SUSPENSIONS
        clock = self.clock
        candidates = clock.suspendable(snapshot.jobs, now)
        if not candidates:
            return NO_SUSPENSIONS
        curve = RunTimes.estimate(clock.finished, clock.running(snapshot.jobs, now).values())
        window = self.settings.suspension_newcomer_s
        runs = _current_runs(snapshot, self.settings, now)
        newcomers = frozenset(
            job
            for job, ran in candidates.items()
            if window > 0
            and (minimum := fallback_min_run_s(snapshot.jobs[job], self.settings))
            <= runs.get(job, ran)
            <= minimum + window
            and not snapshot.jobs[job].suspended_at
        )
        margins = suspension_margins(curve, candidates, self.settings.suspension_min_history)
        return Suspendable(frozenset(margins), newcomers, margins)

    def suspend(self, plan: PreemptionPlan, now: float) -> None:
        """Suspend the plan's suspended jobs, each with the seconds it has run in all."""
        if not plan.suspended:
            return
        clock, jobs = self.clock, self.state.snapshot().jobs
        stamp = f"{now:.3f}"
        for job, _ in plan.suspended:
            if self._to_resume is not None:
                self._to_resume[job] = float(stamp)
            annotations = {
                SUSPENDED_AT_ANNOTATION: stamp,
                TAKEN_ANNOTATION: takings_with(jobs.get(job), now),
            }
            if job in self.suspendable.long_runners or job not in self.suspendable.newcomers:
                # a newcomer is not demoted: it had barely started, and queues again by its own rank
                annotations[ATTAINED_ANNOTATION] = f"{clock.ran(job, jobs, now):.3f}"
            self.actuator.suspend_job(job, True, annotations)
            self.counts.suspensions += 1
            clock.stop(job)
            self.actuator.record_event("TFJob", job, "Suspended", plan.reason)

    def observe_runs(self, statuses: Iterable[JobStatus], jobs: Mapping[str, JobView], now: float) -> None:
        """Advance the run clock with this tick's job states and record the run time of each job seen
        finish."""
        for job, ran in self.clock.observe(statuses, jobs, now):
            self._record_run_time(job, ran)

    def _record_run_time(self, job: str, ran: float) -> None:
        """Write a finished job's run time on its TFJob, so a loop that starts later learns it back (not in
        a dry run; a job already deleted is simply not recorded)."""
        if self.dry_run:
            return
        try:
            self.actuator.annotate_job(job, {RUN_TIME_ANNOTATION: f"{ran:.3f}"})
        except Exception as error:  # the history of this process keeps it all the same
            log.warning("could not record the run time of %s: %s", job, error)


def _current_runs(snapshot: ClusterSnapshot, settings: PolicySettings, now: float) -> dict[str, float]:
    """TFJob → seconds since the first binding of its bound pods (its current run, as its pods tell it):
    what a newcomer is judged by. The run clock's time restarts whenever the job is seen not running (a
    member pending after a scale-out, say), which would make a job that trained for an hour a newcomer."""
    runs: dict[str, float] = {}
    for summary in queue_of(snapshot, settings).summaries.values():
        if summary.job and summary.started:
            runs[summary.job] = max(runs.get(summary.job, 0.0), now - summary.started)
    return runs
