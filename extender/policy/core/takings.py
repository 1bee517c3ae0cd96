"""How often a job was taken lately (pure): the per-job hourly bound over every kind of taking.

The loops write the time of each taking of a TFJob — an eviction, a suspension, a scale-in, a worker moved
by consolidation — on the TFJob itself (`tfjob-extender.io/taken`, the last hour's times), so one job is
taken at most `PolicySettings.max_takings_per_hour` times in any hour, across restarts and leaders.
"""

from __future__ import annotations

from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView

HOUR_S = 3600.0
"""The window `max_takings_per_hour` counts over (seconds)."""


def recent_takings(job: JobView, now: float) -> tuple[float, ...]:
    """The times the job was taken within the hour before `now`."""
    return tuple(at for at in job.taken if now - at < HOUR_S)


def taken_too_often(job: JobView | None, settings: PolicySettings, now: float) -> bool:
    """One more taking would exceed `max_takings_per_hour` for the job."""
    limit = settings.max_takings_per_hour
    return job is not None and limit > 0 and len(recent_takings(job, now)) >= limit


def takings_with(job: JobView | None, now: float) -> str:
    """The value of the takings annotation once the job is taken at `now`."""
    times = (*(recent_takings(job, now) if job is not None else ()), now)
    return ",".join(f"{at:.3f}" for at in times)
