"""The Optimus baseline: greedy allocation by marginal gain, with an oracle speed model.

Every job first gets its least size (the minimum of an elastic job, all the workers of a rigid one;
running jobs first, then by arrival), then workers go one at a time to the elastic job whose remaining
time drops most per unit of resource, up to its maximum. Remaining time comes from the simulator's own
throughput model, i.e. a perfect speed model (an oracle Optimus does not have). Reallocation happens when
jobs arrive or finish and every 10 minutes; a resized job restarts from its checkpoint. Rigid jobs are
never resized. Placement uses the baselines' helpers (`baselines`).
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.policy.core.views import Role
from extender.sim.baselines import active_jobs, bind_all, current_free, is_running, node_share, pack
from extender.sim.cluster import SimJob
from extender.sim.policies import Policy
from extender.sim.throughput import MODELS, Task, job_rate
from extender.sim.workload import JobSpec


class Optimus(Policy):
    name = "optimus"
    resizes = True

    def __init__(self) -> None:
        super().__init__()
        self._seen: frozenset[str] = frozenset()
        self._last = float("-inf")
        self._target: dict[str, int] = {}
        self._rates: dict[tuple[str, int], float] = {}

    interval_s = 600.0
    """Seconds between reallocations when no job arrives or finishes (Optimus reschedules periodically)."""

    def step(self, now: float) -> None:
        jobs = active_jobs(self.cluster)
        names = frozenset(j.spec.name for j in jobs)
        if names != self._seen or now - self._last >= self.interval_s:
            self._seen = names
            self._last = now
            self._target = self._allocate(jobs)
            for job in jobs:
                wanted = self._target.get(job.spec.name, 0)
                if is_running(job) and wanted == job.workers:
                    continue
                if is_running(job):
                    self.cluster.restart_job(job.spec.name, now)
                    self.scale_actions += 1
                    self.preemptions += wanted == 0
                if wanted:
                    self.cluster.set_workers(job.spec.name, wanted, now)
        free = current_free(self.cluster)
        for job in jobs:
            if self._target.get(job.spec.name) and not is_running(job):
                plan = pack(self.cluster, free, list(job.pods.values()))
                if plan is not None:
                    bind_all(self.cluster, plan)

    def _remaining_time(self, spec: JobSpec, workers: int) -> float:
        key = (spec.name, workers)
        rate = self._rates.get(key)
        if rate is None:
            ps = [Task("n", spec.requests(Role.PS))] * spec.ps
            wk = [Task("n", spec.requests(Role.WORKER))] * workers
            rate = self._rates[key] = job_rate(MODELS[spec.model], spec.batch, ps, wk, self.cluster.hardware).samples_s
        left = spec.samples - self.progress[spec.name].done
        return left / max(rate, 1e-9)

    def _allocate(self, jobs: Sequence[SimJob]) -> dict[str, int]:
        """Worker counts. First every job's least size while resources last — running jobs first (so a
        running job is never resized below its minimum nor taken to zero), then waiting ones in arrival
        order: the minimum of an elastic job, all the workers of a rigid one. Then workers one at a time to
        the elastic job whose remaining time falls most per node share, up to its maximum."""
        free = self.cluster.capacity()
        target: dict[str, int] = {}
        for job in sorted(jobs, key=lambda j: (not is_running(j), j.spec.arrival_s, j.spec.name)):
            spec = job.spec
            least = spec.min_workers if job.elastic else job.workers
            base = spec.requests(Role.PS).scaled(spec.ps) + spec.requests(Role.WORKER).scaled(least)
            if base.fits_in(free):
                free = free - base
                target[spec.name] = least
        specs = {j.spec.name: j.spec for j in jobs if j.spec.name in target and j.elastic}
        while True:
            best: tuple[float, str] | None = None
            for name, spec in specs.items():
                request = spec.requests(Role.WORKER)
                if target[name] >= spec.max_workers or not request.fits_in(free):
                    continue
                gain = self._remaining_time(spec, target[name]) - self._remaining_time(spec, target[name] + 1)
                per_unit = gain / max(node_share(self.cluster, request), 1e-9)
                if per_unit > 0 and (best is None or (per_unit, name) > best):
                    best = (per_unit, name)
            if best is None:
                return target
            free = free - specs[best[1]].requests(Role.WORKER)
            target[best[1]] += 1
