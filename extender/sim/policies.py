"""The policies a simulation compares: ours (the extender's real code) and the default kube-scheduler.

A policy submits each arriving job to the simulated API server (with a PodGroup or not) and, at every
step, makes its scheduling moves on the `SimCluster`. Every policy gets the same jobs: an elastic job is
submitted elastic (`enableDynamicWorker`, min/max annotations, minMember = PS + min workers) to each of
them and trains once its minimum runs; only the policies with `resizes` change worker counts. "Ours"
runs the service's own pieces on the model the service uses: kube-scheduler (emulated) calls
`filter_and_commit` and `prioritize_pod` on a `ClusterState` snapshot, committing plans through
`decide_and_commit`, exactly as the HTTP verbs do; the job-level `PreemptionLoop` ticks with an actuator
that changes the simulated cluster, and so does the service's `ScalerLoop` (scale-out into idle
capacity, consolidation onto the PS), driven tick by tick on the virtual clock instead of from its
thread. The baselines that place whole jobs themselves live in `baselines`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from extender.loops.actuator import Resize
from extender.loops.preemption import PreemptionLoop
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.loops.scaler import ScalerLoop
from extender.loops.scaler_settings import ScalerLoopSettings
from extender.policy import PolicySettings, prioritize_pod
from extender.policy.core.resources import Resources
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView, PodView
from extender.sim.cluster import EPOCH, SimCluster, SimPod
from extender.sim.kube import KubeScheduler
from extender.sim.workload import JobSpec
from extender.state.commits import filter_and_commit
from extender.state.gang_annotations import RESUMED_AT_ANNOTATION, SUSPENDED_AT_ANNOTATION
from extender.state.store import ClusterState


@dataclass
class JobProgress:
    """What the engine knows about a job's training, readable by policies (Tiresias needs attained service)."""

    spec: JobSpec
    done: float = 0.0
    """Samples trained."""
    service: float = 0.0
    """Attained service: node-share × seconds while training (Tiresias' 2D metric)."""
    started: float | None = None
    finished: float | None = None
    ready_at: float | None = None
    """When the job's current run finishes starting up (None while it is not runnable)."""
    placed: float | None = None
    """When the job first became runnable (every PS and its minimum of workers bound)."""
    first_fit: float | None = None
    """The first step, before it was placed, after which the job's minimum (every PS and its minimum of
    workers) would have fit in the free capacity: from then on only the policy's choices kept it waiting."""
    deadlocked: bool = False
    saved: float = 0.0
    """Samples trained as of its last checkpoint (what a restart goes back to)."""
    since_save_s: float = 0.0
    """Seconds trained since its last checkpoint (what a restart throws away)."""
    restarts: int = 0
    """Times it stopped training before it finished: evicted, suspended, or left below what it needs."""
    lost_work_s: float = 0.0
    """GPU-seconds (CPU-seconds for a job without GPUs) of training thrown away by its restarts."""
    taken_at: list[float] = field(default_factory=list)
    """Virtual times the extender's loops took it (evicted, suspended, scaled it in, moved a worker)."""


class Policy:
    name = "policy"
    gang = False
    """Submit a PodGroup with each TFJob (training-operator's gang scheduling)."""
    resizes = False
    """Changes the worker count of elastic jobs (scale-in, scale-out, reallocation); the others run every
    job with the workers it was submitted with."""
    feed_model = False
    """Keep the extender's `ClusterState` up to date (only needed by the real extender code)."""
    tick_s = 10.0
    """Seconds between steps while work is pending."""
    reads_taints = False
    """Keeps each job's pods off nodes whose taints it does not tolerate (a workload with such nodes is run
    only by policies that do)."""
    steps_while_running = False
    """Also step every `tick_s` while any job trains and nothing is pending (a policy that grows jobs)."""

    def __init__(self) -> None:
        self.preemptions = 0
        self.scale_actions = 0
        self.cluster: SimCluster
        self.rng: random.Random
        self.progress: Mapping[str, JobProgress] = {}

    def attach(self, cluster: SimCluster, rng: random.Random, progress: Mapping[str, JobProgress]) -> None:
        self.cluster = cluster
        self.rng = rng
        self.progress = progress

    def submit(self, spec: JobSpec, now: float) -> None:
        self.cluster.submit(spec, now, gang=self.gang)

    def step(self, now: float) -> None:
        raise NotImplementedError

    def on_finish(self, name: str, now: float) -> None:
        """A job finished; its pods are gone."""

    def reserved(self) -> Mapping[str, Resources]:
        """Node → room the policy has committed to pods it placed and that are not bound yet (a gang's
        reserved plan): taken, not free, for every other job."""
        return {}


