"""End to end in native mode: a native gang that changes size, and one that is suspended and resumed.

A control plane of its own in native mode (`tests.e2e.native`) whose extender runs the scaler with fast ticks
and short cooldowns. The scaler itself resizes the gang: it grows an elastic TFJob into idle room, step by
step, then shrinks it for a heavier job; after each step the extender sets the PodGroup's (and its Workload
template's) `gang.minCount` to the job's pods, the new workers bind (kube-scheduler counts the members
already bound toward a gang's `minCount`, so a worker added to a running gang does not wait for a gang
that would never form), and a shrink leaves no pod pending. A TFJob its owner suspends
(`spec.runPolicy.suspend`) loses its Workload and PodGroup with its pods, and gets them back and binds whole
again once resumed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.devcluster import SCHEDULER_NAME, LocalControlPlane
from tests.e2e.conftest import MIN_RUN_S, STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.native import (
    debug_native_gangs,
    gang_min_count,
    made_by_the_extender,
    native_control_plane,
    native_objects,
    native_writes,
    wait_min_count,
    wait_native_gone,
)
from tests.e2e.scenarios import SUSPENDABLE, suspended_then_resumed_waiting
from tests.e2e.waits import stays, wait_until
from tests.e2e.workloads import (
    JOB,
    bound,
    job_events,
    job_pods,
    not_failed,
    ps_uid,
    running_workers,
    tfjob,
    tfjob_object,
    wait_bound,
    workers,
)

pytestmark = pytest.mark.e2e
SCALER_ARGS = (
    *("--with-scaler", "--scaler-interval-s", "1", "--scale-cooldown-s", "5", "--scale-in-step", "3"),
    *("--suspension-newcomer-s", "120"),
    *("--lease-namespace", "default", "--lease-name", "e2e-native-scaler", "--lease-duration-s", "4"),
)
SETTLED_S = 10.0
"""How long the shrunk job is watched keeping its size and leaving no pod pending: two scale cooldowns (5 s)."""


@pytest.fixture(scope="module")
def elastic_plane() -> Iterator[LocalControlPlane]:
    args = ("--starvation-limit-s", str(STARVATION_LIMIT_S), "--min-run-before-preemption-s", str(MIN_RUN_S))
    with native_control_plane((*args, *SCALER_ARGS)) as control_plane:
        yield control_plane


@pytest.fixture
def elastic_scene(elastic_plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(elastic_plane, request)


def pending(plane: LocalControlPlane, namespace: str) -> list[str]:
    """The pods of `namespace` without a node (deleted ones aside)."""
    return [
        p["metadata"]["name"]
        for p in plane.pods(namespace)
        if not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
    ]


def test_the_scaler_grows_and_shrinks_a_native_gang_and_its_min_count_follows(
    elastic_plane: LocalControlPlane, elastic_scene: Scene
) -> None:
    plane, ns = elastic_plane, elastic_scene.namespace
    elastic_scene.add_nodes(2)
    # elastic: PS + 2 workers of 1 CPU / 4 GiB, may grow to 7 workers: the whole 8 CPU and 32 GiB
    elastic = tfjob(
        "elastic", scene=ns, workers=2, memory="4Gi", min_workers=2, max_workers=7, dynamic=True,
        scheduler_name=SCHEDULER_NAME,
    )  # fmt: skip
    plane.create_tfjob(ns, elastic)
    wait_min_count(plane, ns, "elastic", 3)
    wait_bound(plane, ns, f"{JOB}=elastic", 3)
    ps = ps_uid(plane, ns, "elastic")

    wait_until("the elastic job grown to its maximum", lambda: running_workers(plane, ns, "elastic") == 7, 60)
    wait_min_count(plane, ns, "elastic", 8)
    grown = job_events(plane, ns, "elastic", "ScaledOut")
    assert len(grown) >= 2 and all("idle capacity" in message for message in grown), grown
    resizes = [count for kind, count in native_writes(plane, f"{ns}/elastic") if kind == "resize"]
    assert resizes == sorted(resizes) and resizes[-1] == 8 and len(resizes) == len(grown), (resizes, grown)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in job_pods(plane, ns, "elastic")} == {"elastic"}
    assert pending(plane, ns) == []

    # heavy: PS + 2 workers of 1 CPU / 1 GiB needs 3 CPU and weighs more: the scaler shrinks elastic by 3
    plane.create_tfjob(ns, tfjob("heavy", scene=ns, workers=2, scheduler_name=SCHEDULER_NAME))
    wait_bound(plane, ns, f"{JOB}=heavy", 3, timeout_s=60)
    assert workers(plane, ns, "elastic") == 4 and job_events(plane, ns, "elastic", "ScaledIn"), "shrunk by the step"
    wait_min_count(plane, ns, "elastic", 5)
    assert gang_min_count(plane, ns, "heavy") == 3

    def shrunk_and_nothing_pending() -> bool:
        assert not_failed(tfjob_object(plane, ns, "elastic")), "the elastic job keeps training"
        assert workers(plane, ns, "elastic") == 4, "no growing back into the heavy job"
        return pending(plane, ns) == [] and running_workers(plane, ns, "elastic") == 4

    wait_until("the shrunk workers gone", shrunk_and_nothing_pending, 30)
    stays("the shrunk job at its size with no pod pending", shrunk_and_nothing_pending, SETTLED_S, interval_s=1)
    assert gang_min_count(plane, ns, "elastic") == 5
    assert ps_uid(plane, ns, "elastic") == ps, "the PS is never touched"


def set_suspended(plane: LocalControlPlane, namespace: str, name: str, suspended: bool) -> None:
    """The owner suspends or resumes the TFJob."""
    path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}"
    plane.merge_patch(path, {"spec": {"runPolicy": {"suspend": suspended}}})


def test_a_suspended_tfjob_loses_its_native_gang_and_gets_it_back_when_resumed(
    elastic_plane: LocalControlPlane, elastic_scene: Scene
) -> None:
    plane, ns = elastic_plane, elastic_scene.namespace
    elastic_scene.add_nodes(1)
    plane.create_tfjob(ns, tfjob("paused", scene=ns, workers=2, scheduler_name=SCHEDULER_NAME))
    wait_min_count(plane, ns, "paused", 3)
    wait_bound(plane, ns, f"{JOB}=paused", 3)
    first_uid = native_objects(plane, ns, "paused")["podgroups"]["metadata"]["uid"]  # type: ignore[index]

    set_suspended(plane, ns, "paused", True)
    wait_until("paused's pods deleted", lambda: not job_pods(plane, ns, "paused"), 30)
    wait_native_gone(plane, ns, "paused", "it was suspended")
    assert made_by_the_extender(plane, ns) == []

    set_suspended(plane, ns, "paused", False)
    wait_min_count(plane, ns, "paused", 3)
    pods = wait_bound(plane, ns, f"{JOB}=paused", 3)
    assert len(bound(pods)) == len(pods) == 3, [p["metadata"]["name"] for p in pods]
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"paused"}
    assert native_objects(plane, ns, "paused")["podgroups"]["metadata"]["uid"] != first_uid  # type: ignore[index]
    kinds = [kind for kind, _ in native_writes(plane, f"{ns}/paused")]
    assert kinds == ["create", "delete", "create"], kinds
    assert not_failed(tfjob_object(plane, ns, "paused"))


def test_a_job_the_extender_suspends_for_a_starving_gang_gets_its_native_gang_back_and_binds_whole(
    elastic_plane: LocalControlPlane, elastic_scene: Scene
) -> None:
    """As `test_suspension`'s newcomer, every job a native gang: a 9-pod gang waits behind a job that ends at
    30 s while a smaller suspendable job starts in the room left; when the first job ends the gang starves
    and still does not fit, so the loop suspends the newcomer (its Workload and PodGroup deleted), the gang
    starts (for 25 s), and the newcomer is resumed with its native gang back to wait; it binds whole once the
    gang has finished."""
    plane, ns = elastic_plane, elastic_scene.namespace
    elastic_scene.add_nodes(3)
    plane.create_tfjob(ns, tfjob("blocker", scene=ns, ps=0, workers=4, run_for="30s", scheduler_name=SCHEDULER_NAME))
    wait_bound(plane, ns, f"{JOB}=blocker", 4)
    plane.create_tfjob(ns, tfjob("big", scene=ns, workers=8, run_for="25s", scheduler_name=SCHEDULER_NAME))
    newcomer = tfjob("newcomer", scene=ns, ps=0, workers=4, scheduler_name=SCHEDULER_NAME)
    newcomer["metadata"]["annotations"][SUSPENDABLE] = "true"
    plane.create_tfjob(ns, newcomer)
    wait_bound(plane, ns, f"{JOB}=newcomer", 4)
    wait_bound(plane, ns, f"{JOB}=big", 9, timeout_s=120)

    suspended_then_resumed_waiting(plane, ns, "newcomer", 4)
    wait_min_count(plane, ns, "newcomer", 4)
    job = f"{ns}/newcomer"
    writes = [(w["kind"], w["reason"]) for w in debug_native_gangs(plane)["writes"] if w["job"] == job]
    assert [kind for kind, _ in writes] == ["create", "delete", "create"], writes
    assert writes[1][1] == f"TFJob {ns}/newcomer suspended", writes

    pods = wait_bound(plane, ns, f"{JOB}=newcomer", 4, timeout_s=60)
    assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"newcomer"}
    assert not_failed(tfjob_object(plane, ns, "newcomer"))
