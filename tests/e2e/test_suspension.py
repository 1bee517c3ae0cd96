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

from typing import Any

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import Scene, extender_run_with
from tests.e2e.waits import OBSERVE_S, stays, wait_until
from tests.e2e.workloads import JOB, bound, job_pods, not_failed, tfjob, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e

SUSPENDABLE = "tfjob-extender.io/suspendable"
RUN_TIME = "tfjob-extender.io/run-s"


def succeeded(plane: LocalControlPlane, namespace: str, name: str) -> bool:
    conditions = (tfjob_object(plane, namespace, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


def suspended_then_resumed_waiting(plane: LocalControlPlane, namespace: str, name: str, pods: int) -> dict[str, str]:
    """Wait until the loop has suspended and resumed the TFJob `name` and its `pods` pods are back; check
    they stay pending while the gang it was suspended for runs and the job is never Failed; return its
    annotations."""

    def resumed() -> dict[str, Any] | None:
        job = tfjob_object(plane, namespace, name)
        annotations = job["metadata"].get("annotations") or {}
        suspended = (job["spec"].get("runPolicy") or {}).get("suspend")
        return job if "tfjob-extender.io/resumed-at" in annotations and not suspended else None

    job = wait_until(f"{name} suspended and resumed", resumed, 60, interval_s=0.5)
    wait_until(f"{name}'s pods recreated", lambda: len(job_pods(plane, namespace, name)) == pods, 60)
    stays(
        f"the resumed {name} waits while the gang it was suspended for runs",
        lambda: not bound(job_pods(plane, namespace, name)),
        OBSERVE_S,
    )
    final = tfjob_object(plane, namespace, name)
    assert not_failed(final), final.get("status")
    annotations: dict[str, str] = job["metadata"]["annotations"]
    return annotations


def test_a_long_runner_is_suspended_for_a_fresh_gang_and_resumed_to_wait_its_turn(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(3)
    ns = scene.namespace
    with extender_run_with(plane, "--suspension-min-history", "5", "--suspension-newcomer-s", "0"):
        finished = [(f"short-{i}", "5s") for i in range(4)] + [("medium", "30s")]
        for name, run_for in finished:
            plane.create_tfjob(ns, tfjob(name, scene=ns, ps=0, workers=1, run_for=run_for))
        wait_until("the first jobs succeeded", lambda: all(succeeded(plane, ns, n) for n, _ in finished), 90)

        def recorded() -> dict[str, float] | None:
            annotations = {n: tfjob_object(plane, ns, n)["metadata"].get("annotations") or {} for n, _ in finished}
            times = {n: float(a[RUN_TIME]) for n, a in annotations.items() if RUN_TIME in a}
            return times if len(times) == len(finished) else None

        times = wait_until("the run times recorded on the TFJobs", recorded, 30)
        assert times["medium"] > max(times[f"short-{i}"] for i in range(4)), times
        plane.stop_extender()
        plane.start_extender()
        runner = tfjob("runner", scene=ns, workers=3)
        runner["metadata"]["annotations"][SUSPENDABLE] = "true"
        plane.create_tfjob(ns, runner)
        wait_bound(plane, ns, f"{JOB}=runner", 4)
        # 1 PS + 8 workers: 9 of the 12 CPU, and the runner holds 4
        plane.create_tfjob(ns, tfjob("fresh", scene=ns, workers=8))
        wait_bound(plane, ns, f"{JOB}=fresh", 9, timeout_s=120)

        annotations = suspended_then_resumed_waiting(plane, ns, "runner", 4)
        assert float(annotations["tfjob-extender.io/attained-s"]) > 0, annotations
        assert float(annotations["tfjob-extender.io/suspended-at"]) <= float(
            annotations["tfjob-extender.io/resumed-at"]
        )


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
