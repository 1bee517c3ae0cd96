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
    size: float = 0.0
    """What a second of its training is worth (`work_size`): GPUs, else CPU cores."""
    next_checkpoint_s: float | None = None
    """Seconds until its next checkpoint is due: its last reported checkpoint plus its declared interval
    (None when either is missing: a phase counted from the run's start is a guess, never waited on)."""


NOT_RUNNING = AtRisk(0.0, 0.0, "CPU", "not running", None)


def at_risk(job: JobView | None, pods: Sequence[PodView], now: float, settings: PolicySettings) -> AtRisk:
    """What the job of `pods` (its TFJob `job`, if known) would lose if taken at `now`."""
    bound = [pod for pod in pods if pod.holds_node]
    started = min((pod.scheduled_at for pod in bound if pod.scheduled_at), default=0.0)
    if not started:
        return NOT_RUNNING
    reported = max((pod.last_checkpoint for pod in pods if started <= pod.last_checkpoint <= now), default=0.0)
    return at_risk_of(job, started, reported, work_size(pod.requests for pod in bound), now, settings)


def at_risk_of(
    job: JobView | None,
    started: float,
    reported: float,
    size: tuple[float, Unit],
    now: float,
    settings: PolicySettings,
) -> AtRisk:
    """What a job would lose if taken at `now`, from its current run's start, the latest checkpoint its
    pods reported in that run (0: none) and its `work_size`."""
    if not started:
        return NOT_RUNNING
    ran = max(0.0, now - started)
    amount, unit = size
    declared = job.checkpoint_interval_s if job is not None else None
    interval = declared or settings.assumed_checkpoint_interval_s
    if reported and started <= reported <= now:
        since = now - reported
        lost = min(since, ran, declared) if declared else min(since, ran)
        due = max(0.0, declared - since) if declared else None
        return AtRisk(lost, lost * amount, unit, "reported", declared, since, amount, due)
    lost = ran % interval if interval > 0 else ran
    basis: Basis = "declared" if declared else "assumed"
    return AtRisk(lost, lost * amount, unit, basis, interval, None, amount)


def tells_nothing(risk: AtRisk) -> bool:
    """Its owner neither declared an interval nor its pods reported a checkpoint: what it would lose is
    an assumption, and the fixed minimum run (`run_protection`) protects it instead."""
    return risk.basis == "assumed"
