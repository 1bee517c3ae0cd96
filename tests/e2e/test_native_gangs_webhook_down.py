"""End to end in native mode with the admission webhook down: TFJobs keep the extender's own barrier.

The extender runs with `--native-gangs on` but without its webhook listener (`webhook=False`): the API
server's call to the registered webhook fails, and with `failurePolicy: Ignore` the TFJob is created as it
was sent, without `spec.schedulingGroup`. Its pods cannot be given one later (the field is immutable), so the
extender gives it no native gang: it makes no Workload or PodGroup of `scheduling.k8s.io`, the job's pods join
the PodGroup training-operator makes (`--gang-scheduler-name`), its gang binds whole under the extender's own
barrier, and `/debug/native-gangs` says why.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from extender.devcluster import SCHEDULER_NAME, ApiError, LocalControlPlane, build_control_plane
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.workloads import JOB, debug_gang, tfjob, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def plane_without_webhook() -> Iterator[LocalControlPlane]:
    control_plane = LocalControlPlane(
        build_control_plane(),
        extender_args=("--starvation-limit-s", str(STARVATION_LIMIT_S)),
        native_gangs=True,
        webhook=False,
    )
    version = control_plane.kubernetes_version()
    if not version.lstrip("v").startswith("1.37."):
        pytest.skip(f"native gangs need Kubernetes 1.37 (scheduling.k8s.io/v1beta1); the control plane is {version}")
    with control_plane:
        yield control_plane


@pytest.fixture
def scene_without_webhook(plane_without_webhook: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(plane_without_webhook, request)


def test_a_tfjob_created_while_the_webhook_is_down_binds_under_the_extenders_own_barrier(
    plane_without_webhook: LocalControlPlane, scene_without_webhook: Scene
) -> None:
    plane, namespace = plane_without_webhook, scene_without_webhook.namespace
    scene_without_webhook.add_nodes(2)
    plane.create_tfjob(namespace, tfjob("resnet", scene=namespace, ps=1, workers=4, scheduler_name=SCHEDULER_NAME))
    stored = tfjob_object(plane, namespace, "resnet")
    assert all("schedulingGroup" not in s["template"]["spec"] for s in stored["spec"]["tfReplicaSpecs"].values())

    pods = wait_bound(plane, namespace, f"{JOB}=resnet", 5)
    assert all("schedulingGroup" not in p["spec"] for p in pods)
    gang = debug_gang(plane, namespace, "resnet")
    assert (gang["apiGroup"], gang["gatedByKubeScheduler"]) == ("scheduling.x-k8s.io", False)
    with pytest.raises(ApiError) as missing:
        plane.get(f"/apis/{plane.workload_api_version}/namespaces/{namespace}/workloads/resnet")
    assert missing.value.status == 404

    with urllib.request.urlopen(f"{plane.observe_url}/debug/native-gangs", timeout=5) as response:
        view = json.load(response)
    (entry,) = [entry for entry in view["jobs"] if entry["job"] == f"{namespace}/resnet"]
    assert entry["barrier"] == "extender" and "webhook was not reached" in entry["why"], entry
