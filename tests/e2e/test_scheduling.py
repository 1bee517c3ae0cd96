"""End to end on a real control plane: kube-scheduler calls the extender for real TFJobs.

Every test runs on its own kwok nodes (4 CPU, 16 GiB each) in its own namespace; training-operator
turns TFJobs into pods and PodGroups, kube-scheduler places the pods through the extender.
"""

from __future__ import annotations

import time

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import Scene
from tests.e2e.scenarios import wide_job_takes_the_fewest_nodes_with_its_ps_beside_its_workers
from tests.e2e.waits import OBSERVE_S, wait_until
from tests.e2e.workloads import (
    JOB,
    bind_times,
    bound,
    debug_gang,
    job_pods,
    never_bound,
    placement,
    pod,
    podgroup,
    scheduled_reason,
    tfjob,
    wait_bound,
    wait_for_pods,
)

pytestmark = pytest.mark.e2e


def test_a_job_that_fits_one_node_lands_on_one_node(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(3)
    plane.create_tfjob(scene.namespace, tfjob("small", scene=scene.namespace, ps=1, workers=4, cpu="500m"))
    pods = wait_bound(plane, scene.namespace, f"{JOB}=small", 5)
    assert len(set(placement(pods).values())) == 1, placement(pods)


def test_a_job_too_big_for_one_node_uses_the_fewest_nodes_with_the_ps_beside_its_workers(
    plane: LocalControlPlane, scene: Scene
) -> None:
    wide_job_takes_the_fewest_nodes_with_its_ps_beside_its_workers(plane, scene)


def test_a_gang_that_does_not_fit_binds_nothing_until_room_frees_then_binds_whole(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(3)
    # the filler outranks the big gang (less memory per worker: a higher KOD2 weight), so it is never preempted
    plane.create_tfjob(scene.namespace, tfjob("filler", scene=scene.namespace, ps=1, workers=5, memory="512Mi"))
    wait_bound(plane, scene.namespace, f"{JOB}=filler", 6)
    # 12 CPU in all, 6 taken: the 9-pod gang fits 6 of its pods, so none may bind
    plane.create_tfjob(scene.namespace, tfjob("big", scene=scene.namespace, ps=1, workers=8, memory="2Gi"))
    wait_for_pods(plane, scene.namespace, "big", 9)
    never_bound(plane, scene.namespace, f"{JOB}=big", OBSERVE_S)
    why = debug_gang(plane, scene.namespace, "big")["why"]
    assert why == f"gang {scene.namespace}/big needs 9 pods (9 × 1 CPU, 2 GiB); best plan fits 6", why
    freed_at = time.time()
    plane.delete_tfjob(scene.namespace, "filler")
    for item in job_pods(plane, scene.namespace, "filler"):
        plane.request(
            "DELETE", f"/api/v1/namespaces/{scene.namespace}/pods/{item['metadata']['name']}?gracePeriodSeconds=0"
        )
    pods = wait_bound(plane, scene.namespace, f"{JOB}=big", 9)
    times = bind_times(plane, scene.namespace, pods)
    assert len(times) == 9
    assert min(times.values()) >= int(freed_at), "a member was bound before capacity was freed"


def test_two_jobs_that_cannot_both_fit_never_split(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(3)
    # pods of 1.5 CPU: two per node, six in all; each job needs five
    for name in ("left", "right"):
        plane.create_tfjob(scene.namespace, tfjob(name, scene=scene.namespace, ps=1, workers=4, cpu="1500m"))

    def one_whole() -> dict[str, int] | None:
        counts = {name: len(bound(job_pods(plane, scene.namespace, name))) for name in ("left", "right")}
        return counts if 5 in counts.values() else None

    counts = wait_until("one of the two jobs bound whole", one_whole, 90, interval_s=0.3)
    assert sorted(counts.values()) == [0, 5], counts
    loser = min(counts, key=lambda name: counts[name])
    never_bound(plane, scene.namespace, f"{JOB}={loser}", OBSERVE_S)


def test_a_gang_group_in_the_koordinator_dialect_starts_all_or_nothing(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(3)
    ns = scene.namespace
    members = [f"{ns}/gg-a", f"{ns}/gg-b"]
    for name, size in (("gg-a", 2), ("gg-b", 3)):
        plane.create_podgroup(ns, podgroup(name, min_member=size, legacy=True, gang_group=members))
    label = "pod-group.scheduling.sigs.k8s.io"
    for index in range(2):
        plane.create_pod(ns, pod(f"a-{index}", scene=ns, labels={label: "gg-a"}))
    never_bound(plane, ns, label, OBSERVE_S)
    assert "waiting for members" in (debug_gang(plane, ns, "gg-a")["why"] or "")
    for index in range(3):
        plane.create_pod(ns, pod(f"b-{index}", scene=ns, labels={label: "gg-b"}))
    wait_bound(plane, ns, label, 5)


def test_a_pod_without_a_group_schedules_normally(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(1)
    plane.create_pod(scene.namespace, pod("lonely", scene=scene.namespace, labels={"app": "lonely"}))
    wait_bound(plane, scene.namespace, "app=lonely", 1)


def test_pods_wait_with_a_reason_while_the_extender_is_down_and_schedule_when_it_is_back(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(1)
    plane.stop_extender()
    try:
        plane.create_pod(scene.namespace, pod("patient", scene=scene.namespace, labels={"app": "patient"}))

        def unscheduled_reason() -> str:
            (item,) = plane.pods(scene.namespace, "app=patient")
            assert not item["spec"].get("nodeName"), "scheduled while the extender was down"
            return scheduled_reason(item)

        reason = wait_until("kube-scheduler's reason on the pending pod", unscheduled_reason, 60, interval_s=0.3)
        # kube-scheduler's own words, e.g. Post "http://127.0.0.1:PORT/filter": ... connection refused
        assert f"127.0.0.1:{plane.extender_port}/filter" in reason, reason
    finally:
        plane.start_extender()
    wait_bound(plane, scene.namespace, "app=patient", 1)
