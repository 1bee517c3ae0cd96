"""End to end: the extender and the API server fail under it, and no gang is left half placed.

- The extender is killed (SIGKILL) while a 16-pod gang is half bound, and a higher-PriorityClass gang
  takes the room while it is down: once restarted, the half-placed gang must not stay partly bound — it is
  completed or released whole within its plan timeout.
- The extender is killed just after it reserved a TFJob's gang plan (and wrote it on the PodGroup): the
  restarted extender holds the same plan again and the gang binds whole, no pod lost.
- kube-apiserver is killed and started again while pods are being created: the extender stops answering
  from its (now stale) model, relists, and every gang created around the outage binds whole.
Pods are created directly (no training-operator), so what is bound, pending or evicted is exactly what
the test made.
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import Scene
from tests.e2e.waits import stays, wait_until
from tests.e2e.workloads import JOB, bound, job_pods, pod, podgroup, tfjob, wait_bound

pytestmark = pytest.mark.e2e
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PLAN_TIMEOUT_S = 10
STAYS_SETTLED_S = 5.0
"""How long the settled gang g is watched staying whole or released: ten polls over kube-scheduler's first
retries of any pending member (its backoff starts at 1 s and doubles), in which a lone member binding shows."""


def gang(scene: Scene, name: str, size: int, *, cpu: str, priority_class: str = "") -> list[dict[str, Any]]:
    group = podgroup(name, min_member=size)
    group["spec"]["scheduleTimeoutSeconds"] = PLAN_TIMEOUT_S
    scene.plane.create_podgroup(scene.namespace, group)
    members = []
    for index in range(size):
        member = pod(f"{name}-{index}", scene=scene.namespace, cpu=cpu, labels={GROUP_LABEL: name})
        if priority_class:
            member["spec"]["priorityClassName"] = priority_class
        members.append(member)
    return members


def gang_pods(plane: LocalControlPlane, namespace: str, name: str) -> list[dict[str, Any]]:
    return [p for p in plane.pods(namespace, f"{GROUP_LABEL}={name}") if not p["metadata"].get("deletionTimestamp")]


def test_a_gang_half_bound_when_the_extender_dies_is_completed_or_released_whole(
    plane: LocalControlPlane, scene: Scene
) -> None:
    nodes = scene.add_nodes(4, cpu="4")
    ns = scene.namespace
    # half of gang g is bound already (as if the extender died mid-way through steering it)
    members = gang(scene, "g", 16, cpu="1")
    for index, member in enumerate(members[:8]):
        member["spec"]["nodeName"] = nodes[index // 4]
    plane.kill("extender")
    try:
        for member in members:
            plane.create_pod(ns, member)
        plane.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": ns}, "value": 1000},
        )
        # while the extender is down, a higher-PriorityClass gang arrives that needs the room g still lacks
        for member in gang(scene, "urgent", 8, cpu="1", priority_class=ns):
            plane.create_pod(ns, member)
    finally:
        plane.start_extender()

    def settled() -> bool:
        placed = len(bound(gang_pods(plane, ns, "g")))
        return placed in (0, 16) and len(bound(gang_pods(plane, ns, "urgent"))) == 8

    wait_until("g whole or released, urgent bound", settled, 6 * PLAN_TIMEOUT_S)
    stays(
        "g is never left partly bound",
        lambda: len(bound(gang_pods(plane, ns, "g"))) in (0, 16),
        STAYS_SETTLED_S,
        interval_s=0.5,
    )


def test_a_restarted_api_server_is_followed_and_gangs_around_the_outage_bind_whole(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(4, cpu="8")
    ns = scene.namespace
    for member in gang(scene, "before", 8, cpu="1"):
        plane.create_pod(ns, member)
    plane.kill("kube-apiserver")
    try:
        wait_until("the extender to notice its watches broke", lambda: not ready(plane), 20)
    finally:
        plane.restart("kube-apiserver")
    wait_until("kube-apiserver back", lambda: plane.get("/api/v1/namespaces/default"), 60)
    wait_until("the extender ready again", lambda: ready(plane), 20)
    for member in gang(scene, "after", 8, cpu="1"):
        plane.create_pod(ns, member)
    for name in ("before", "after"):

        def whole(name: str = name) -> bool:
            return len(bound(gang_pods(plane, ns, name))) == 8

        wait_until(f"gang {name} bound whole", whole, 90)


def ready(plane: LocalControlPlane) -> bool:
    return plane.http_ok(f"http://127.0.0.1:{plane.extender_port}/readyz")


def test_a_gang_plan_survives_an_extender_killed_while_its_gang_binds(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(4, cpu="4")
    ns = scene.namespace
    plane.create_tfjob(ns, tfjob("big", scene=ns, workers=15))
    path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups/big"

    def planned() -> bool:
        return "tfjob-extender.io/plan" in (plane.get(path)["metadata"].get("annotations") or {})

    wait_until("big's plan written on its PodGroup", planned, 60, interval_s=0.05)
    plane.kill("extender")
    partly = len(bound(job_pods(plane, ns, "big")))
    plane.start_extender()
    pods = wait_bound(plane, ns, f"{JOB}=big", 16)
    assert len(pods) == 16, f"no pod lost ({partly} bound when the extender died)"
    assert not [p for p in pods if p["metadata"].get("deletionTimestamp")]