class DefaultKubeScheduler(Policy):
    """kube-scheduler's default profile with tf-operator: per-pod FIFO, LeastAllocated spreading, no gang."""

    name = "default"
    tick_s = 1.0
    reads_taints = True

    def attach(self, cluster: SimCluster, rng: random.Random, progress: Mapping[str, JobProgress]) -> None:
        super().attach(cluster, rng, progress)
        self.kube = KubeScheduler(cluster, rng)

    def step(self, now: float) -> None:
        self.kube.cycle(now)


@dataclass
class ModelExtender:
    """The `/filter` and `/prioritize` verbs without HTTP: the same calls on the same model, in process.

    Virtual time is turned into the wall-clock time the model's object timestamps use (`EPOCH` + now)."""

    state: ClusterState
    settings: PolicySettings

    def _view(self, pod: SimPod) -> tuple[PodView, ClusterSnapshot]:
        snapshot = self.state.snapshot()
        return snapshot.pods[pod.key], snapshot

    def filter(self, pod: SimPod, nodes: Sequence[str], now: float) -> list[str]:
        wall = EPOCH + now
        self.state.release_expired(wall)
        view, _ = self._view(pod)
        outcome = filter_and_commit(self.state, view, nodes, self.settings, wall)
        return list(outcome.decision.feasible) if outcome.committed else []

    def prioritize(self, pod: SimPod, nodes: Sequence[str]) -> dict[str, int]:
        view, snapshot = self._view(pod)
        return dict(prioritize_pod(snapshot, view, nodes, self.settings).scores)


@dataclass
class SimActuator:
    """The `ScalingActuator` protocol on the simulated cluster: a replica patch goes through
    training-operator's reconcile (highest indices deleted, missing ones created pending), an eviction or
    a restart deletes the pod (training-operator recreates it pending), a suspension restarts the whole
    job, annotations land on the TFJob the model reads. Wall-clock times in annotations are the model's
    (`EPOCH` + virtual time)."""

    cluster: SimCluster
    progress: Mapping[str, JobProgress] = field(default_factory=dict)
    """Where each taking is noted (`JobProgress.taken_at`)."""
    now: float = 0.0
    scaled: int = 0
    """Worker-replica changes carried out (scale-in and scale-out)."""
    evicted: int = 0
    restarted: int = 0
    suspended: int = 0
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
        if dry_run:
            return
        self.evicted += 1
        self._taken(pod.job)
        if pod.key in self.cluster.pods:
            self.cluster.delete_pod(pod.key, self.now)

    def _taken(self, job: str) -> None:
        """Note a taking of `job` now (one per job per moment: a gang's evictions are one taking)."""
        progress = self.progress.get(job.split("/", 1)[-1])
        if progress is not None and (not progress.taken_at or progress.taken_at[-1] != self.now):
            progress.taken_at.append(self.now)

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        self.events.append((key, reason, message))

    def annotate_group(self, group: GroupView, annotations: Mapping[str, str | None]) -> None:
        """Nothing reads PodGroup annotations here: the loops share the simulated model they decide on."""

    def resize_workers(
        self, job: str, expected: int, replicas: int, annotations: Mapping[str, str], reason: str
    ) -> Resize:
        name = job.split("/", 1)[1]
        observed = self.cluster.jobs[name].workers
        if observed != expected or self.cluster.jobs[name].finished:
            return Resize(False, observed)
        self.scaled += 1
        if replicas < observed:
            self._taken(job)
        self.cluster.annotate(name, dict(annotations), self.now)
        self.cluster.set_workers(name, replicas, self.now)
        return Resize(True, observed)

    def restart_pod(self, pod: PodView, reason: str) -> bool:
        current = self.cluster.pods.get(pod.key)
        if current is None or current.uid != pod.uid:
            return False
        self.restarted += 1
        self._taken(pod.job)
        self.cluster.delete_pod(pod.key, self.now)
        return True

    def annotate_job(self, job: str, annotations: Mapping[str, str]) -> None:
        self.cluster.annotate(job.split("/", 1)[1], dict(annotations), self.now)

    def annotate_kueue_workloads(self, job: str, job_uid: str, annotations: Mapping[str, str]) -> int:
        """No Kueue runs in the simulator."""
        return 0

    def suspend_job(self, job: str, suspend: bool, annotations: Mapping[str, str | None]) -> None:
        """A suspension restarts the job at once: training-operator deletes its pods, the loop resumes it
        once they are gone, and it comes back pending (a restart from its checkpoint), resumed as soon
        as it was suspended."""
        if not suspend:
            return
        name = job.split("/", 1)[1]
        self.suspended += 1
        self._taken(job)
        written = {key: value for key, value in annotations.items() if value is not None}
        written[RESUMED_AT_ANNOTATION] = written.get(SUSPENDED_AT_ANNOTATION, f"{EPOCH + self.now:.3f}")
        self.cluster.annotate(name, written, self.now)
        self.cluster.restart_job(name, self.now)


