"""End to end: job-level preemption on a real control plane with training-operator.

Three kwok nodes of 4 CPU and 16 GiB; the cluster is filled first, then a higher-ranked TFJob arrives.
"""

from __future__ import annotations

import json

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import MIN_RUN_S, Scene
from tests.e2e.scenarios import (
    fill_with_a_low_priority_batch,
    placed,
    preempt_the_batch_whole_for_a_higher_priority_gang,
)
from tests.e2e.workloads import JOB, job_pods, tfjob, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e


def test_an_elastic_light_job_is_scaled_in_toward_its_minimum_for_a_heavier_one(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(3)
    ns = scene.namespace
    # light: 1 PS + 11 workers of 1 CPU / 4 GiB fill all 12 CPU and 48 GiB; it may shrink to 3 workers
    plane.create_tfjob(ns, tfjob("light", scene=ns, workers=11, memory="4Gi", min_workers=3, dynamic=True))
    wait_bound(plane, ns, f"{JOB}=light", 12)
    # heavy: 1 PS + 3 workers of 1 CPU / 1 GiB: far less memory per worker, so a higher KOD2 weight
    plane.create_tfjob(ns, tfjob("heavy", scene=ns, workers=3, memory="1Gi"))
    wait_bound(plane, ns, f"{JOB}=heavy", 4, timeout_s=120)
    light = tfjob_object(plane, ns, "light")
    replicas = light["spec"]["tfReplicaSpecs"]["Worker"]["replicas"]
    assert 3 <= replicas < 11, f"scaled in toward its minimum, not below: {replicas}"
    remaining = placed(job_pods(plane, ns, "light"))
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in remaining)
    assert roles.count("ps") == 1, "the PS is never touched"
    indices = sorted(
        int(p["metadata"]["labels"]["training.kubeflow.org/replica-index"])
        for p in remaining
        if p["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "worker"
    )
    assert indices == list(range(replicas)), "only the highest-index workers went"
    failed = [c for c in (light.get("status") or {}).get("conditions") or [] if c["type"] == "Failed"]
    assert not failed or failed[-1]["status"] != "True", "the light job keeps training"


def test_a_low_priority_gang_is_evicted_whole_for_a_high_priority_gang(plane: LocalControlPlane, scene: Scene) -> None:
    evict_for_a_higher_priority_class(plane, scene)


def test_the_loops_in_their_own_process_preempt_and_the_extender_holds_their_plan(
    plane: LocalControlPlane, scene: Scene
) -> None:
    own_args = plane.extender_args
    plane.stop_extender()
    plane.extender_args = (*own_args, "--no-loops")
    try:
        plane.start_extender()
        plane.start_scaler("loops", ("--min-run-before-preemption-s", str(MIN_RUN_S)), command_name="loops")
        evict_for_a_higher_priority_class(plane, scene)
        group = plane.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{scene.namespace}/podgroups/urgent")
        annotations = group["metadata"]["annotations"]
        assert "tfjob-extender.io/plan" in annotations, "the plan went through the API server"
        announced = json.loads(annotations["tfjob-extender.io/preemption"])
        assert f"{scene.namespace}/batch-ps-0" in announced["victims"], "the victims were announced to the extender"
    finally:
        plane.stop_process("loops")
        plane.stop_extender()
        plane.extender_args = own_args
        plane.start_extender()


def evict_for_a_higher_priority_class(plane: LocalControlPlane, scene: Scene) -> None:
    fill_with_a_low_priority_batch(plane, scene)
    preempt_the_batch_whole_for_a_higher_priority_gang(plane, scene)
