"""What a running job would lose if taken now: reported checkpoints, declared or assumed intervals, liars."""

from __future__ import annotations

from dataclasses import replace

import pytest

from extender.api.at_risk_view import at_risk_phrase
from extender.policy.core.resources import Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView, PodView
from extender.policy.preemption.lost_work import at_risk
from extender.state.convert import pod_view
from tests.builders import make_pod

START = 1_800_000_000.0
NOW = START + 2500.0


def pods(*, last_checkpoint: float = 0.0, gpus: int = 0) -> list[PodView]:
    """A PS and two workers of 2 CPU bound at `START` (workers with `gpus` GPUs each)."""
    made = []
    for name, gpu in (("ps-0", 0), ("worker-0", gpus), ("worker-1", gpus)):
        amounts = {"cpu": 2000, **({"nvidia.com/gpu": gpu} if gpu else {})}
        made.append(
            PodView(
                "default",
                f"job-{name}",
                name,
                Resources(amounts),
                node_name="node-0",
                phase="Running",
                job="default/job",
                scheduled_at=START,
                last_checkpoint=last_checkpoint,
            )
        )
    return made


def job(interval: float | None = None) -> JobView:
    return JobView("default", "job", checkpoint_interval_s=interval)


SETTINGS = PolicySettings()


def test_a_reported_checkpoint_is_what_counts() -> None:
    risk = at_risk(job(), pods(last_checkpoint=NOW - 300), NOW, SETTINGS)
    assert (risk.basis, risk.seconds, risk.since_checkpoint_s) == ("reported", 300.0, 300.0)
    assert (risk.unit, risk.resource_seconds) == ("CPU", 300.0 * 6)


def test_a_declared_interval_counts_from_the_run_start() -> None:
    risk = at_risk(job(1000.0), pods(), NOW, SETTINGS)
    assert (risk.basis, risk.seconds, risk.interval_s) == ("declared", 500.0, 1000.0)


def test_without_either_the_assumption_is_stated() -> None:
    risk = at_risk(job(), pods(), NOW, SETTINGS)
    assert (risk.basis, risk.seconds) == ("assumed", 2500.0 % SETTINGS.assumed_checkpoint_interval_s)
    assert "it declares no checkpoints: every 30 min is assumed" in at_risk_phrase(risk)


def test_a_job_cannot_buy_protection_by_lying() -> None:
    """It claims a checkpoint from long before its run began and an interval of a day: it loses at most
    its current run, and a reported time before the run is not believed at all."""
    ancient = at_risk(job(86_400.0), pods(last_checkpoint=START - 86_000), NOW, SETTINGS)
    assert ancient.seconds <= NOW - START
    assert ancient.basis == "declared"
    stale = at_risk(job(600.0), pods(last_checkpoint=NOW - 2000), NOW, SETTINGS)
    assert stale.seconds == 600.0
    future = at_risk(job(), pods(last_checkpoint=NOW + 5000), NOW, SETTINGS)
    assert future.basis == "assumed"


def test_gpu_jobs_are_counted_in_gpu_seconds_and_idle_ones_lose_nothing() -> None:
    risk = at_risk(job(), pods(last_checkpoint=NOW - 60, gpus=2), NOW, SETTINGS)
    assert (risk.unit, risk.resource_seconds) == ("GPU", 60.0 * 4)
    waiting = [replace(pod, node_name="", phase="Pending", scheduled_at=0.0) for pod in pods()]
    assert at_risk(job(), waiting, NOW, SETTINGS).basis == "not running"


@pytest.mark.parametrize(
    ("value", "read"),
    [("2027-01-01T00:00:00Z", 1798761600.0), ("1798761600.5", 1798761600.5), ("yesterday", 0.0)],
)
def test_the_pod_annotation_is_read_leniently(value: str, read: float) -> None:
    pod = make_pod("p")
    pod["metadata"].setdefault("annotations", {})["tfjob-extender.io/last-checkpoint"] = value
    assert pod_view(pod).last_checkpoint == read
