"""A TFJob's state as `/debug/jobs`, the page and the run clock read it."""

from __future__ import annotations

from extender.policy.core.settings import PolicySettings
from extender.policy.rank.jobstates import JobState, job_state
from tests.builders import make_sized_tfjob, snapshot

NOW = 1_800_000_000.0


def ended(condition: str) -> dict[str, object]:
    job = make_sized_tfjob("done", workers=2)
    job["status"] = {"conditions": [{"type": condition, "status": "True"}]}
    return job


def test_a_finished_tfjob_whose_pods_are_gone_is_completed_not_waiting() -> None:
    for condition, word in (("Succeeded", "succeeded"), ("Failed", "failed")):
        status = job_state(snapshot(ended(condition)), "default/done", NOW, PolicySettings())
        assert status.state is JobState.COMPLETED
        assert status.reason == f"the TFJob {word}; no pod of it holds a node"


def test_a_tfjob_without_pods_and_without_an_end_waits() -> None:
    status = job_state(snapshot(make_sized_tfjob("fresh", workers=2)), "default/fresh", NOW, PolicySettings())
    assert (status.state, status.reason) == (JobState.WAITING, "no pods created yet")
