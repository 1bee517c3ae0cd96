"""End to end: `--native-gangs on` where the API server does not serve Kubernetes' own gang API.

A control plane of its own: Kubernetes 1.37 without the `GenericWorkload` gate (`workload_api=False`, so
`scheduling.k8s.io/v1beta1` is not served and kube-scheduler has no GangScheduling), the extender started
with `--native-gangs on` and its admission webhook registered and serving. The extender keeps its own
barrier: the webhook names no gang, the TFJob is created as it was sent, nothing of `scheduling.k8s.io` is
made, the job's pods join the PodGroup training-operator makes and bind whole with the extender's plan, and
`/readyz` and `/debug/native-gangs` say why. `hack/test-matrix.sh` runs it on 1.36 too, with that release's
gates (`GenericWorkload`, `GangScheduling`: `scheduling.k8s.io/v1alpha2` served, its minCount immutable), and
on 1.35 (no settings for its `v1alpha1` Workloads in `WORKLOAD_API`: served without the gate).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import SCHEDULER_NAME, LocalControlPlane, build_control_plane
from extender.devcluster.plane import WORKLOAD_API
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.waits import wait_until
from tests.e2e.workloads import JOB, debug_gang, placement, ps_and_workers_by_node, tfjob, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e

NOT_SERVED = "does not serve scheduling.k8s.io/v1beta1"


def minor(plane: LocalControlPlane) -> str:
    return ".".join(plane.kubernetes_version().lstrip("v").split(".")[:2])


def not_native_why(plane: LocalControlPlane) -> str:
    """What the extender should say of this release's gang API."""
    return "only as v1alpha2" if plane.workload_api else NOT_SERVED


@pytest.fixture(scope="module")
def plane_without_the_gate() -> Iterator[LocalControlPlane]:
    control_plane = LocalControlPlane(
        build_control_plane(),
        extender_args=("--starvation-limit-s", str(STARVATION_LIMIT_S)),
        native_gangs=True,
        workload_api=False,
    )
    control_plane.workload_api = minor(control_plane) in WORKLOAD_API and minor(control_plane) != "1.37"
    with control_plane:
        yield control_plane


@pytest.fixture
def scene_without_the_gate(
    plane_without_the_gate: LocalControlPlane, request: pytest.FixtureRequest
) -> Iterator[Scene]:
    yield from scene_on(plane_without_the_gate, request)


def read_json(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=5) as response:
        document: dict[str, Any] = json.load(response)
    return document


def test_without_the_gate_tfjobs_bind_whole_under_the_extenders_own_barrier_and_it_says_why(
    plane_without_the_gate: LocalControlPlane, scene_without_the_gate: Scene
) -> None:
    plane, namespace = plane_without_the_gate, scene_without_the_gate.namespace
    group = plane.get("/apis/scheduling.k8s.io")
    assert "v1beta1" not in [version["version"] for version in group["versions"]] or minor(plane) != "1.37", group
    why = not_native_why(plane)
    ready = read_json(f"http://127.0.0.1:{plane.extender_port}/readyz")["nativeGangs"]
    assert (ready["setting"], ready["active"], ready["barrier"]) == ("on", False, "extender"), ready
    assert why in ready["why"], ready

    scene_without_the_gate.add_nodes(3)
    # 1 PS + 4 workers of 1 CPU on nodes of 4: two nodes, the PS with three workers
    job = tfjob("mnist", scene=namespace, ps=1, workers=4, run_for="5s", scheduler_name=SCHEDULER_NAME)
    plane.create_tfjob(namespace, job)
    stored = tfjob_object(plane, namespace, "mnist")
    assert "tfjob-extender.io/native-gang" not in (stored["metadata"].get("annotations") or {})
    assert all("schedulingGroup" not in s["template"]["spec"] for s in stored["spec"]["tfReplicaSpecs"].values())

    pods = wait_bound(plane, namespace, f"{JOB}=mnist", 5)
    assert all("schedulingGroup" not in p["spec"] for p in pods)
    ps, workers = ps_and_workers_by_node(pods)
    (ps_node,) = ps
    assert len(set(placement(pods).values())) == 2 and workers[ps_node] == 3, placement(pods)
    gang = debug_gang(plane, namespace, "mnist")
    assert (gang["apiGroup"], gang["gatedByKubeScheduler"]) == ("scheduling.x-k8s.io", False), gang

    view = read_json(f"{plane.observe_url}/debug/native-gangs")
    assert view["active"] is False and why in view["why"], view
    (entry,) = [entry for entry in view["jobs"] if entry["job"] == f"{namespace}/mnist"]
    assert entry["barrier"] == "extender" and entry["why"].startswith("native gangs are not given here"), entry
    assert why in entry["why"], entry
    assert view["kept"] == {} and view["writes"] == [], view
    wait_until("mnist succeeded", lambda: succeeded(plane, namespace, "mnist"), 60)
    assert read_json(f"{plane.observe_url}/debug/native-gangs")["writes"] == []


def succeeded(plane: LocalControlPlane, namespace: str, name: str) -> bool:
    conditions = (tfjob_object(plane, namespace, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)
