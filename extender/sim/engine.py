"""The virtual clock: advance from event to event, let the policy act, integrate progress and utilisation.

Events are job arrivals, job completions (remaining samples / current rate), the end of a job's start-up,
and — while pods are pending, or for a policy that grows running jobs while any job trains — the policy's
periodic step. Between two events every rate is constant, so
progress, attained service and busy cores are integrated exactly. A job trains only once it is runnable
(every PS bound, and all its workers — or, for an elastic job, at least its minimum) and `startup_s` has
passed since it became so; losing a PS or falling below its worker minimum stops it: a restart, which
loses the progress since its last checkpoint (every `JobSpec.checkpoint_s` seconds of training; all of it
for a job that never checkpoints) and pays `startup_s` again. `JobProgress.lost_work_s` counts what is
lost, in GPU-seconds (CPU-seconds for a job without GPUs), and `restarts` how often, for every policy alike.
When nothing can happen any more (no job trains, no event is due, the policy's steps have changed nothing
for `stall_quiet_s`, long enough for kube-scheduler to retry every unschedulable pod) the run is stalled:
if some job holds nodes without being runnable (a partial placement) the youngest such job is declared
deadlocked after `stall_timeout_s` and terminated, as tf-operator's deadlocked jobs were in the KOD2
experiment; if none does, the jobs still waiting can never be placed and are declared deadlocked too.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from extender.policy.core.resources import CPU, EMPTY, GPU, Resources
from extender.policy.core.views import Role
from extender.policy.preemption.lost_work import work_size
from extender.sim.cluster import SimCluster, SimJob
from extender.sim.policies import JobProgress, Policy
from extender.sim.throughput import MODELS, HardwareProfile, Rate, Task, job_rate
from extender.sim.workload import Workload

INF = float("inf")
DONE_TOLERANCE = 1e-6
"""A job whose remaining samples are below this share of its work is complete (float round-off)."""


@dataclass
class RunResult:
    policy: str
    workload: str
    jobs: dict[str, JobProgress]
    timeline: list[tuple[float, float, float]]
    """(time s, CPU busy share, GPU busy share), one row per constant-rate segment."""
    makespan_s: float
    cpu_busy_core_s: float
    gpu_busy_s: float
    cpu_capacity: float
    gpu_capacity: float
    preemptions: int
    scale_actions: int
    resizes: bool = False
    """The policy changes worker counts of elastic jobs (the others run them at their submitted size)."""
    steps: int = 0


class Simulation:
    def __init__(
        self,
        workload: Workload,
        policy: Policy,
        *,
        seed: int = 1,
        hw: HardwareProfile | None = None,
        startup_s: float = 20.0,
        stall_timeout_s: float = 600.0,
        stall_quiet_s: float = 60.0,
        on_progress: Callable[[float], None] | None = None,
        tells_checkpoints: bool = True,
    ) -> None:
        if workload.tainted and not policy.reads_taints:
            raise ValueError(
                f"{policy.name} does not read node taints, and some of {workload.name}'s nodes keep jobs out"
            )
        self.workload = workload
        self.policy = policy
        self.hw = hw or workload.hardware
        self.startup_s = startup_s
        """Seconds from a job becoming runnable to its first training step (pull, start, TF session)."""
        self.stall_timeout_s = stall_timeout_s
        self.stall_quiet_s = stall_quiet_s
        """Virtual seconds of steps that change nothing before the run counts as stalled: kube-scheduler
        retries an unschedulable pod without any cluster event after its flush interval (60 s), so a gang
        whose plan was reserved meanwhile is bound by then."""
        self.cluster = SimCluster(
            workload.nodes, feed_model=policy.feed_model, hardware=self.hw, tells_checkpoints=tells_checkpoints
        )
        self.progress = {job.name: JobProgress(job) for job in workload.jobs}
        policy.attach(self.cluster, random.Random(seed), self.progress)
        self.on_progress = on_progress
        capacity = self.cluster.capacity()
        self.cpu_capacity = capacity.get(CPU) / 1000
        self.gpu_capacity = float(capacity.get(GPU))
        self.node_size = next(iter(self.cluster.nodes.values()))
        self.timeline: list[tuple[float, float, float]] = []
        self.cpu_busy = 0.0
        self.gpu_busy = 0.0
        self.steps = 0
        self._fits_checked: tuple[int, tuple[tuple[str, Resources], ...]] | None = None

    def run(self) -> RunResult:
        arrivals = sorted(self.workload.jobs, key=lambda j: (j.arrival_s, j.name))
        next_arrival = 0
        now = 0.0
        last_step = -INF
        quiet = 0
        quiet_since = 0.0
        while next_arrival < len(arrivals) or self._unfinished():
            rates = self._rates(now)
            t_natural = min(
                arrivals[next_arrival].arrival_s if next_arrival < len(arrivals) else INF,
                min(
                    (now + self._remaining(name) / r.samples_s for name, r in rates.items() if r.samples_s > 0),
                    default=INF,
                ),
                min(
                    (p.ready_at for p in self.progress.values() if p.ready_at is not None and p.ready_at > now),
                    default=INF,
                ),
            )
            pending = any(True for _ in self.cluster.pending_pods())
            growing = self.policy.steps_while_running and bool(rates)
            t_tick = max(last_step + self.policy.tick_s, now) if pending or growing else INF
            if t_natural == INF and (t_tick == INF or (quiet >= 3 and now - quiet_since >= self.stall_quiet_s)):
                now = self._resolve_stall(now)
                last_step = now
                quiet = 0
                continue
            later = min(t_natural, t_tick)
            self._advance(now, later, rates)
            now = later
            while next_arrival < len(arrivals) and arrivals[next_arrival].arrival_s <= now:
                self.policy.submit(arrivals[next_arrival], now)
                next_arrival += 1
            self._complete(now, rates)
            before = self.cluster.version
            self.policy.step(now)
            self.steps += 1
            last_step = now
            quiet = quiet + 1 if self.cluster.version == before and t_natural > now else 0
            if quiet <= 1:
                quiet_since = now
            self._update_runnable(now)
            self._note_fits(now)
        makespan = max((p.finished or 0.0 for p in self.progress.values()), default=0.0)
        return RunResult(
            self.policy.name,
            self.workload.name,
            self.progress,
            self.timeline,
            makespan,
            self.cpu_busy,
            self.gpu_busy,
            self.cpu_capacity,
            self.gpu_capacity,
            self.policy.preemptions,
            self.policy.scale_actions,
            self.policy.resizes,
            self.steps,
        )

    # -- progress ---------------------------------------------------------------------------------------

    def _unfinished(self) -> bool:
        return any(p.finished is None for p in self.progress.values())

    def _remaining(self, name: str) -> float:
        progress = self.progress[name]
        return max(progress.spec.samples - progress.done, 0.0)

    def _rates(self, now: float) -> dict[str, Rate]:
        rates = {}
        for name, job in self.cluster.jobs.items():
            progress = self.progress[name]
            if job.finished or progress.ready_at is None or progress.ready_at > now:
                continue
            ps = [Task(p.node, p.requests) for p in job.bound(Role.PS)]
            workers = [Task(p.node, p.requests) for p in job.bound(Role.WORKER)]
            rates[name] = job_rate(MODELS[job.spec.model], job.spec.batch, ps, workers, self.hw)
        return rates

    def _advance(self, now: float, later: float, rates: dict[str, Rate]) -> None:
        span = later - now
        cpu = sum(r.cpu_busy for r in rates.values())
        gpu = sum(r.gpu_busy for r in rates.values())
        self.timeline.append((now, cpu / self.cpu_capacity, gpu / self.gpu_capacity if self.gpu_capacity else 0.0))
        if span <= 0:
            return
        self.cpu_busy += cpu * span
        self.gpu_busy += gpu * span
        for name, rate in rates.items():
            progress = self.progress[name]
            progress.done += rate.samples_s * span
            if progress.started is None:
                progress.started = progress.ready_at
            progress.service += self._share(self.cluster.jobs[name]) * span
            if checkpoint(progress, rate.samples_s, span) and progress.spec.checkpoint_s:
                self.cluster.report_checkpoint(name, later - progress.since_save_s)

    def _share(self, job: SimJob) -> float:
        """Node-equivalents the job holds: its largest share of one node's CPU, memory or GPU, summed."""
        size = self.node_size
        total = 0.0
        for pod in job.pods.values():
            if pod.bound:
                total += max(
                    pod.requests.get(n) / size.get(n) for n in ("cpu", "memory", "nvidia.com/gpu") if size.get(n)
                )
        return total

    def _complete(self, now: float, rates: dict[str, Rate]) -> None:
        for name in rates:
            progress = self.progress[name]
            if self._remaining(name) <= DONE_TOLERANCE * progress.spec.samples:
                progress.done = progress.spec.samples
                progress.finished = now
                progress.ready_at = None
                self.cluster.finish_job(name)
                self.policy.on_finish(name, now)
                if self.on_progress is not None:
                    self.on_progress(sum(p.finished is not None for p in self.progress.values()) / len(self.progress))

    def _update_runnable(self, now: float) -> None:
        for name, job in self.cluster.jobs.items():
            progress = self.progress[name]
            if job.finished:
                continue
            if runnable(job):
                if progress.ready_at is None:
                    progress.ready_at = now + self.startup_s
                if progress.placed is None:
                    progress.placed = now
            else:
                if progress.ready_at is not None:
                    restart(progress, job)
                progress.ready_at = None

    def _note_fits(self, now: float) -> None:
        """Record, for each job not placed yet, the first step after which its minimum would fit as is: in
        room neither bound pods nor the policy's reserved plans take."""
        reserved = self.policy.reserved()
        checked = (self.cluster.version, tuple(reserved.items()))
        if checked == self._fits_checked:
            return
        self._fits_checked = checked
        free = {node: self.cluster.free(node) - reserved.get(node, EMPTY) for node in self.cluster.nodes}
        for name, job in self.cluster.jobs.items():
            progress = self.progress[name]
            if job.finished or progress.placed is not None or progress.first_fit is not None:
                continue
            if fits(
                minimum_requests(job), {node: room for node, room in free.items() if self.cluster.admits(node, name)}
            ):
                progress.first_fit = now

    def _resolve_stall(self, now: float) -> float:
        partial = [j for j in self.cluster.jobs.values() if not j.finished and any(p.node for p in j.pods.values())]
        later = now + (self.stall_timeout_s if partial else 0.0)
        self._advance(now, later, {})
        victims = (
            [max(partial, key=lambda j: (j.spec.arrival_s, j.spec.name))]
            if partial
            else [j for j in self.cluster.jobs.values() if not j.finished]
        )
        if not victims:
            raise RuntimeError("simulation stalled with no job to blame")
        for job in victims:
            progress = self.progress[job.spec.name]
            progress.deadlocked = True
            progress.finished = later
            progress.ready_at = None
            self.cluster.finish_job(job.spec.name)
        self.policy.step(later)
        self._update_runnable(later)
        return later


