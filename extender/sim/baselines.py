"""Baselines that place whole jobs: gang-FIFO coscheduling, KOD2 as published, Tiresias 2D-LAS, and
Optimus (in `optimus`, sharing the placement helpers here).

Each one decides on the same `SimCluster` as the other policies and binds pods itself (KOD2 writes
`nodeName`; the others stand in for a scheduler that places a gang at once). Every one gets the same
jobs; only KOD2 and Optimus change worker counts (`resizes`):
- `GangFifo` — scheduler-plugins Coscheduling: gangs in PodGroup creation order; a gang starts when its
  minMember (every PS and its minimum of workers) can be placed, each pod scored like kube-scheduler's
  default profile, and its other members then join one by one as room frees; a gang that does not fit
  is skipped, not waited for.
- `Kod2` — Algorithms 1–3 of the paper: weights ω = sigmoid(min workers / (CPU share + memory share)), the
  top waiting job starts (or scales running jobs in) only if it weighs at least as much as every running
  job, otherwise waiting jobs start by weight where they fit; jobs waiting beyond STARVELIMIT get the top
  weight; every step scales running jobs out onto idle capacity, heaviest first. Tasks go on one node
  when they fit there, otherwise PS and workers together on the idlest nodes (§4.1).
- `Tiresias` — discretised two-dimensional least-attained-service: two queues split at a threshold of
  attained service (node share × seconds), FIFO inside a queue; jobs run at their submitted size,
  consolidated. A waiting job starts where it fits in what is really free; only when it cannot does it
  preempt running jobs of lower queues (lowest first, the fewest that make room), never its own queue's;
  a preempted job restarts from its checkpoint.
- `Optimus` — greedy allocation by marginal gain: every job first gets its least size (the minimum of an
  elastic job, all the workers of a rigid one; running jobs first, then by arrival), then workers go one
  at a time to the elastic job whose remaining time drops most per unit of resource, up to its maximum.
  Remaining time is estimated with the simulator's own throughput model, i.e. a perfect speed model (an
  oracle Optimus does not have). Reallocation happens when jobs arrive or finish and every 10 minutes; a
  resized job restarts from its checkpoint. Rigid jobs are never resized.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from extender.policy.core.resources import CPU, GPU, MEMORY, Resources
from extender.policy.core.views import Role
from extender.sim.cluster import SimCluster, SimJob, SimPod
from extender.sim.kube import MAX_NODE_SCORE
from extender.sim.policies import Policy
from extender.sim.throughput import MODELS, Task, job_rate
from extender.sim.workload import JobSpec

Free = dict[str, Resources]
IDLE_DIMENSIONS = (CPU, MEMORY, GPU)


def idleness(cluster: SimCluster, free: Free, node: str) -> float:
    allocatable = cluster.nodes[node]
    shares = [free[node].get(name) / allocatable.get(name) for name in IDLE_DIMENSIONS if allocatable.get(name)]
    return sum(shares) / len(shares)


def node_share(cluster: SimCluster, requests: Resources) -> float:
    """The largest share of one node's CPU, memory or GPU these requests take (Tiresias' spatial size)."""
    node = next(iter(cluster.nodes.values()))
    return max(requests.get(name) / node.get(name) for name in IDLE_DIMENSIONS if node.get(name))


def pack(cluster: SimCluster, free: Free, pods: Sequence[SimPod]) -> dict[str, str] | None:
    """KOD2 §4.1 placement: the whole job on one node when it fits (the idlest such node), else PS and
    workers together filling nodes in order of idleness. None when some pod does not fit."""
    pods = sorted(pods, key=lambda p: (p.role is not Role.PS, p.index))
    demand = Resources()
    for pod in pods:
        demand = demand + pod.requests
    whole = [n for n in cluster.nodes if demand.fits_in(free[n])]
    if whole:
        node = max(whole, key=lambda n: (idleness(cluster, free, n), n))
        free[node] = free[node] - demand
        return dict.fromkeys((p.key for p in pods), node)
    trial = dict(free)
    plan: dict[str, str] = {}
    waiting = list(pods)
    for node in sorted(cluster.nodes, key=lambda n: (-idleness(cluster, trial, n), n)):
        still = []
        for pod in waiting:
            if pod.requests.fits_in(trial[node]):
                plan[pod.key] = node
                trial[node] = trial[node] - pod.requests
            else:
                still.append(pod)
        waiting = still
    if waiting:
        return None
    free.update(trial)
    return plan


def spread(cluster: SimCluster, free: Free, pods: Sequence[SimPod], *, partial: bool = False) -> dict[str, str] | None:
    """Each pod where kube-scheduler's LeastAllocated + BalancedAllocation would put it (ties by name); None
    when some pod fits nowhere, unless `partial`, which leaves such pods out."""
    trial = dict(free)
    plan: dict[str, str] = {}
    for pod in sorted(pods, key=lambda p: (p.created, p.key)):
        best: tuple[float, str] | None = None
        for node in cluster.nodes:
            if not pod.requests.fits_in(trial[node]):
                continue
            score = _score(cluster.nodes[node], trial[node] - pod.requests)
            if best is None or (score, node) > best:
                best = (score, node)
        if best is None:
            if partial:
                continue
            return None
        plan[pod.key] = best[1]
        trial[best[1]] = trial[best[1]] - pod.requests
    free.update(trial)
    return plan


def _score(allocatable: Resources, left: Resources) -> float:
    fractions = [1 - left.get(name) / allocatable.get(name) for name in (CPU, MEMORY)]
    return MAX_NODE_SCORE * (2 - sum(fractions) / 2 - abs(fractions[0] - fractions[1]) / 2)


def bind_all(cluster: SimCluster, plan: Mapping[str, str]) -> None:
    for key, node in plan.items():
        cluster.bind(key, node)


def current_free(cluster: SimCluster) -> Free:
    return {node: cluster.free(node) for node in cluster.nodes}


def active_jobs(cluster: SimCluster) -> list[SimJob]:
    return sorted((j for j in cluster.jobs.values() if not j.finished), key=lambda j: (j.spec.arrival_s, j.spec.name))


def is_running(job: SimJob) -> bool:
    return any(p.node for p in job.pods.values())


class GangFifo(Policy):
    name = "gang-fifo"
    gang = True

    def step(self, now: float) -> None:
        for job in active_jobs(self.cluster):
            pending = job.pending()
            if not pending:
                continue
            free = current_free(self.cluster)
            if is_running(job):
                bind_all(self.cluster, spread(self.cluster, free, pending, partial=True) or {})
                continue
            minimum = _minimum_members(job)
            plan = spread(self.cluster, free, minimum)
            if plan is None:
                continue
            rest = [pod for pod in pending if pod.key not in plan]
            plan.update(spread(self.cluster, free, rest, partial=True) or {})
            bind_all(self.cluster, plan)


def _minimum_members(job: SimJob) -> list[SimPod]:
    """The pods a PodGroup's minMember counts first: every PS, then workers by index up to the minimum."""
    needed = job.spec.min_workers if job.elastic else job.workers
    ps = [pod for pod in job.pods.values() if pod.role is Role.PS]
    workers = sorted((pod for pod in job.pods.values() if pod.role is Role.WORKER), key=lambda pod: pod.index)
    return ps + workers[:needed]


