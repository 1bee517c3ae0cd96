"""Who evicted whom, and what it cost: a record of one preemption scene on a real control plane.

Two parties may take victims for a native gang (a TFJob in Kubernetes' own gang): kube-scheduler's
workload-aware preemption (DefaultPreemption's PodGroupPostFilter, 1.37) and the extender's preemption loop.
Each leaves its own trace. kube-scheduler deletes each victim itself after setting its `DisruptionTarget`
condition with reason `PreemptionByScheduler`, and writes an Event `Preempted` on the victim pod ("Preempted by
PodGroup <uid> on node cluster"). The loop evicts through the Eviction API (the API server sets the condition
with reason `EvictionByEvictionAPI`) and writes an Event `Preempted` on the victim TFJob from the component
`tfjob-extender`. `PodWatch` polls the scene's pods (every `POLL_S`) for when each bound and went and the
condition it carried; `parties` reads the Events afterwards, which outlive the pods.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from extender.devcluster import LocalControlPlane
from extender.state.convert import timestamp
from tests.e2e.workloads import JOB

POLL_S = 0.2
"""Seconds between two looks at the scene's pods: the bind and eviction times are this precise."""
BY_SCHEDULER = "kube-scheduler"
BY_LOOP = "extender"
Obj = dict[str, Any]


@dataclass
class PodLife:
    name: str
    job: str
    bound_at: float = 0.0
    """When it was first seen bound."""
    scheduled_at: float = 0.0
    """When its `PodScheduled` condition turned True (to the second): when it started running."""
    gone_at: float = 0.0
    disruption: str = ""
    """The reason of the `DisruptionTarget` condition seen on it ("" if none was seen)."""
    waits: list[str] = field(default_factory=list)
    """Each new message of its `PodScheduled` condition while it was not bound, in order."""


@dataclass
class PodWatch:
    """Polls the pods of `namespace` on a thread of its own until `stop`."""

    plane: LocalControlPlane
    namespace: str
    lives: dict[str, PodLife] = field(default_factory=dict)
    """Pod uid → its life as seen."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> PodWatch:
        """The first look at once (the pods running before anything that follows), then on the thread."""
        self.look(self.plane.pods(self.namespace), time.time())
        self._thread = threading.Thread(target=self._run, name=f"watch-{self.namespace}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.look(self.plane.pods(self.namespace), time.time())
            except Exception:  # the control plane is going away; a watching thread must never raise
                return
            self._stop.wait(POLL_S)

    def look(self, pods: list[Obj], now: float) -> None:
        seen = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            life = self.lives.setdefault(
                uid, PodLife(pod["metadata"]["name"], (pod["metadata"].get("labels") or {}).get(JOB, ""))
            )
            if pod["spec"].get("nodeName") and not life.bound_at:
                life.bound_at = now
            if pod["metadata"].get("deletionTimestamp") and not life.gone_at:
                life.gone_at = now
            for condition in (pod.get("status") or {}).get("conditions") or []:
                if condition["type"] == "PodScheduled" and condition["status"] == "True" and not life.scheduled_at:
                    life.scheduled_at = timestamp(condition["lastTransitionTime"])
                if condition["type"] == "DisruptionTarget" and condition["status"] == "True":
                    life.disruption = condition.get("reason", "")
                message = condition.get("message", "")
                waiting = condition["type"] == "PodScheduled" and condition["status"] == "False"
                if waiting and message and (not life.waits or life.waits[-1] != message):
                    life.waits.append(message)
        for uid, life in self.lives.items():
            if uid not in seen and not life.gone_at:
                life.gone_at = now

    def bound_whole(self, job: str, pods: int) -> float:
        """When the last of the first `pods` pods of `job` to bind was bound (0: not yet)."""
        times = sorted(life.bound_at for life in self.lives.values() if life.job == job and life.bound_at)
        return times[pods - 1] if len(times) >= pods else 0.0

    def evicted(self, job: str) -> list[PodLife]:
        """The pods of `job` that were bound and went."""
        return [life for life in self.lives.values() if life.job == job and life.bound_at and life.gone_at]


def parties(plane: LocalControlPlane, namespace: str, victims: list[PodLife], victim_job: str) -> dict[str, str]:
    """Victim pod name → who evicted it, by the Events and the condition seen."""
    events = plane.events(namespace)
    by_scheduler = {
        event["involvedObject"]["name"]
        for event in events
        if event.get("reason") == "Preempted" and event["involvedObject"].get("kind") == "Pod"
    }
    loop_said = any(
        event.get("reason") == "Preempted"
        and event["involvedObject"].get("kind") == "TFJob"
        and event["involvedObject"].get("name") == victim_job
        and (event.get("source") or {}).get("component") == "tfjob-extender"
        for event in events
    )
    found = {}
    for life in victims:
        if life.name in by_scheduler or life.disruption == "PreemptionByScheduler":
            found[life.name] = BY_SCHEDULER
        elif life.disruption == "EvictionByEvictionAPI" or loop_said:
            found[life.name] = BY_LOOP
        else:
            found[life.name] = f"unknown ({life.disruption or 'no condition seen'})"
    return found


@dataclass(frozen=True, slots=True)
class SceneFigures:
    """What a preemption cost and how long the preemptor waited."""

    party: str
    bind_whole_s: float
    """Seconds from the preemptor's creation to its last pod bound (-1: it never bound whole)."""
    pods_evicted: int
    work_lost_pod_s: float
    """Pod-seconds the evicted pods had run (from their binding to their eviction)."""
    victim_gangs_whole: bool
    """Every pod the victim gang ran when the preemptor came went (none left running without its peers)."""
    evicted_by: tuple[str, ...]
    """The parties that evicted, each once."""

    def line(self) -> str:
        return (
            f"{self.party}: bound whole after {self.bind_whole_s:.1f} s, {self.pods_evicted} pods evicted, "
            f"{self.work_lost_pod_s:.1f} pod-s of work lost, victim gang evicted whole: {self.victim_gangs_whole}, "
            f"evicted by: {', '.join(self.evicted_by) or 'nobody'}"
        )


def figures(
    party: str, watch: PodWatch, who: dict[str, str], *, created_at: float, preemptor: tuple[str, int], victim: str
) -> SceneFigures:
    job, size = preemptor
    bound = watch.bound_whole(job, size)
    victims = watch.evicted(victim)
    originals = [life for life in watch.lives.values() if life.job == victim and 0 < life.bound_at < created_at]
    running = [life for life in originals if not life.gone_at]
    return SceneFigures(
        party=party,
        bind_whole_s=bound - created_at if bound else -1.0,
        pods_evicted=len(victims),
        work_lost_pod_s=sum(life.gone_at - (life.scheduled_at or life.bound_at) for life in victims),
        victim_gangs_whole=bool(victims) and not running,
        evicted_by=tuple(sorted(set(who.values()))),
    )
