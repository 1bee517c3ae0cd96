"""End to end with Kubernetes' own gang API on: kube-scheduler gates `scheduling.k8s.io` gangs itself.

A control plane of its own for this module (`workload_api=True`: the release's feature gates and the
`--runtime-config` serving Workloads and PodGroups), with training-operator as in the other tests. Each
gang is declared as a user would: a Workload with one PodGroup template, a PodGroup made from it, and a
TFJob whose replica templates name that PodGroup in `spec.schedulingGroup.podGroupName` (training-operator
passes the field through to its pods). The extender plans and steers these gangs as any other, and leaves
the all-or-nothing barrier to kube-scheduler.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.devcluster import LocalControlPlane, build_control_plane
from extender.devcluster.plane import WORKLOAD_API
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.scenarios import gangs_of_every_dialect_start_whole
from tests.e2e.waits import OBSERVE_S
from tests.e2e.workloads import (
    JOB,
    debug_gang,
    declare_gang,
    filter_summaries,
    gang_tfjob,
    never_bound,
    placement,
    ps_and_workers_by_node,
    wait_bound,
    wait_for_pods,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def gated_plane() -> Iterator[LocalControlPlane]:
    args = ("--starvation-limit-s", str(STARVATION_LIMIT_S))
    control_plane = LocalControlPlane(build_control_plane(), extender_args=args, workload_api=True)
    version = control_plane.kubernetes_version()
    if ".".join(version.lstrip("v").split(".")[:2]) not in WORKLOAD_API:
        control_plane.stop()
        pytest.skip(
            f"Kubernetes {version} serves its gang API as Workload v1alpha1, the pods naming it in "
            "spec.workloadRef, with no PodGroup object: the extender reads the PodGroup form of 1.36 and later"
        )
    with control_plane:
        yield control_plane


@pytest.fixture
def gated_scene(gated_plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(gated_plane, request)


def test_a_gang_of_the_upstream_api_binds_whole_on_the_fewest_nodes_with_its_ps_beside_its_workers(
    gated_plane: LocalControlPlane, gated_scene: Scene
) -> None:
    namespace = gated_scene.namespace
    gated_scene.add_nodes(3)
    declare_gang(gated_plane, namespace, "wide", min_count=5)
    # 1 PS + 4 workers of 1 CPU = 5 CPU; a node has 4: two nodes, the PS with three workers
    gated_plane.create_tfjob(namespace, gang_tfjob("wide", scene=namespace, pod_group="wide", ps=1, workers=4))
    pods = wait_bound(gated_plane, namespace, f"{JOB}=wide", 5)
    assert {p["spec"].get("schedulingGroup", {}).get("podGroupName") for p in pods} == {"wide"}
    ps, workers = ps_and_workers_by_node(pods)
    why = (placement(pods), filter_summaries(gated_plane, namespace, pods))
    assert len(set(placement(pods).values())) == 2, why
    (ps_node,) = ps
    assert workers[ps_node] == 3, why
    gang = debug_gang(gated_plane, namespace, "wide")
    assert (gang["apiGroup"], gang["minMember"], gang["gatedByKubeScheduler"]) == ("scheduling.k8s.io", 5, True)
    assert gang["status"] == "admitted"


def test_a_gang_of_the_upstream_api_that_does_not_fit_binds_nothing(
    gated_plane: LocalControlPlane, gated_scene: Scene
) -> None:
    namespace = gated_scene.namespace
    gated_scene.add_nodes(2)
    declare_gang(gated_plane, namespace, "big", min_count=9)
    # 1 PS + 8 workers of 1 CPU = 9 CPU on 8: every member fits somewhere, the gang does not
    gated_plane.create_tfjob(namespace, gang_tfjob("big", scene=namespace, pod_group="big", ps=1, workers=8))
    wait_for_pods(gated_plane, namespace, "big", 9)
    pods = never_bound(gated_plane, namespace, f"{JOB}=big", OBSERVE_S)
    assert len(pods) == 9
    gang = debug_gang(gated_plane, namespace, "big")
    assert gang["apiGroup"] == "scheduling.k8s.io"
    assert "gang" in gang["why"] and "needs 9 pods" in gang["why"], gang


def test_the_podgroup_crd_dialects_still_gang_beside_it(gated_plane: LocalControlPlane, gated_scene: Scene) -> None:
    gangs_of_every_dialect_start_whole(gated_plane, gated_scene)
    namespace = gated_scene.namespace
    groups = {name: debug_gang(gated_plane, namespace, name)["apiGroup"] for name in ("upstream", "classic", "koord")}
    assert groups == {
        "upstream": "scheduling.k8s.io",
        "classic": "scheduling.x-k8s.io",
        "koord": "scheduling.sigs.k8s.io",
    }