class Kod2(Policy):
    name = "kod2"
    resizes = True
    starve_limit_s = 600.0
    """STARVELIMIT (the paper gives no value; the extender's default)."""

    def __init__(self) -> None:
        super().__init__()
        self.weights: dict[str, float] = {}

    def submit(self, spec: JobSpec, now: float) -> None:
        super().submit(spec, now)
        capacity = self.cluster.capacity()
        minimum = spec.requests(Role.PS).scaled(spec.ps) + spec.requests(Role.WORKER).scaled(spec.min_workers)
        shares = minimum.get(CPU) / capacity.get(CPU) + minimum.get(MEMORY) / capacity.get(MEMORY)
        self.weights[spec.name] = 1 / (1 + math.exp(-spec.min_workers / max(shares, 1e-9)))

    def _order(self, jobs: Sequence[SimJob], descending: bool) -> list[SimJob]:
        sign = -1 if descending else 1
        return sorted(jobs, key=lambda j: (sign * self.weights[j.spec.name], j.spec.arrival_s, j.spec.name))

    def step(self, now: float) -> None:
        while self._admit_one(now):
            pass
        for job in active_jobs(self.cluster):
            waited = now - job.spec.arrival_s
            if not is_running(job) and waited > self.starve_limit_s:
                self.weights[job.spec.name] = 1.0
        self._scale_out(now)

    def _admit_one(self, now: float) -> bool:
        active = active_jobs(self.cluster)
        waiting = self._order([j for j in active if not is_running(j)], descending=True)
        running = [j for j in active if is_running(j)]
        if not waiting:
            return False
        top = waiting[0]
        if not running or self.weights[top.spec.name] >= max(self.weights[j.spec.name] for j in running):
            if self._start(top, now):
                return True
            victims = self._scale_in(top, running)
            if victims:
                self.scale_actions += len({self.cluster.pods[key].job for key in victims})
                self.preemptions += 1
                self.cluster.shrink(victims)
                return self._start(top, now)
            return False
        return any(self._start(job, now) for job in waiting)

    def _start(self, job: SimJob, now: float) -> bool:
        spec = job.spec
        for workers in range(job.workers, spec.min_workers - 1, -1):
            free = current_free(self.cluster)
            ps = [p for p in job.pods.values() if p.role is Role.PS]
            wk = sorted((p for p in job.pods.values() if p.role is Role.WORKER), key=lambda p: p.index)[:workers]
            plan = pack(self.cluster, free, ps + wk)
            if plan is not None:
                if workers < job.workers:
                    self.cluster.shrink(
                        [
                            p.key
                            for p in sorted(job.pods.values(), key=lambda p: p.index)
                            if p.role is Role.WORKER and p.key not in plan
                        ]
                    )
                bind_all(self.cluster, plan)
                return True
        return False

    def _scale_in(self, new: SimJob, running: Sequence[SimJob]) -> list[str]:
        """Algorithm 2: worker pods to remove so one node can hold the new job's minimum, or []."""
        spec = new.spec
        need = spec.requests(Role.PS).scaled(spec.ps) + spec.requests(Role.WORKER).scaled(spec.min_workers)
        weight = self.weights[spec.name]
        idle = current_free(self.cluster)
        candidates = [
            j
            for j in self._order(running, descending=False)
            if not (self.weights[j.spec.name] == weight and j.spec.arrival_s < spec.arrival_s)
        ]
        plan: list[str] = []
        for job in candidates:
            removable = len(job.bound(Role.WORKER)) - job.spec.min_workers
            count = 0
            ps_nodes = {p.node for p in job.bound(Role.PS)}
            stop = False
            for node in sorted(self.cluster.nodes, key=lambda n: (n in ps_nodes, n)):
                for worker in sorted((w for w in job.bound(Role.WORKER) if w.node == node), key=lambda w: -w.index):
                    if need.fits_in(idle[node]):
                        return plan
                    if count >= removable:
                        stop = True
                        break
                    idle[node] = idle[node] + worker.requests
                    plan.append(worker.key)
                    count += 1
                if need.fits_in(idle[node]) and plan:
                    return plan
                if stop:
                    break
        return []

    def _scale_out(self, now: float) -> None:
        """Algorithm 3: grow running jobs, heaviest first, onto nodes with room for one more worker."""
        idle = current_free(self.cluster)
        for job in self._order([j for j in active_jobs(self.cluster) if is_running(j)], descending=True):
            room = job.spec.max_workers - job.workers
            request = job.spec.requests(Role.WORKER)
            targets: list[str] = []
            for node in self.cluster.nodes:
                while request.fits_in(idle[node]) and len(targets) < room:
                    idle[node] = idle[node] - request
                    targets.append(node)
                if len(targets) >= room:
                    break
            if targets:
                pods = self.cluster.grow(job.spec.name, len(targets), now)
                bind_all(self.cluster, {pod.key: node for pod, node in zip(pods, targets, strict=True)})
                self.scale_actions += 1


