"""End to end: `tfjob-extender explain` against the live extender, and the reason Events on waiting pods.

A running job and a job too large for its scene (10 CPU on two 4-CPU nodes, 3 of them taken): explain
says the first has started (exit 0) and words what the second waits for (exit 1); the preemption loop
writes the stable reason on the waiting pods as Events; the start-time forecast says the second can never
start, being larger than the whole cluster; for the running job, what it would lose if taken now (nothing
declared, so on the assumed interval).
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
    plane.create_tfjob(ns, tfjob("toobig", scene=ns, workers=9))
    wait_for_pods(plane, ns, "toobig", 10)

    started = wait_until("explain of the running job", lambda: _settled(explain(plane, f"{ns}/running"), 0), 30)
    assert started.stdout.splitlines()[0] == f"{ns}/running (TFJob): STARTED — {ns}/running has started: 3/3 pods bound"
    at_risk = "  if taken now it would lose about "
    assert any(line.startswith(at_risk) and "every 30 min is assumed" in line for line in started.stdout.splitlines())

    def forecast_given() -> subprocess.CompletedProcess[str] | None:
        answer = _settled(explain(plane, f"{ns}/toobig"), 1)
        return answer if answer is not None and "start time unknown" in answer.stdout else None

    waiting = wait_until("explain of the waiting job, with its start forecast", forecast_given, 60)
    lines = waiting.stdout.splitlines()
    assert lines[0] == f"{ns}/toobig (TFJob): WAITING"
    assert any(line.startswith("  rank ") and "waiting gangs" in line for line in lines), waiting.stdout
    assert f"  waits for: GangWaitingForRoom — gang {ns}/toobig needs 10 pods (10 × 1 CPU, 1 GiB)" in waiting.stdout
    assert "  best plan found: places 5 of the 10 pods it needs" in waiting.stdout
    assert "  would start with: room for 5 more pod(s) of 1 CPU, 1 GiB" in waiting.stdout
    never = "  start time unknown: it needs more than the whole cluster has, so it can never start: 10 CPU of 8 CPU"
    assert never in lines, waiting.stdout

    by_pod = explain(plane, f"{ns}/toobig-worker-3")
    assert by_pod.returncode == 1 and "(Pod): WAITING" in by_pod.stdout
    unknown = explain(plane, f"{ns}/no-such-job")
    assert unknown.returncode == 2 and "unknown" in unknown.stdout

    def reason_events() -> list[dict[str, Any]]:
        return [
            event
            for event in plane.events(ns)
            if event["involvedObject"]["kind"] == "Pod"
            and str(event["involvedObject"]["name"]).startswith("toobig-")
            and event["reason"] == "GangWaitingForRoom"
        ]

    def every_member_told() -> list[dict[str, Any]] | None:
        found = reason_events()
        return found if len(found) >= 10 else None

    events = wait_until("the waiting pods' reason Events", every_member_told, 60)
    assert {event["involvedObject"]["name"] for event in events} >= {"toobig-ps-0", "toobig-worker-8"}
    assert all("best plan fits" in str(event["message"]) for event in events)


def _settled(result: subprocess.CompletedProcess[str], code: int) -> subprocess.CompletedProcess[str] | None:
    return result if result.returncode == code else None
