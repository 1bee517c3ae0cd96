"""How long a job runs before a preemption may take it, and how often it may be suspended.

A preemption that evicts, shrinks or suspends a job moments after it started wastes its start-up and
makes the cluster flap: the job comes back pending and may take the room again. So a job runs at least
`PolicySettings.min_run_before_preemption_s` (its TFJob's annotation
`tfjob-extender.io/min-run-before-preemption-s` lowers or raises it) from the first binding of its current
pods before it is a candidate victim of any kind. The newcomer suspension window
(`suspension_newcomer_s`) opens when that minimum ends, so the two never contradict: a newcomer is a job
that has run its minimum and at most `suspension_newcomer_s` more. And one job is suspended at most
`max_suspensions_per_hour` times in any hour, counted from the times the loop writes on the TFJob with
each suspension (`JobView.suspensions`), so the bound survives a restart or a change of leader.
"""

from __future__ import annotations

from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView

HOUR_S = 3600.0
"""The window `max_suspensions_per_hour` counts over (seconds)."""


def min_run_s(job: JobView | None, settings: PolicySettings) -> float:
    """The seconds `job` runs before a preemption may take it: its own annotation, else the setting."""
    if job is not None and job.min_run_before_preemption_s is not None:
        return job.min_run_before_preemption_s
    return settings.min_run_before_preemption_s


def too_young_to_preempt(job: JobView | None, started: float, settings: PolicySettings, now: float) -> bool:
    """The job's current run began at `started` (0: not known) less than its minimum run ago."""
    return started > 0 and now - started < min_run_s(job, settings)


def recent_suspensions(job: JobView, now: float) -> tuple[float, ...]:
    """The times the job was suspended within the hour before `now`."""
    return tuple(at for at in job.suspensions if now - at < HOUR_S)


def suspended_too_often(job: JobView | None, settings: PolicySettings, now: float) -> bool:
    """One more suspension would exceed `max_suspensions_per_hour` for the job."""
    limit = settings.max_suspensions_per_hour
    return job is not None and limit > 0 and len(recent_suspensions(job, now)) >= limit


def suspension_times_with(job: JobView | None, now: float) -> str:
    """The value of the suspension-times annotation once the job is suspended at `now`."""
    times = (*(recent_suspensions(job, now) if job is not None else ()), now)
    return ",".join(f"{at:.3f}" for at in times)
