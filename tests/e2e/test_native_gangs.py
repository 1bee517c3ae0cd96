"""End to end in native mode: Kubernetes 1.37's own gangs for TFJobs that never declared one.

A control plane of its own (`native_gangs=True`: the `GenericWorkload` gate, `scheduling.k8s.io/v1beta1`
served, the extender started with `--native-gangs on` and its admission webhook registered with the CA it
made). A TFJob whose replica templates name the scheduler goes through training-operator as any user's
would: the webhook names its native gang in the templates, the extender makes its Workload and PodGroup
(owned by the TFJob), the pods carry `spec.schedulingGroup.podGroupName`, kube-scheduler binds the gang whole
with the extender's plan (PS beside its workers), and both objects are deleted when the job succeeds, fails
(past its `activeDeadlineSeconds`) or is deleted (no garbage collector runs here): none of the extender's is
left in the namespace. Scaling and suspension are in `test_native_gangs_elastic.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.devcluster import SCHEDULER_NAME, LocalControlPlane
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.native import (
    debug_native_gangs,
    made_by_the_extender,
    native_control_plane,
    native_objects,
    wait_native_gone,
)
from tests.e2e.waits import wait_until
from tests.e2e.workloads import (
    JOB,
    crash,
    not_failed,
    placement,
    ps_and_workers_by_node,
    tfjob,
    tfjob_object,
    wait_bound,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def native_plane() -> Iterator[LocalControlPlane]:
    with native_control_plane(("--starvation-limit-s", str(STARVATION_LIMIT_S))) as control_plane:
        yield control_plane


@pytest.fixture
def native_scene(native_plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(native_plane, request)


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

    wait_native_gone(native_plane, namespace, "mnist", "it succeeded", 60)
    assert made_by_the_extender(native_plane, namespace) == []


def test_a_deleted_tfjob_loses_its_native_gang(native_plane: LocalControlPlane, native_scene: Scene) -> None:
    namespace = native_scene.namespace
    native_scene.add_nodes(1)
    native_plane.create_tfjob(namespace, tfjob("bert", scene=namespace, ps=1, workers=2, scheduler_name=SCHEDULER_NAME))
    wait_until("bert's PodGroup", lambda: native_objects(native_plane, namespace, "bert")["podgroups"], 30)
    wait_bound(native_plane, namespace, f"{JOB}=bert", 3)
    native_plane.delete_tfjob(namespace, "bert")
    wait_native_gone(native_plane, namespace, "bert", "its TFJob was deleted")
    assert made_by_the_extender(native_plane, namespace) == []


def test_a_failed_tfjob_loses_its_native_gang(native_plane: LocalControlPlane, native_scene: Scene) -> None:
    """A worker's container exits 1 (restartPolicy Never): training-operator fails the TFJob."""
    namespace = native_scene.namespace
    native_scene.add_nodes(1)
    native_plane.create_tfjob(
        namespace, tfjob("doomed", scene=namespace, ps=1, workers=2, scheduler_name=SCHEDULER_NAME)
    )
    wait_until("doomed's PodGroup", lambda: native_objects(native_plane, namespace, "doomed")["podgroups"], 30)
    wait_bound(native_plane, namespace, f"{JOB}=doomed", 3)
    crash(native_plane, namespace, "doomed-worker-1")
    wait_until("doomed failed", lambda: not not_failed(tfjob_object(native_plane, namespace, "doomed")), 30)
    wait_native_gone(native_plane, namespace, "doomed", "it failed")
    assert made_by_the_extender(native_plane, namespace) == []
    job = f"{namespace}/doomed"
    writes = [(w["kind"], w["reason"]) for w in debug_native_gangs(native_plane)["writes"] if w["job"] == job]
    assert writes[-1] == ("delete", f"TFJob {job} failed"), writes


def test_a_tfjob_of_another_scheduler_is_left_as_it_was_sent(
    native_plane: LocalControlPlane, native_scene: Scene
) -> None:
    namespace = native_scene.namespace
    native_plane.create_tfjob(namespace, tfjob("other", scene=namespace, scheduler_name="default-scheduler"))
    stored = tfjob_object(native_plane, namespace, "other")
    assert "tfjob-extender.io/native-gang" not in (stored["metadata"].get("annotations") or {})
    assert all("schedulingGroup" not in s["template"]["spec"] for s in stored["spec"]["tfReplicaSpecs"].values())
