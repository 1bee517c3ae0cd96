"""The preemption loop's reporter: Events on TFJobs whose state changed and on pods whose gang waits.

Once per tick, after the loop has acted, the state of every TFJob is derived (`policy.rank.jobstates`: WAITING,
RUNNING, STARVING, PREEMPTED, COMPLETED) and each job whose state changed since the last tick gets one
Event. The pending pods of the first waiting gangs are told what their gang waits for
(`waitevents.WaitEventReporter`, within the loop settings' `wait_event_*` bounds). The job states are also
what the run clock of the suspension keeper advances on, so the loop hands them over between the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.loops.actuator import Actuator
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.loops.waitevents import WaitEventReporter
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.rank.jobstates import JobState, JobStateTracker, JobStatus


@dataclass
class PreemptionReporter:
    actuator: Actuator
    settings: PolicySettings
    loop_settings: PreemptionLoopSettings
    job_states: dict[str, JobState] = field(default_factory=dict)
    """TFJob → the state its last Event reported."""
    _tracker: JobStateTracker = field(default_factory=JobStateTracker)
    _waits: WaitEventReporter = field(init=False)

    def __post_init__(self) -> None:
        self._waits = WaitEventReporter(self.actuator, self.settings, self.loop_settings)

    def job_statuses(self, snapshot: ClusterSnapshot, now: float) -> list[JobStatus]:
        """The state of every TFJob in `snapshot` at `now`."""
        return self._tracker.states(snapshot, now, self.settings)

    def report(self, snapshot: ClusterSnapshot, statuses: list[JobStatus], now: float) -> None:
        """Write an Event on each TFJob whose state changed, then the wait Events due at `now`."""
        for status in statuses:
            if self.job_states.get(status.job) is status.state:
                continue
            self.job_states[status.job] = status.state
            self.actuator.record_event("TFJob", status.job, status.state.value.capitalize(), status.reason)
        self._waits.report(snapshot, now)
