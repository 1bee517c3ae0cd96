"""What a running job would lose if it were taken now (pure): the training since its last checkpoint.

A job restarted from its last checkpoint loses the training since then, on every pod it holds. What is
known of that, best first:
1. a time its pods report (`PodView.last_checkpoint`, the latest within the current run): the loss is the
   time since then;
2. an interval its owner declares (`JobView.checkpoint_interval_s`): the time since the last multiple of
   it in the current run (checkpoints counted from the run's start);
3. neither: the same with `PolicySettings.assumed_checkpoint_interval_s`, and the answer says it is
   assumed.
A job cannot buy protection by claiming more: the loss is never more than the time since the reported
checkpoint, the declared interval, or how long its current run has gone (its first bound pod's binding),
whichever is least. The amount is also given in resource-seconds: the loss times the GPUs its bound pods
hold, or their CPU cores when they hold no GPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from extender.policy.core.resources import CPU, GPU, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView, PodView

Basis = Literal["reported", "declared", "assumed", "not running"]
Unit = Literal["GPU", "CPU"]


def work_size(requests: Iterable[Resources]) -> tuple[float, Unit]:
    """What a second of a job's training is worth, and in what: the GPUs its pods request, or their CPU
    cores when they request no GPU (how lost work is counted here and in the simulator)."""
    held = list(requests)
    gpus = sum(request.get(GPU) for request in held)
    if gpus:
        return float(gpus), "GPU"
    return sum(request.get(CPU) for request in held) / 1000, "CPU"


@dataclass(frozen=True, slots=True)
class AtRisk:
    """The training a job would lose if taken now."""

    seconds: float
    """Seconds of training thrown away."""
    resource_seconds: float
    """`seconds` × the GPUs its bound pods hold (CPU cores when they hold none)."""
    unit: Unit
    basis: Basis
    interval_s: float | None
    """The interval the loss was counted on (declared or assumed); None when a reported time was used."""
    since_checkpoint_s: float | None = None
    """Seconds since the checkpoint its pods reported, when they reported one in this run."""


NOT_RUNNING = AtRisk(0.0, 0.0, "CPU", "not running", None)


def at_risk(job: JobView | None, pods: Sequence[PodView], now: float, settings: PolicySettings) -> AtRisk:
    """What the job of `pods` (its TFJob `job`, if known) would lose if taken at `now`."""
    bound = [pod for pod in pods if pod.holds_node]
    started = [pod.scheduled_at for pod in bound if pod.scheduled_at]
    if not bound or not started:
        return NOT_RUNNING
    ran = max(0.0, now - min(started))
    size, unit = work_size(pod.requests for pod in bound)
    declared = job.checkpoint_interval_s if job is not None else None
    interval = declared or settings.assumed_checkpoint_interval_s
    reported = max((pod.last_checkpoint for pod in pods if min(started) <= pod.last_checkpoint <= now), default=0.0)
    if reported:
        since = now - reported
        lost = min(since, ran, declared) if declared else min(since, ran)
        return AtRisk(lost, lost * size, unit, "reported", declared, since)
    lost = ran % interval if interval > 0 else ran
    basis: Basis = "declared" if declared else "assumed"
    return AtRisk(lost, lost * size, unit, basis, interval)
