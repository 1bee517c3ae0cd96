"""Kubernetes' own gang API read from manifests of the Kubernetes sources and docs (see `fixtures/workload_api`):
PodGroups of `v1beta1` / `v1alpha3` (1.37) and `v1alpha2` (1.36), pods joining by `spec.schedulingGroup`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.state import convert
from extender.state.kinds import Kind, kind_of_manifest
from extender.state.manifests import dump_state, load_objects
from extender.state.store import ClusterState
from tests.builders import cluster, in_scheduling_group, make_k8s_podgroup, make_node, make_podgroup, tfjob_pods

FIXTURES = Path(__file__).parent / "fixtures" / "workload_api"
SCHEDULER_PERF_VALUES = {"{{.Index}}": "0", "{{.podsPerGroup}}": "4", "{{DivideInt .Index .podsPerGroup}}": "0"}
"""What scheduler_perf fills into its templates for the first pod of 4-pod gangs."""


def fixture(name: str) -> dict[str, Any]:
    text = (FIXTURES / name).read_text()
    for placeholder, value in SCHEDULER_PERF_VALUES.items():
        text = text.replace(placeholder, value)
    document: dict[str, Any] = yaml.safe_load(text)
    return document


@pytest.mark.parametrize(
    "name",
    [
        "v1.37.1-api-testdata-v1beta1-PodGroup.yaml",
        "v1.37.1-api-testdata-v1alpha3-PodGroup.yaml",
        "v1.36.4-api-testdata-v1alpha2-PodGroup.yaml",
    ],
)
def test_every_served_version_of_the_api_testdata_podgroup_reads_as_a_gated_gang(name: str) -> None:
    obj = fixture(name)
    assert kind_of_manifest(obj["apiVersion"], obj["kind"]) is Kind.PODGROUP_K8S
    with pytest.raises(convert.ConversionError, match=r"metadata\.namespace='namespaceValue' is not a DNS-1123 label"):
        convert.group_view(obj, "scheduling.k8s.io")
    # the testdata's placeholder names are not names an API server accepts; its fields are what matter here
    obj["metadata"] |= {"namespace": "namespace-value", "name": "name-value"}
    view = convert.group_view(obj, "scheduling.k8s.io")
    assert (view.key, view.min_member, view.api_group) == ("namespace-value/name-value", 1, "scheduling.k8s.io")
    # the fixture sets both policies; kube-scheduler reads `gang` first, and so does the model
    assert view.gated_by_scheduler
    assert view.created == convert.timestamp("2008-01-01T01:01:01Z")


def test_the_scheduler_perf_gang_and_its_pod_form_a_gang_of_four() -> None:
    group = convert.group_view(fixture("v1.37.1-scheduler-perf-gang-podgroup.yaml"), "scheduling.k8s.io")
    pod = convert.pod_view(fixture("v1.37.1-scheduler-perf-gang-pod.yaml"))
    assert (group.key, group.min_member, group.gated_by_scheduler) == ("default/gang-0", 4, True)
    assert pod.group == group.key


def test_the_docs_podgroup_and_pod_read_with_their_names_and_min_count() -> None:
    group = convert.group_view(fixture("docs-podgroup-api-v1alpha2.yaml"), "scheduling.k8s.io")
    pod = convert.pod_view(fixture("docs-scheduling-group-pod.yaml"))
    assert (group.key, group.min_member, group.gated_by_scheduler) == ("some-ns/training-group", 4, True)
    assert pod.group == "some-ns/training-worker-0"


def test_a_basic_policy_is_a_group_of_one_that_nobody_gates() -> None:
    view = convert.group_view(make_k8s_podgroup("solo", min_count=None), "scheduling.k8s.io")
    assert (view.min_member, view.gated_by_scheduler) == (1, False)


def test_the_scheduling_group_wins_over_a_pod_group_label() -> None:
    (pod,) = in_scheduling_group(tfjob_pods("mnist", ps=1, workers=0), "mnist-gang")
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "mnist"
    assert convert.pod_view(pod).group == "default/mnist-gang"


def test_a_min_count_that_is_not_a_number_names_the_object_and_field() -> None:
    obj = make_k8s_podgroup("bad", min_count=2)
    obj["spec"]["schedulingPolicy"]["gang"]["minCount"] = "many"
    with pytest.raises(convert.ConversionError, match=r"PodGroup default/bad: spec.schedulingPolicy.gang.minCount"):
        convert.group_view(obj, "scheduling.k8s.io")


def test_a_workload_is_not_a_kind_the_model_follows() -> None:
    obj = fixture("v1.37.1-api-testdata-v1beta1-Workload.yaml")
    assert kind_of_manifest(obj["apiVersion"], obj["kind"]) is None


def test_all_three_dialects_live_side_by_side_in_the_model() -> None:
    state = cluster(
        make_node("node-0"),
        *in_scheduling_group(tfjob_pods("up", ps=1, workers=2), "up"),
        make_k8s_podgroup("up", min_count=3),
        *tfjob_pods("xk", ps=1, workers=1),
        make_podgroup("xk", min_member=2),
        make_podgroup("sigs", min_member=1, legacy=True),
    )
    snapshot = state.snapshot()
    assert {key: group.api_group for key, group in snapshot.groups.items()} == {
        "default/up": "scheduling.k8s.io",
        "default/xk": "scheduling.x-k8s.io",
        "default/sigs": "scheduling.sigs.k8s.io",
    }
    assert snapshot.group_members["default/up"] == {"default/up-ps-0", "default/up-worker-0", "default/up-worker-1"}
    assert [group.key for group in state.groups_of_kind(Kind.PODGROUP_K8S)] == ["default/up"]


def test_a_dump_writes_the_dialect_back_and_reads_back_the_same(tmp_path: Path) -> None:
    state = cluster(
        *in_scheduling_group(tfjob_pods("up", ps=1, workers=1), "up"),
        make_k8s_podgroup("up", min_count=2, version="v1alpha2"),
        make_k8s_podgroup("solo", min_count=None),
    )
    dump = dump_state(state.snapshot())
    by_name = {item["metadata"]["name"]: item for item in dump["items"]}
    assert by_name["up"]["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert by_name["up"]["spec"] == {"schedulingPolicy": {"gang": {"minCount": 2}}}
    assert by_name["solo"]["spec"] == {"schedulingPolicy": {"basic": {}}}
    assert by_name["up-ps-0"]["spec"]["schedulingGroup"] == {"podGroupName": "up"}
    assert "scheduling.x-k8s.io/pod-group" not in by_name["up-ps-0"]["metadata"]["labels"]
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    objects, _ = load_objects(path)
    reloaded = ClusterState()
    for kind, items in objects.items():
        reloaded.replace(kind, items)
    assert reloaded.snapshot().groups == state.snapshot().groups
    assert reloaded.snapshot().pods == state.snapshot().pods


def test_a_kubernetes_podgroup_wins_over_a_crd_podgroup_of_the_same_name() -> None:
    # training-operator names its scheduling.x-k8s.io PodGroup after the TFJob; a user may name the
    # scheduling.k8s.io one, which kube-scheduler gates the pods by, the same way
    state = cluster(
        *in_scheduling_group(tfjob_pods("mnist", ps=1, workers=2), "mnist"),
        make_podgroup("mnist", min_member=3),
        make_k8s_podgroup("mnist", min_count=2),
    )
    group = state.snapshot().groups["default/mnist"]
    assert (group.api_group, group.min_member, group.gated_by_scheduler) == ("scheduling.k8s.io", 2, True)
    assert [g.api_group for g in state.groups_of_kind(Kind.PODGROUP)] == ["scheduling.x-k8s.io"]
