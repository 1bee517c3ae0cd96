"""The one seam for side effects: scale a TFJob's workers, evict a pod, write an Event.

The service uses the Kubernetes implementation (`extender.k8s.actuator`); tests and the simulator use
`RecordingActuator`, which only remembers what it was asked to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from extender.policy.model import PodView


class Actuator(Protocol):
    def scale_workers(self, job: str, replicas: int, reason: str) -> None:
        """Set `spec.tfReplicaSpecs.Worker.replicas` of the TFJob `namespace/name`."""

    def evict(self, pod: PodView, reason: str) -> None:
        """Mark the pod as a disruption target with `reason`, then delete it (graceful)."""

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        """Write an Event about the object `kind` `namespace/name`."""


@dataclass
class RecordingActuator:
    """Remembers every action, in order."""

    scaled: list[tuple[str, int, str]] = field(default_factory=list)
    evicted: list[tuple[str, str]] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def scale_workers(self, job: str, replicas: int, reason: str) -> None:
        self.scaled.append((job, replicas, reason))

    def evict(self, pod: PodView, reason: str) -> None:
        self.evicted.append((pod.key, reason))

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        self.events.append((kind, key, reason, message))
