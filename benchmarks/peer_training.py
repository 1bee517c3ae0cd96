"""What a job's training does on the peer benchmark's cluster, where kwok only pretends to run its pods.

A `Training` follows one job as the simulator's engine does (`extender/sim/engine.py`), on the benchmark's
clock: the job trains while it is runnable — every PS bound, and all its workers or, for a job that declares
itself elastic, at least its minimum — at the throughput model's rate for where its pods are; it checkpoints
every `JobSpec.checkpoint_s` seconds of training (times the run's time scale; never, for a job without one);
when it stops being runnable before it finished (a PS or a worker below its minimum taken: an eviction, a
suspension) it restarts from its last checkpoint, losing the training since, counted in GPU-seconds (CPU-core
seconds for a job without GPUs) of the benchmark's clock. A replaced pod (the same name, a new uid) is a pod
lost. Every time the job loses a pod it was training with is a taking (a restart, or a scale-in above its
minimum). The caller reports the job's bound pods at each look (`place`), writes each checkpoint on the pods
as the training code would (`checkpoints` gives their times), and completes the pods when `eta` comes.
Pure: no I/O, and the caller passes the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.policy.core.views import Role
from extender.policy.preemption.lost_work import work_size
from extender.sim.engine import checkpoint_after
from extender.sim.throughput import MODELS, HardwareProfile, Task, job_rate
from extender.sim.workload import JobSpec


@dataclass(frozen=True, slots=True)
class BoundPod:
    """One of the job's pods, bound: its uid (a recreated pod has a new one), role and node."""

    uid: str
    role: Role
    node: str


@dataclass
class Training:
    spec: JobSpec
    time_scale: float
    """Benchmark seconds per second of the throughput model."""
    hardware: HardwareProfile
    elastic: bool
    """Whether the job declared its elastic bounds: it trains with at least `min_workers` workers."""
    done: float = 0.0
    """Samples trained, those since the last checkpoint included."""
    saved: float = 0.0
    """Samples trained at the last checkpoint."""
    since_save_s: float = 0.0
    """Benchmark seconds of training since the last checkpoint."""
    samples_s: float = 0.0
    """The current rate, samples per benchmark second; 0 while not runnable."""
    at: float | None = None
    """When the progress was last brought up to date (the caller's clock)."""
    placed: dict[str, BoundPod] = field(default_factory=dict)
    restarts: int = 0
    takings: list[float] = field(default_factory=list)
    """When the job lost pods it was training with (the caller's clock)."""
    lost_work_s: float = 0.0
    checkpointed: list[float] = field(default_factory=list)
    """Checkpoints made since the caller last took them (`checkpoints`), at the caller's clock."""

    @property
    def training(self) -> bool:
        return self.samples_s > 0

    @property
    def finished(self) -> bool:
        return self.done >= self.spec.samples

    def advance(self, now: float) -> None:
        """Train from the last update to `now` at the current rate, checkpointing on the way."""
        if self.at is None or now <= self.at:
            self.at = now if self.at is None else self.at
            return
        span, self.at = now - self.at, now
        if not self.training:
            return
        interval = self.interval_s
        start = now - span
        remaining = (self.spec.samples - self.done) / self.samples_s
        span = min(span, max(remaining, 0.0))
        self.done += self.samples_s * span
        saved, self.since_save_s = checkpoint_after(interval, self.done, self.since_save_s, self.samples_s, span)
        if saved is None:
            return
        self.saved = saved
        if interval is not None and interval > 0:
            self.checkpointed.append(start + span - self.since_save_s)

    @property
    def interval_s(self) -> float | None:
        """Benchmark seconds of training between two checkpoints (None: never; 0: every step)."""
        interval = self.spec.checkpoint_s
        return None if interval is None else interval * self.time_scale

    def place(self, now: float, bound: Mapping[str, BoundPod]) -> None:
        """The job's pods bound at `now` (pod name → pod): train up to now, then count what changed — a
        restart when it stops being runnable or loses a PS, a scale-in when it loses a worker and trains on."""
        self.advance(now)
        lost = [name for name, pod in self.placed.items() if bound.get(name) != pod]
        if self.training and lost and not self.finished:
            self.takings.append(now)
            kept = {name: pod for name, pod in self.placed.items() if name not in lost}
            ps_lost = any(self.placed[name].role is Role.PS for name in lost)
            if ps_lost or not self._runnable(kept) or not self._runnable(bound):
                self._restart()
        self.placed = dict(bound)
        self.samples_s = self._rate(bound) if self._runnable(bound) and not self.finished else 0.0

    def _runnable(self, bound: Mapping[str, BoundPod]) -> bool:
        ps = sum(1 for pod in bound.values() if pod.role is Role.PS)
        workers = sum(1 for pod in bound.values() if pod.role is Role.WORKER)
        return ps >= self.spec.ps and workers >= (self.spec.min_workers if self.elastic else self.spec.workers)

    def _rate(self, bound: Mapping[str, BoundPod]) -> float:
        spec = self.spec
        ps = [Task(pod.node, spec.requests(Role.PS)) for pod in bound.values() if pod.role is Role.PS]
        workers = [Task(pod.node, spec.requests(Role.WORKER)) for pod in bound.values() if pod.role is Role.WORKER]
        return job_rate(MODELS[spec.model], spec.batch, ps, workers, self.hardware).samples_s / self.time_scale

    def _restart(self) -> None:
        self.restarts += 1
        size, _ = work_size(self.spec.requests(pod.role) for pod in self.placed.values())
        self.lost_work_s += self.since_save_s * size
        self.done, self.since_save_s = self.saved, 0.0

    def eta(self, now: float) -> float | None:
        """When the job finishes at its current rate (None while it does not train)."""
        if not self.training:
            return None
        return now + max(self.spec.samples - self.done, 0.0) / self.samples_s

    def checkpoints(self) -> list[float]:
        """The checkpoints made since the last call, oldest first."""
        made, self.checkpointed = self.checkpointed, []
        return made
