"""When a running job may not be taken: too young to judge, or taken as often as an hour allows.

A job whose owner tells how it checkpoints (a declared interval, or checkpoints its pods report) is
weighed by what taking it costs (`taking_cost`). One that tells nothing is protected by a fixed minimum
instead: it runs at least `PolicySettings.min_run_before_preemption_s` (its TFJob's annotation
`tfjob-extender.io/min-run-before-preemption-s` lowers or raises it) from the first binding of its current
pods before it is a candidate victim of any kind, so a preemption does not waste its start-up and make
the cluster flap. The newcomer suspension window (`suspension_newcomer_s`) opens when that minimum ends.
And one job is taken at most `max_takings_per_hour` times in any hour, every kind counted — an
eviction, a suspension, a scale-in, a worker moved — from the times the loops write on the TFJob with
each taking (`JobView.taken`, counted by `policy.core.takings`), so the bound survives a restart or a
change of leader.
"""

from __future__ import annotations

from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView


def min_run_s(job: JobView | None, settings: PolicySettings) -> float:
    """The seconds `job` runs before a preemption may take it: its own annotation, else the setting."""
    if job is not None and job.min_run_before_preemption_s is not None:
        return job.min_run_before_preemption_s
    return settings.min_run_before_preemption_s


def fallback_min_run_s(job: JobView | None, settings: PolicySettings) -> float:
    """The minimum run of a job that tells nothing of its checkpoints (`min_run_s`); 0 for one that declares
    its interval, which is weighed by what taking it costs instead."""
    if job is not None and job.checkpoint_interval_s:
        return 0.0
    return min_run_s(job, settings)


def too_young_to_preempt(job: JobView | None, started: float, settings: PolicySettings, now: float) -> bool:
    """The job's current run began at `started` (0: not known) less than its minimum run ago."""
    return started > 0 and now - started < min_run_s(job, settings)
