"""End to end: shadow mode. The shared extender runs with `--with-scaler --dry-run`: an elastic job with
room to grow is planned to grow, the plan is shown on /debug/scaler, /debug/jobs and the page, and the
job does not grow. The loops in a process of their own (`loops --dry-run --observe-debug`) report ready as
leader of their lease, count the preemption they would carry out on /metrics and show it on their own
/debug/jobs and page, and evict nothing."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import MIN_RUN_S, Scene, extender_run_with
from tests.e2e.waits import stays, wait_until
from tests.e2e.workloads import JOB, bound, job_pods, low_priority_batch_filling, tfjob, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e
SHADOW_ARGS = (
    "--with-scaler",
    "--dry-run",
    "--scaler-interval-s",
    "1",
    "--lease-namespace",
    "default",
    "--lease-name",
    "e2e-shadow",
    "--lease-duration-s",
    "4",
)
UNCHANGED_FOR_S = 10.0
"""How long the job is watched not growing once its growth was planned (the scaler ticks every second)."""


@pytest.fixture(scope="module", autouse=True)
def shadow_extender(plane: LocalControlPlane) -> Iterator[None]:
    with extender_run_with(plane, *SHADOW_ARGS):
        yield


def read(plane: LocalControlPlane, path: str, port: int | None = None) -> bytes:
    url = f"http://127.0.0.1:{port or plane.observe_port}{path}"
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
        return body


def debug(plane: LocalControlPlane, path: str, port: int | None = None) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(read(plane, path, port))
    return result


def worker_replicas(plane: LocalControlPlane, namespace: str, name: str) -> int:
    return int(tfjob_object(plane, namespace, name)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"])


def test_in_shadow_mode_a_job_that_would_grow_does_not_and_the_plan_is_shown(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(2)
    ns = scene.namespace
    plane.create_tfjob(ns, tfjob("elastic", scene=ns, workers=2, min_workers=1, max_workers=6, dynamic=True))
    wait_bound(plane, ns, f"{JOB}=elastic", 3)

    def planned() -> list[dict[str, Any]]:
        return [
            action
            for action in debug(plane, "/debug/scaler")["actions"]
            if action["job"] == f"{ns}/elastic" and action["kind"] == "scale-out"
        ]

    (first, *_) = wait_until("a planned scale-out", planned, 30)
    assert first["outcome"].startswith("dry-run")
    assert (first["replicasFrom"], first["replicasTo"]) == (2, 4)
    jobs = debug(plane, "/debug/jobs")
    assert jobs["shadowMode"] is True
    shown = [p for p in jobs["shadowPlans"] if p.get("job") == f"{ns}/elastic"]
    assert shown and shown[0]["loop"] == "scaler" and shown[0]["outcome"].startswith("dry-run")
    page = read(plane, "/ui").decode()
    assert "shadow mode" in page and f"{ns}/elastic" in page and "dry-run" in page

    def unchanged() -> bool:
        assert worker_replicas(plane, ns, "elastic") == 2, "shadow mode never resizes"
        assert len(job_pods(plane, ns, "elastic")) == 3
        return True

    stays("the job at its size", unchanged, UNCHANGED_FOR_S, interval_s=1)
    assert not [e for e in plane.events(ns) if e["reason"] == "ScaledOut"], "nor reports an action"


LOOPS_ARGS = (
    "--dry-run",
    "--min-run-before-preemption-s",
    str(MIN_RUN_S),
    "--observe-debug",
    "--lease-namespace",
    "default",
    "--lease-name",
    "e2e-loops-shadow",
    "--lease-duration-s",
    "4",
)


def test_the_loops_in_their_own_process_in_shadow_mode_are_observable(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(3)
    ns = scene.namespace
    low_priority_batch_filling(plane, ns)
    port = plane.start_scaler("loops-shadow", LOOPS_ARGS, command_name="loops")
    try:
        ready = wait_until("the loops process ready", lambda: debug(plane, "/readyz", port), 30)
        assert ready["ready"] is True and ready["role"] == "leader", ready
        plane.create_tfjob(ns, tfjob("urgent", scene=ns, workers=3, priority_class=f"{ns}-high"))

        def shadow_preemption() -> list[dict[str, Any]]:
            jobs = debug(plane, "/debug/jobs", port)
            assert jobs["shadowMode"] is True
            return [p for p in jobs["shadowPlans"] if p["loop"] == "preemption" and p["gang"] == f"{ns}/urgent"]

        (plan, *_) = wait_until("the preemption planned on the loops' /debug/jobs", shadow_preemption, 60)
        assert plan["outcome"].startswith("dry-run") and f"{ns}/batch-ps-0" in plan["victims"]
        metrics = read(plane, "/metrics", port).decode()
        assert 'tfjob_extender_preemption_preemptions_total{outcome="dry-run"}' in metrics
        assert 'tfjob_extender_preemption_ticks_total{role="leader"}' in metrics
        assert "tfjob_extender_preemption_leader 1.0" in metrics and "tfjob_extender_scaler_leader" in metrics
        assert debug(plane, "/debug/scaler", port)["leading"] is True
        page = read(plane, "/ui", port).decode()
        assert "shadow mode" in page and f"{ns}/urgent" in page
        assert len(bound(job_pods(plane, ns, "batch"))) == 12, "nothing is evicted in shadow mode"
        assert not [e for e in plane.events(ns) if e["reason"] == "Preempted"]
    finally:
        plane.stop_process("loops-shadow")
