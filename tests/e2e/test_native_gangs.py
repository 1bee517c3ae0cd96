"""End to end in native mode: Kubernetes 1.37's own gangs for TFJobs that never declared one.

A control plane of its own (`native_gangs=True`: the `GenericWorkload` gate, `scheduling.k8s.io/v1beta1`
served, the extender started with `--native-gangs on` and its admission webhook registered with the CA it
made). A TFJob whose replica templates name the scheduler goes through training-operator as any user's
would: the webhook names its native gang in the templates, the extender makes its Workload and PodGroup
(owned by the TFJob), the pods carry `spec.schedulingGroup.podGroupName`, kube-scheduler binds the gang whole
with the extender's plan (PS beside its workers), and both objects are deleted when the job finishes or is
deleted (no garbage collector runs here).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import SCHEDULER_NAME, ApiError, LocalControlPlane, build_control_plane
from extender.devcluster.plane import WORKLOAD_API
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene, scene_name
from tests.e2e.waits import wait_until
from tests.e2e.workloads import JOB, placement, ps_and_workers_by_node, tfjob, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def native_plane() -> Iterator[LocalControlPlane]:
    control_plane = LocalControlPlane(
        build_control_plane(), extender_args=("--starvation-limit-s", str(STARVATION_LIMIT_S)), native_gangs=True
    )
    version = control_plane.kubernetes_version()
    if ".".join(version.lstrip("v").split(".")[:2]) != "1.37" or "1.37" not in WORKLOAD_API:
        pytest.skip(f"native gangs need Kubernetes 1.37 (scheduling.k8s.io/v1beta1); the control plane is {version}")
    with control_plane:
        yield control_plane


@pytest.fixture
def native_scene(native_plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    current = Scene(native_plane, scene_name(request))
    try:
        yield current
    finally:
        current.cleanup()


def native_objects(plane: LocalControlPlane, namespace: str, name: str) -> dict[str, Obj | None]:
    """The Workload and PodGroup `name` (None for each that does not exist)."""
    found: dict[str, Obj | None] = {}
    for plural in ("workloads", "podgroups"):
        try:
            found[plural] = plane.get(f"/apis/{plane.workload_api_version}/namespaces/{namespace}/{plural}/{name}")
        except ApiError as error:
            if error.status != 404:
                raise
            found[plural] = None
    return found


def debug_native_gangs(plane: LocalControlPlane) -> Obj:
    with urllib.request.urlopen(f"{plane.observe_url}/debug/native-gangs", timeout=5) as response:
        view: Obj = json.load(response)
    return view


def test_a_tfjob_gets_its_native_gang_binds_whole_and_loses_it_when_it_finishes(
    native_plane: LocalControlPlane, native_scene: Scene
) -> None:
    namespace = native_scene.namespace
    native_scene.add_nodes(3)
    # 1 PS + 4 workers of 1 CPU on nodes of 4: two nodes, the PS with three workers
    job = tfjob("mnist", scene=namespace, ps=1, workers=4, run_for="6s", scheduler_name=SCHEDULER_NAME)
    native_plane.create_tfjob(namespace, job)
    stored = tfjob_object(native_plane, namespace, "mnist")
    assert stored["metadata"]["annotations"]["tfjob-extender.io/native-gang"] == "mnist"
    for spec in stored["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["spec"]["schedulingGroup"] == {"podGroupName": "mnist"}

    made = wait_until(
        "the Workload and PodGroup of mnist",
        lambda: (objects := native_objects(native_plane, namespace, "mnist"))["podgroups"] and objects,
        30,
    )
    workload, group = made["workloads"], made["podgroups"]
    assert workload is not None and group is not None
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    assert group["spec"]["workloadRef"]["workloadName"] == "mnist"
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("TFJob", "mnist", stored["metadata"]["uid"])

    pods = wait_bound(native_plane, namespace, f"{JOB}=mnist", 5)
    assert {p["spec"].get("schedulingGroup", {}).get("podGroupName") for p in pods} == {"mnist"}
    ps, workers = ps_and_workers_by_node(pods)
    assert len(set(placement(pods).values())) == 2, placement(pods)
    (ps_node,) = ps
    assert workers[ps_node] == 3, placement(pods)
    view = debug_native_gangs(native_plane)
    assert view["active"] is True
    (entry,) = [entry for entry in view["jobs"] if entry["job"] == f"{namespace}/mnist"]
    assert (entry["barrier"], entry["podGroup"]) == ("kube-scheduler", "mnist")

    wait_until(
        "mnist's Workload and PodGroup deleted once it succeeded",
        lambda: native_objects(native_plane, namespace, "mnist") == {"workloads": None, "podgroups": None},
        60,
    )


def test_a_deleted_tfjob_loses_its_native_gang(native_plane: LocalControlPlane, native_scene: Scene) -> None:
    namespace = native_scene.namespace
    native_scene.add_nodes(1)
    native_plane.create_tfjob(namespace, tfjob("bert", scene=namespace, ps=1, workers=2, scheduler_name=SCHEDULER_NAME))
    wait_until("bert's PodGroup", lambda: native_objects(native_plane, namespace, "bert")["podgroups"], 30)
    wait_bound(native_plane, namespace, f"{JOB}=bert", 3)
    native_plane.delete_tfjob(namespace, "bert")
    wait_until(
        "bert's Workload and PodGroup deleted with it",
        lambda: native_objects(native_plane, namespace, "bert") == {"workloads": None, "podgroups": None},
        30,
    )


def test_a_tfjob_of_another_scheduler_is_left_as_it_was_sent(
    native_plane: LocalControlPlane, native_scene: Scene
) -> None:
    namespace = native_scene.namespace
    native_plane.create_tfjob(namespace, tfjob("other", scene=namespace, scheduler_name="default-scheduler"))
    stored = tfjob_object(native_plane, namespace, "other")
    assert "tfjob-extender.io/native-gang" not in (stored["metadata"].get("annotations") or {})
    assert all("schedulingGroup" not in s["template"]["spec"] for s in stored["spec"]["tfReplicaSpecs"].values())
