"""End to end: `tfjob-extender explain` against the live extender, and the reason Events on waiting pods.

Two 4-CPU nodes, a running job of 3 CPU, a job of 7 that waits for room (5 CPU are free) and one of 12,
larger than the whole cluster: explain says the first has started (exit 0) and words what each of the others
waits for (exit 1): room, with the best plan found, and a cluster too small whatever runs; the preemption
loop writes the stable reasons on the waiting pods as Events; the start-time forecast says the largest can
never start; for the running job, what it would lose if taken now (nothing declared, so on the assumed
interval).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from extender.devcluster import LocalControlPlane, wait_until
from tests.e2e.conftest import Scene
from tests.e2e.workloads import JOB, tfjob, wait_bound, wait_for_pods

pytestmark = pytest.mark.e2e


def explain(plane: LocalControlPlane, target: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "extender", "explain", target, "--url", plane.observe_url]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def test_explain_says_a_running_job_started_and_what_a_waiting_job_waits_for(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(2)
    ns = scene.namespace
    plane.create_tfjob(ns, tfjob("running", scene=ns, workers=2))
    wait_bound(plane, ns, f"{JOB}=running", 3)
    plane.create_tfjob(ns, tfjob("wide", scene=ns, workers=6))
    plane.create_tfjob(ns, tfjob("toobig", scene=ns, workers=11))
    wait_for_pods(plane, ns, "wide", 7)
    wait_for_pods(plane, ns, "toobig", 12)

    started = wait_until("explain of the running job", lambda: _settled(explain(plane, f"{ns}/running"), 0), 30)
    assert started.stdout.splitlines()[0] == f"{ns}/running (TFJob): STARTED — {ns}/running has started: 3/3 pods bound"
    at_risk = "  if taken now it would lose about "
    assert any(line.startswith(at_risk) and "every 30 min is assumed" in line for line in started.stdout.splitlines())

    def waiting_with(name: str, words: str) -> subprocess.CompletedProcess[str] | None:
        answer = _settled(explain(plane, f"{ns}/{name}"), 1)
        return answer if answer is not None and words in answer.stdout else None

    waiting = wait_until("explain of the job waiting for room", lambda: waiting_with("wide", "best plan found"), 60)
    lines = waiting.stdout.splitlines()
    assert lines[0] == f"{ns}/wide (TFJob): WAITING"
    assert any(line.startswith("  rank ") and "waiting gangs" in line for line in lines), waiting.stdout
    assert f"  waits for: GangWaitingForRoom — gang {ns}/wide needs 7 pods (7 × 1 CPU, 1 GiB)" in waiting.stdout
    assert "  best plan found: places 5 of the 7 pods it needs" in waiting.stdout
    assert "  would start with: room for 2 more pod(s) of 1 CPU, 1 GiB" in waiting.stdout

    never = wait_until("explain of the job larger than the cluster", lambda: waiting_with("toobig", "never start:"), 60)
    too_small = (
        f"  waits for: GangBiggerThanCluster — gang {ns}/toobig: it can never start on this cluster: its minimum "
        "asks more than the whole cluster has (12 CPU of 8 CPU on 2 schedulable nodes)"
    )
    assert too_small in never.stdout.splitlines(), never.stdout
    assert "  would start with: a smaller job (fewer workers, smaller requests) or bigger nodes joining" in never.stdout
    forecast = "  start time unknown: it needs more than the whole cluster has, so it can never start: 12 CPU of 8 CPU"
    assert forecast in never.stdout.splitlines(), never.stdout

    by_pod = explain(plane, f"{ns}/toobig-worker-3")
    assert by_pod.returncode == 1 and "(Pod): WAITING" in by_pod.stdout
    unknown = explain(plane, f"{ns}/no-such-job")
    assert unknown.returncode == 2 and "unknown" in unknown.stdout

    def reason_events(job: str, reason: str) -> list[dict[str, Any]]:
        return [
            event
            for event in plane.events(ns)
            if event["involvedObject"]["kind"] == "Pod"
            and str(event["involvedObject"]["name"]).startswith(f"{job}-")
            and event["reason"] == reason
        ]

    def every_member_told(job: str, reason: str, members: int) -> list[dict[str, Any]] | None:
        found = reason_events(job, reason)
        return found if len({event["involvedObject"]["name"] for event in found}) >= members else None

    events = wait_until(
        "the pods waiting for room told", lambda: every_member_told("wide", "GangWaitingForRoom", 7), 60
    )
    assert {event["involvedObject"]["name"] for event in events} >= {"wide-ps-0", "wide-worker-5"}
    assert all("best plan fits" in str(event["message"]) for event in events)
    told = wait_until(
        "the too large job's pods told", lambda: every_member_told("toobig", "GangBiggerThanCluster", 12), 60
    )
    assert all("can never start on this cluster" in str(event["message"]) for event in told)


def _settled(result: subprocess.CompletedProcess[str], code: int) -> subprocess.CompletedProcess[str] | None:
    return result if result.returncode == code else None
