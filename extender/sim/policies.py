"""The policies a simulation compares: ours (the extender's real code) and the default kube-scheduler.

A policy submits each arriving job to the simulated API server (as a gang or not, elastic or not) and,
at every step, makes its scheduling moves on the `SimCluster`. "Ours" runs the service's own pieces on the
model the service uses: kube-scheduler (emulated) calls `filter_pod` / `prioritize_pod` on a
`ClusterState` snapshot and commits plans with `commit_plan`, exactly as the HTTP verbs do; the job-level
`PreemptionLoop` ticks with an actuator that changes the simulated cluster; an elastic scaler, when one
is given, is one more pluggable step that returns Worker-replica patches. The baselines that place whole
jobs themselves live in `baselines`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from extender.policy import PolicySettings, filter_pod, prioritize_pod
from extender.policy.model import ClusterSnapshot, PodView
from extender.preemptor import PreemptionLoop
from extender.sim.cluster import EPOCH, SimCluster, SimPod
from extender.sim.kube import KubeScheduler
from extender.sim.workload import JobSpec
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
    deadlocked: bool = False


class Policy:
    name = "policy"
    gang = False
    """Submit a PodGroup with each TFJob (training-operator's gang scheduling)."""
    elastic = False
    """Submit jobs with `enableDynamicWorker` and their min/max worker bounds."""
    feed_model = False
    """Keep the extender's `ClusterState` up to date (only needed by the real extender code)."""
    tick_s = 10.0
    """Seconds between steps while work is pending."""

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
        self.cluster.submit(spec, now, gang=self.gang, elastic=self.elastic)

    def step(self, now: float) -> None:
        raise NotImplementedError

    def on_finish(self, name: str, now: float) -> None:
        """A job finished; its pods are gone."""


class DefaultKubeScheduler(Policy):
    """kube-scheduler's default profile with tf-operator: per-pod FIFO, LeastAllocated spreading, no gang."""

    name = "default"
    tick_s = 1.0

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
        view, snapshot = self._view(pod)
        decision = filter_pod(snapshot, view, nodes, self.settings, wall)
        if decision.reserve or decision.release_groups or decision.failed_plan is not None:
            self.state.commit_plan(
                release_groups=decision.release_groups, reserve=decision.reserve, failed_plan=decision.failed_plan
            )
        return list(decision.feasible)

    def prioritize(self, pod: SimPod, nodes: Sequence[str]) -> dict[str, int]:
        view, snapshot = self._view(pod)
        return dict(prioritize_pod(snapshot, view, nodes, self.settings).scores)


@dataclass
class SimActuator:
    """The Actuator protocol on the simulated cluster: a replica patch goes through training-operator's
    reconcile, an eviction deletes the pod (training-operator recreates it pending)."""

    cluster: SimCluster
    now: float = 0.0
    scaled: int = 0
    evicted: int = 0
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def scale_workers(self, job: str, replicas: int, reason: str) -> None:
        self.scaled += 1
        self.cluster.set_workers(job.split("/", 1)[1], replicas, self.now)

    def evict(self, pod: PodView, reason: str) -> None:
        self.evicted += 1
        if pod.key in self.cluster.pods:
            self.cluster.delete_pod(pod.key, self.now)

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        self.events.append((key, reason, message))


ScalerStep = Callable[[ClusterSnapshot, float], Sequence[tuple[str, int]]]
"""An elastic scaler as one step: (snapshot, wall-clock now) → TFJob key and the Worker replicas to set."""


class Ours(Policy):
    """The extender: gang admission, co-location, KOD2 weights with aging, job-level preemption."""

    name = "ours"
    gang = True
    elastic = True
    feed_model = True
    tick_s = 2.0

    def __init__(self, settings: PolicySettings | None = None, scaler: ScalerStep | None = None) -> None:
        super().__init__()
        self.settings = settings or PolicySettings()
        self.scaler = scaler

    def attach(self, cluster: SimCluster, rng: random.Random, progress: Mapping[str, JobProgress]) -> None:
        super().attach(cluster, rng, progress)
        assert cluster.model is not None
        self.extender = ModelExtender(cluster.model, self.settings)
        self.kube = KubeScheduler(cluster, rng, self.extender)
        self.actuator = SimActuator(cluster)
        self.now = 0.0
        self.loop = PreemptionLoop(cluster.model, self.actuator, self.settings, clock=lambda: EPOCH + self.now)

    def step(self, now: float) -> None:
        self.now = self.actuator.now = now
        self.kube.cycle(now)
        if self.loop.tick(EPOCH + now) is not None:
            self.kube.cycle(now)
        if self.scaler is not None and self.cluster.model is not None:
            for job, replicas in self.scaler(self.cluster.model.snapshot(), EPOCH + now):
                self.actuator.scale_workers(job, replicas, "scaler")
            self.kube.cycle(now)
        self.preemptions = len(self.loop.history)
        self.scale_actions = self.actuator.scaled