def checkpoint(progress: JobProgress, samples_s: float, span: float) -> bool:
    """`span` seconds of training at `samples_s` have passed: move the last checkpoint to the last multiple
    of the job's interval within them. Whether the job checkpointed in them."""
    saved, progress.since_save_s = checkpoint_after(
        progress.spec.checkpoint_s, progress.done, progress.since_save_s, samples_s, span
    )
    if saved is None:
        return False
    progress.saved = saved
    return True


def checkpoint_after(
    interval: float | None, done: float, since_save_s: float, samples_s: float, span: float
) -> tuple[float | None, float]:
    """A job that checkpoints every `interval` seconds of training (None: never; 0 or less: at every step)
    trained `span` seconds at `samples_s`, reaching `done` samples, `since_save_s` seconds after its last
    checkpoint before them: the samples its last checkpoint within the span kept (None: it made none) and
    the seconds it has trained since its last checkpoint. The simulator's engine and the peer benchmark's
    jobs (`benchmarks/peer_training.py`) both checkpoint by it."""
    if interval is None:
        return None, since_save_s + span
    if interval <= 0:
        return done, 0.0
    trained = since_save_s + span
    if trained < interval:
        return None, trained
    since = trained % interval
    return done - samples_s * since, since


def restart(progress: JobProgress, job: SimJob) -> None:
    """The job stopped training before it finished: back to its last checkpoint."""
    progress.restarts += 1
    size, _ = work_size(pod.requests for pod in job.pods.values())
    progress.lost_work_s += progress.since_save_s * size
    progress.done, progress.since_save_s = progress.saved, 0.0


def minimum_requests(job: SimJob) -> list[Resources]:
    """What the job needs bound to train: every PS and all its workers, or for an elastic job its minimum."""
    workers = job.spec.min_workers if job.elastic else job.workers
    return [job.spec.requests(Role.PS)] * job.spec.ps + [job.spec.requests(Role.WORKER)] * max(workers, 1)


def fits(requests: list[Resources], free: dict[str, Resources]) -> bool:
    """Whether the requests fit in the free capacity, placed largest first on the first node with room."""
    room = dict(free)
    for request in sorted(requests, key=lambda r: (r.get(GPU), r.get(CPU)), reverse=True):
        node = next((name for name, left in room.items() if request.fits_in(left)), None)
        if node is None:
            return False
        room[node] = room[node] - request
    return True


def runnable(job: SimJob) -> bool:
    """Every PS bound and enough workers: all of them, or for an elastic job its minimum."""
    if len(job.bound(Role.PS)) < job.spec.ps:
        return False
    workers = len(job.bound(Role.WORKER))
    needed = job.spec.min_workers if job.elastic else job.workers
    return workers >= max(needed, 1)