class Tiresias(Policy):
    name = "tiresias"
    gang = True
    tick_s = 30.0

    def __init__(self, threshold: float | None = None) -> None:
        super().__init__()
        self.threshold = threshold
        """Attained service (node share × s) separating the two queues; default: the workload's median
        nominal job service, as Tiresias derives thresholds from the cluster's job history."""

    def queue(self, job: SimJob) -> int:
        """0 (high) below the service threshold, 1 (low) at or above it."""
        assert self.threshold is not None
        return int(self.progress[job.spec.name].service >= self.threshold)

    def step(self, now: float) -> None:
        if self.threshold is None:
            self.threshold = statistics.median(_nominal_service(self.cluster, p.spec) for p in self.progress.values())
        jobs = active_jobs(self.cluster)
        order = sorted(jobs, key=lambda j: (self.queue(j), j.spec.arrival_s, j.spec.name))
        free = current_free(self.cluster)
        for job in order:
            if is_running(job):
                continue
            plan = pack(self.cluster, free, list(job.pods.values()))
            if plan is None:
                victims = self._victims(job, order, free)
                if not victims:
                    continue
                for victim in victims:
                    self.cluster.restart_job(victim.spec.name, now)
                    self.preemptions += 1
                free = current_free(self.cluster)
                plan = pack(self.cluster, free, list(job.pods.values()))
                assert plan is not None, "the victims were chosen so that the job fits"
            bind_all(self.cluster, plan)

    def _victims(self, job: SimJob, order: Sequence[SimJob], free: Free) -> list[SimJob]:
        """The fewest running jobs of lower queues (lowest first) whose restart lets `job` be placed whole,
        or none when even all of them would not: a job never preempts its own queue or a higher one."""
        lower = [j for j in reversed(order) if is_running(j) and self.queue(j) > self.queue(job)]
        pods = list(job.pods.values())

        def fits(chosen: Sequence[SimJob]) -> bool:
            trial = dict(free)
            for victim in chosen:
                for pod in victim.pods.values():
                    if pod.node:
                        trial[pod.node] = trial[pod.node] + pod.requests
            return pack(self.cluster, trial, pods) is not None

        chosen: list[SimJob] = []
        for victim in lower:
            chosen.append(victim)
            if fits(chosen):
                break
        else:
            return []
        for victim in reversed(list(chosen)):
            trial = [other for other in chosen if other is not victim]
            if trial and fits(trial):
                chosen = trial
        return chosen


def _nominal_service(cluster: SimCluster, spec: JobSpec) -> float:
    """Node share × seconds a job needs alone at its requested size, consolidated."""
    hw = cluster.hardware
    tasks = [Task("n", spec.requests(Role.PS))] * spec.ps
    workers = [Task("n", spec.requests(Role.WORKER))] * spec.workers
    rate = job_rate(MODELS[spec.model], spec.batch, tasks, workers, hw).samples_s
    size = node_share(cluster, spec.requests(Role.PS).scaled(spec.ps) + spec.requests(Role.WORKER).scaled(spec.workers))
    return size * spec.samples / max(rate, 1e-9)
