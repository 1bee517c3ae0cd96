"""Which version of `scheduling.k8s.io` PodGroups the informer watches: what 1.37 and 1.36 API servers
serve, one with the API off, and the informer following discovery against a scripted API server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from extender.k8s.discovery import served_resource_type
from extender.state.kinds import BY_KIND, Kind
from tests.unit.k8s.fake_api import FakeApiServer, Recorder, listing, run, wait_for

PODGROUPS = BY_KIND[Kind.PODGROUP_K8S]
PRIORITY_CLASSES = {"name": "priorityclasses", "kind": "PriorityClass"}
PODGROUP_RESOURCES = [{"name": "podgroups", "kind": "PodGroup"}, {"name": "workloads", "kind": "Workload"}]


def api_server(served: Mapping[str, list[dict[str, str]]]) -> dict[str, Mapping[str, Any]]:
    """Discovery documents of `scheduling.k8s.io` serving `served` (version → resources)."""
    versions = [{"groupVersion": f"scheduling.k8s.io/{v}", "version": v} for v in served]
    documents: dict[str, Mapping[str, Any]] = {
        "/apis/scheduling.k8s.io": {"kind": "APIGroup", "name": "scheduling.k8s.io", "versions": versions}
    }
    for version, resources in served.items():
        documents[f"/apis/scheduling.k8s.io/{version}"] = {"kind": "APIResourceList", "resources": resources}
    return documents


# Shapes of what each release serves with `GenericWorkload` and the `--runtime-config` the e2e plane sets.
V1_37 = api_server({"v1": [PRIORITY_CLASSES], "v1beta1": [PRIORITY_CLASSES, *PODGROUP_RESOURCES]})
V1_37_ALPHA_ONLY = api_server({"v1": [PRIORITY_CLASSES], "v1alpha3": PODGROUP_RESOURCES})
V1_36 = api_server({"v1": [PRIORITY_CLASSES], "v1beta1": [PRIORITY_CLASSES], "v1alpha2": PODGROUP_RESOURCES})
GATE_OFF = api_server({"v1": [PRIORITY_CLASSES], "v1beta1": [PRIORITY_CLASSES]})


@pytest.mark.parametrize(
    ("documents", "api_version"),
    [
        pytest.param(V1_37, "scheduling.k8s.io/v1beta1", id="1.37 serves v1beta1"),
        pytest.param(V1_37_ALPHA_ONLY, "scheduling.k8s.io/v1alpha3", id="1.37 with only v1alpha3 enabled"),
        pytest.param(V1_36, "scheduling.k8s.io/v1alpha2", id="1.36 serves v1alpha2"),
    ],
)
def test_the_newest_version_serving_podgroups_is_watched(documents: dict[str, Any], api_version: str) -> None:
    served = served_resource_type(PODGROUPS, documents.get)
    assert served is not None
    assert served.api_version == served.api_versions[0] == api_version
    assert served.list_path == f"/apis/{api_version}/podgroups"


def test_a_version_that_serves_only_priority_classes_is_no_podgroup_api() -> None:
    assert served_resource_type(PODGROUPS, GATE_OFF.get) is None


def test_a_missing_group_is_no_error() -> None:
    nothing: dict[str, Mapping[str, Any]] = {}
    assert served_resource_type(PODGROUPS, nothing.get) is None


def test_a_kind_with_one_version_is_used_as_it_is_without_asking() -> None:
    def fail(path: str) -> None:
        raise AssertionError(f"asked for {path}")

    assert served_resource_type(BY_KIND[Kind.TFJOB], fail) is BY_KIND[Kind.TFJOB]


def test_the_informer_lists_the_discovered_version(recorder: Recorder) -> None:
    podgroup = {"metadata": {"name": "g", "namespace": "default", "resourceVersion": "5"}}

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        if path in V1_36:
            return 200, [orjson.dumps(V1_36[path])]
        if path == "/apis/scheduling.k8s.io/v1alpha2/podgroups" and "watch" not in query:
            return 200, listing([podgroup], "5")
        if path == "/apis/scheduling.k8s.io/v1alpha2/podgroups":
            return 200, []
        return 404, [b'{"kind": "Status", "code": 404}']

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (PODGROUPS,)):
            wait_for(lambda: ("synced", Kind.PODGROUP_K8S, None) in recorder.snapshot())
            assert recorder.snapshot()[0] == ("ADDED", Kind.PODGROUP_K8S, "g"), "the first list, page by page"
            assert not [path for path, _ in server.requests if "v1beta1/podgroups" in path]


def test_the_informer_counts_an_unserved_api_as_synced_and_empty_and_looks_again(recorder: Recorder) -> None:
    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        if path in GATE_OFF:
            return 200, [orjson.dumps(GATE_OFF[path])]
        return 404, [b'{"kind": "Status", "code": 404}']

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (PODGROUPS,)):
            wait_for(lambda: ("synced", Kind.PODGROUP_K8S, None) in recorder.snapshot())
            assert recorder.snapshot()[0] == ("replace", Kind.PODGROUP_K8S, [])
            wait_for(lambda: [path for path, _ in server.requests].count("/apis/scheduling.k8s.io") >= 2)
            assert not [path for path, _ in server.requests if path.endswith("/podgroups")]
