"""End to end: a long-running checkpointing TFJob is suspended for a fresh gang, through training-operator.

Three kwok nodes of 4 CPU. Five jobs finish first, one of them six times later than the others, so the
loop has seen run times with a long tail; it writes each on its TFJob (`tfjob-extender.io/run-s`), and
the extender is restarted, so what it knows of them it has read back from the cluster. Then a
suspendable job starts, and a fresh gang arrives that
only fits without it. Once the runner has run longer than the short jobs did, the run times seen say it
will likely run on for longer than a fresh job runs in all. The loop suspends the runner
(`spec.runPolicy.suspend`): training-operator deletes its pods, the loop resumes it once they are gone,
and it waits, pending, while the fresh gang runs. The job is never failed.
"""

from __future__ import annotations

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import Scene, extender_run_with
from tests.e2e.scenarios import SUSPENDABLE, suspend_a_long_runner_for_a_fresh_gang, suspended_then_resumed_waiting
from tests.e2e.workloads import JOB, tfjob, wait_bound

pytestmark = pytest.mark.e2e


def test_a_long_runner_is_suspended_for_a_fresh_gang_and_resumed_to_wait_its_turn(
    plane: LocalControlPlane, scene: Scene
) -> None:
    def restart_extender() -> None:
        plane.stop_extender()
        plane.start_extender()

    with extender_run_with(
        plane,
        "--suspension-min-history",
        "5",
        "--suspension-newcomer-s",
        "0",
        "--restart-cost-s",
        "0",
        "--max-checkpoint-wait-s",
        "0",
    ):
        suspend_a_long_runner_for_a_fresh_gang(plane, scene, restart_extender)


def test_a_starving_gang_suspends_a_job_that_had_just_started_in_its_room(
    plane: LocalControlPlane, scene: Scene
) -> None:
    """With `--suspension-newcomer-s`: a 9-pod gang waits behind a job that ends at 30 s; meanwhile a
    smaller, suspendable job starts in the room left. When the first job ends the gang starves and still
    does not fit: the loop suspends the job that had just started (no attained run time, so it is not
    demoted), the gang starts, and the suspended job is resumed to wait, never failed."""
    scene.add_nodes(3)
    ns = scene.namespace
    with extender_run_with(plane, "--suspension-newcomer-s", "120"):
        plane.create_tfjob(ns, tfjob("blocker", scene=ns, ps=0, workers=4, run_for="30s"))
        wait_bound(plane, ns, f"{JOB}=blocker", 4)
        plane.create_tfjob(ns, tfjob("big", scene=ns, workers=8))
        newcomer = tfjob("newcomer", scene=ns, ps=0, workers=4)
        newcomer["metadata"]["annotations"][SUSPENDABLE] = "true"
        plane.create_tfjob(ns, newcomer)
        wait_bound(plane, ns, f"{JOB}=newcomer", 4)
        wait_bound(plane, ns, f"{JOB}=big", 9, timeout_s=120)

        annotations = suspended_then_resumed_waiting(plane, ns, "newcomer", 4)
        assert "tfjob-extender.io/suspended-at" in annotations, annotations
        assert "tfjob-extender.io/attained-s" not in annotations, "a newcomer is not demoted"
