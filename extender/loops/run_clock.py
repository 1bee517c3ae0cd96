"""How long each TFJob has run, and how long the finished ones ran: the loop's memory for suspensions.

Fed with the job states the preemption loop derives every tick (`policy.rank.jobstates`): a job's current run
starts when it is first seen with its gang placed (`JobStatus.placed`: RUNNING, or PREEMPTED by a scale-in
and training on fewer workers, which neither ends nor restarts a run) and ends when it no longer is (waiting
for room, evicted, suspended); a job seen COMPLETED adds its
run time (with what it ran before its last suspension, `JobView.attained_s`) to the history, of which
the most recent `limit` are kept. The clock reads ticks, so times are as fine as the loop's interval. It
lives in the loop's process; the loop writes each finished job's run time on the TFJob
(`JobView.run_s`), and a clock's first observation starts its history from those still in the cluster,
so a restarted loop or a new leader does not start from nothing. A job running at the time counts from
then (the clock never overstates how long a job has run).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping

from extender.policy.core.views import JobView
from extender.policy.rank.jobstates import JobState, JobStatus


class RunClock:
    def __init__(self, limit: int) -> None:
        self.finished: deque[float] = deque(maxlen=max(1, limit))
        """Run times (seconds) of the jobs seen finish, oldest first."""
        self._started: dict[str, float] = {}
        """Job → when its current run was first seen."""
        self._counted: set[str] = set()
        """Jobs whose run time is already in `finished`."""
        self._suspendable: set[str] = set()
        """Running jobs that may be suspended (`JobView.may_be_suspended`: the only ones a suspension may
        take)."""
        self._recalled = False
        """Whether the run times recorded on the TFJobs were read into `finished`."""

    def observe(
        self, statuses: Iterable[JobStatus], jobs: Mapping[str, JobView], now: float
    ) -> list[tuple[str, float]]:
        """Advance the clock with the states of every job at `now`; returns the jobs seen finish now, each
        with the seconds it ran in all (for the loop to record on the TFJob)."""
        if not self._recalled:
            self._recall(jobs)
        finished: list[tuple[str, float]] = []
        seen = set()
        for status in statuses:
            seen.add(status.job)
            view = jobs.get(status.job)
            if status.state is JobState.COMPLETED or (view is not None and view.succeeded):
                started = self._started.pop(status.job, None)
                if started is not None and status.job not in self._counted:
                    ran = (view.attained_s if view is not None else 0.0) + now - started
                    self.finished.append(ran)
                    self._counted.add(status.job)
                    finished.append((status.job, ran))
            elif status.placed:
                self._started.setdefault(status.job, now)
                if view is not None and view.may_be_suspended:
                    self._suspendable.add(status.job)
            else:
                self._started.pop(status.job, None)
        for gone in set(self._started) - seen:
            del self._started[gone]
        self._counted &= seen
        self._suspendable &= self._started.keys()
        return finished

    def _recall(self, jobs: Mapping[str, JobView]) -> None:
        """Start the history from the run times recorded on the TFJobs (`JobView.run_s`), the oldest job
        first: what the loops before this one saw finish, as far as those jobs are still kept."""
        self._recalled = True
        recorded = sorted((job.created, key, job.run_s) for key, job in jobs.items() if job.run_s > 0)
        self.finished.extend(ran for _, _, ran in recorded)

    def ran(self, key: str, jobs: Mapping[str, JobView], now: float) -> float:
        """Seconds the job has run in all: before its last suspension, and in its current run (if any)."""
        job = jobs.get(key)
        started = self._started.get(key)
        return (job.attained_s if job is not None else 0.0) + (now - started if started is not None else 0.0)

    def running(self, jobs: Mapping[str, JobView], now: float) -> dict[str, float]:
        """Job → `ran`, for every running job."""
        return {key: self.ran(key, jobs, now) for key in self._started}

    def suspendable(self, jobs: Mapping[str, JobView], now: float) -> dict[str, float]:
        """`running`, for the running jobs that may be suspended (`JobView.may_be_suspended`)."""
        return {
            key: self.ran(key, jobs, now)
            for key in self._suspendable
            if (job := jobs.get(key)) is not None and job.may_be_suspended
        }

    def stop(self, job: str) -> None:
        """The job's run ends now (it is being suspended)."""
        self._started.pop(job, None)