class Ours(Policy):
    """The extender: gang admission, co-location, KOD2 weights with aging, job-level preemption, and the
    elastic scaler (scale-out and consolidation) unless `scaler=False`."""

    name = "ours"
    gang = True
    resizes = True
    feed_model = True
    reads_taints = True
    tick_s = 2.0
    """The tick of the preemption loop and the scaler (both loop settings' `interval_s`)."""

    def __init__(self, settings: PolicySettings | None = None, *, scaler: bool = True) -> None:
        super().__init__()
        self.settings = settings or PolicySettings()
        self.with_scaler = scaler
        self.steps_while_running = scaler

    def attach(self, cluster: SimCluster, rng: random.Random, progress: Mapping[str, JobProgress]) -> None:
        super().attach(cluster, rng, progress)
        assert cluster.model is not None
        self.extender = ModelExtender(cluster.model, self.settings)
        self.kube = KubeScheduler(cluster, rng, self.extender)
        self.actuator = SimActuator(cluster, progress)
        self.now = 0.0
        knobs = PreemptionLoopSettings(interval_s=self.tick_s)
        self.loop = PreemptionLoop(cluster.model, self.actuator, self.settings, self._wall, knobs)
        self.scaler = (
            ScalerLoop(
                cluster.model,
                self.actuator,
                self.settings,
                self._wall,
                loop_settings=ScalerLoopSettings(interval_s=self.tick_s),
            )
            if self.with_scaler
            else None
        )

    def _wall(self) -> float:
        return EPOCH + self.now

    def reserved(self) -> Mapping[str, Resources]:
        return self.loop.state.snapshot().reserved_by_node

    def step(self, now: float) -> None:
        self.now = self.actuator.now = now
        wall = EPOCH + now
        self.kube.cycle(now)
        before = self.cluster.version, self.loop.state.snapshot().generation
        self.loop.tick(wall)
        if (self.cluster.version, self.loop.state.snapshot().generation) != before:
            self.kube.cycle(now)
        if self.scaler is not None and self.scaler.tick(wall):
            # The service polls in-flight migrations every 0.2 s; here the old pod is gone at once, so its
            # replacement's reservation is committed before kube-scheduler sees the pod.
            self.scaler.settle_migrations(self.scaler.state.snapshot(), wall)
            self.kube.cycle(now)
            # The service's two loops tick independently, each every 2 s: room the scaler frees (a migrated
            # worker's old node) is seen by the preemption loop's next tick, here before the step ends.
            self.loop.tick(wall)
            self.kube.cycle(now)
        self.preemptions = len(self.loop.history)
        self.scale_actions = self.actuator.scaled + self.actuator.restarted
