"""Cluster utilisation over time, for the page's chart: a bounded series of samples taken off the verb path.

A sample is the share of the schedulable cluster's CPU and memory that bound pods request and that gang
reservations hold, read from the snapshot's dense capacity table (one vector sum over the nodes, so a
sample of a 5000-node cluster costs microseconds). A daemon thread samples every `interval_s` while the
app serves; a render also samples when the last sample is older than that, so the chart of a page being
watched never lags. At most `capacity` samples are kept, oldest dropped first.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from extender.policy.core.resources import CPU, MEMORY, total
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.rank.standing import free_capacity
from extender.policy.rank.weights import cluster_capacity

DEFAULT_INTERVAL_S = 5.0
"""Seconds between two samples."""
DEFAULT_CAPACITY = 360
"""Samples kept: half an hour at the default interval."""


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    cpu_bound: float
    """Share (0–1) of the schedulable CPU requested by bound pods."""
    cpu_reserved: float
    """Share of the schedulable CPU held by gang reservations not bound yet."""
    memory_bound: float


def sample_of(snapshot: ClusterSnapshot, now: float) -> Sample:
    allocatable = cluster_capacity(snapshot)
    reserved = total(snapshot.reserved_by_node.values())
    free = free_capacity(snapshot)
    cpu_bound, cpu_reserved = _shares(allocatable.get(CPU), free.get(CPU), reserved.get(CPU))
    memory_bound, _ = _shares(allocatable.get(MEMORY), free.get(MEMORY), reserved.get(MEMORY))
    return Sample(now, cpu_bound, cpu_reserved, memory_bound)


def _shares(whole: float, free: float, held: float) -> tuple[float, float]:
    """(bound, reserved): the shares (0–1) of one resource's schedulable total that bound pods and gang
    reservations hold."""
    if whole <= 0:
        return 0.0, 0.0
    used = max(0, whole - free - held)
    return min(1.0, used / whole), min(1.0, held / whole)


class UtilisationHistory:
    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, capacity: int = DEFAULT_CAPACITY) -> None:
        self.interval_s = interval_s
        self._samples: deque[Sample] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self, snapshot: ClusterSnapshot, now: float) -> None:
        """Add a sample unless the last one is younger than the interval."""
        with self._lock:
            if self._samples and now - self._samples[-1].at < self.interval_s:
                return
        taken = sample_of(snapshot, now)
        with self._lock:
            self._samples.append(taken)

    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)

    def start(self, snapshot: Callable[[], ClusterSnapshot], clock: Callable[[], float]) -> None:
        def run() -> None:
            while not self._stop.wait(self.interval_s):
                self.sample(snapshot(), clock())

        self._stop.clear()
        self._thread = threading.Thread(target=run, name="utilisation-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
