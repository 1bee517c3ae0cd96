"""End to end: the chart installed for some namespaces only (`managedNamespaces`), its processes as local
processes under their own ServiceAccounts, with the write rights that scoping gives them.

Inside the managed namespaces a TFJob is scheduled whole, preempted whole for a higher-priority gang
through the Eviction API, and grown into idle room by the scaler. Outside them a TFJob whose pods name
the scheduler is placed as pods of no gang, and the loops leave it alone: its elastic job never grows, no
plan is written on its PodGroup, its pods are never evicted. The audit log shows that no request of the
chart's ServiceAccounts was refused (their writes stayed where their RoleBindings are) and that neither the
extender nor the loops wrote outside; kube-scheduler bound the pods there, as it binds any pod naming it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from extender.state.gang_annotations import GANG_PLAN_ANNOTATION
from tests.e2e.audit import refused, requests_by
from tests.e2e.conftest import Scene
from tests.e2e.scenarios import (
    fill_with_a_low_priority_batch,
    grow_an_elastic_job_as_capacity_frees,
    preempt_the_batch_whole_for_a_higher_priority_gang,
)
from tests.e2e.test_installed import NAMESPACE, VALUES, Installed, installed_release
from tests.e2e.workloads import JOB, tfjob, wait_bound, workers
from tests.helm import RELEASE

pytestmark = pytest.mark.e2e

MANAGED = ("team-a", "team-a-grow")
"""The namespaces the release manages: one for the preemption, one for the scaler (each its own nodes)."""
OUTSIDE = "team-b"
LEFT_ALONE_S = 20.0
"""Seconds the loops are watched leaving the job outside alone: several scaler ticks past its cooldown."""


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    with installed_release(
        tmp_path_factory.mktemp("scoped"), {**VALUES, "managedNamespaces": list(MANAGED)}
    ) as release:
        yield release


def scene_named(installed: Installed, name: str) -> Iterator[Scene]:
    scene = Scene(installed.plane, name)
    try:
        yield scene
    finally:
        scene.cleanup()


@pytest.fixture
def team_a(scoped: Installed) -> Iterator[Scene]:
    yield from scene_named(scoped, MANAGED[0])


@pytest.fixture
def team_a_grow(scoped: Installed) -> Iterator[Scene]:
    yield from scene_named(scoped, MANAGED[1])


@pytest.fixture
def team_b(scoped: Installed) -> Iterator[Scene]:
    yield from scene_named(scoped, OUTSIDE)


def test_inside_a_gang_is_preempted_whole_for_a_higher_priority_one(scoped: Installed, team_a: Scene) -> None:
    fill_with_a_low_priority_batch(scoped.plane, team_a)
    preempt_the_batch_whole_for_a_higher_priority_gang(scoped.plane, team_a)


def test_inside_an_elastic_job_grows_into_idle_room(scoped: Installed, team_a_grow: Scene) -> None:
    grow_an_elastic_job_as_capacity_frees(scoped.plane, team_a_grow)


def test_outside_a_job_is_placed_as_pods_of_no_gang_and_left_alone(scoped: Installed, team_b: Scene) -> None:
    plane, ns = scoped.plane, team_b.namespace
    team_b.add_nodes(2)
    plane.create_tfjob(ns, tfjob("elastic", scene=ns, workers=2, min_workers=1, max_workers=7, dynamic=True))
    pods = wait_bound(plane, ns, f"{JOB}=elastic", 3)
    uids = {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in pods}
    time.sleep(LEFT_ALONE_S)
    assert workers(plane, ns, "elastic") == 2, "the scaler never grows a job outside"
    now = {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in wait_bound(plane, ns, f"{JOB}=elastic", 3)}
    assert now == uids, "none of its pods was taken"
    group = plane.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups/elastic")
    assert GANG_PLAN_ANNOTATION not in (group["metadata"].get("annotations") or {}), "no plan for a gang outside"


def test_no_write_was_refused_and_none_went_outside(scoped: Installed) -> None:
    accounts = {f"system:serviceaccount:{NAMESPACE}:{account}" for account in scoped.kubeconfigs}
    requests = requests_by(scoped.audit_log, accounts)
    assert not refused(requests), refused(requests)
    ours = {f"system:serviceaccount:{NAMESPACE}:{account}" for account in (RELEASE, f"{RELEASE}-loops")}
    writes = [
        r for r in requests if r.user in ours and r.verb not in ("get", "list", "watch") and r.namespace == OUTSIDE
    ]
    assert not writes, [w.describe() for w in writes]
    binds = {r.name for r in requests if r.namespace == OUTSIDE and r.subresource == "binding"}
    assert binds == {"elastic-ps-0", "elastic-worker-0", "elastic-worker-1"}, "kube-scheduler placed it, as any pod"
