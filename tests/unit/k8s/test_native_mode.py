"""Whether native gangs are given here, asked of a scripted API server serving the discovery documents of each
release (only 1.37.1 runs end to end; `hack/test-matrix.sh` runs the fallback test on 1.35 and 1.36 builds).

Each release is shown as its kube-apiserver lists `scheduling.k8s.io` with the gang API's feature gates on and
its version enabled (`--runtime-config`): 1.35 serves `v1alpha1` (Workloads, pods naming them in
`spec.workloadRef`, no PodGroup object), 1.36 `v1alpha2` (Workloads and PodGroups, `minCount` immutable), 1.37
`v1beta1` (and `v1alpha3` when enabled); without the gate 1.37 lists no version but `v1` (a version whose
resources are all gated off is not installed). `DiscoveredNativeMode` reads them over HTTP as in a cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest

from extender.k8s.native_mode import DiscoveredNativeMode
from tests.unit.k8s.fake_api import FakeApiServer

GROUP = "scheduling.k8s.io"
PRIORITY_CLASSES = {"name": "priorityclasses", "singularName": "priorityclass", "namespaced": False}
WORKLOADS = {"name": "workloads", "singularName": "workload", "namespaced": True, "kind": "Workload"}
PODGROUPS = [
    {"name": "podgroups", "singularName": "podgroup", "namespaced": True, "kind": "PodGroup"},
    {"name": "podgroups/status", "singularName": "", "namespaced": True, "kind": "PodGroup"},
]
COMPOSITE = {"name": "compositepodgroups", "singularName": "compositepodgroup", "namespaced": True}


def release(served: Mapping[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The discovery documents of `scheduling.k8s.io` serving `served` (version → resources), `v1` preferred."""
    versions = [{"groupVersion": f"{GROUP}/{version}", "version": version} for version in served]
    documents: dict[str, dict[str, Any]] = {
        f"/apis/{GROUP}": {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": GROUP,
            "versions": versions,
            "preferredVersion": versions[0],
        }
    }
    for version, resources in served.items():
        documents[f"/apis/{GROUP}/{version}"] = {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{GROUP}/{version}",
            "resources": [{**resource, "verbs": ["get", "list", "watch"]} for resource in resources],
        }
    return documents


V1_35 = release({"v1": [PRIORITY_CLASSES], "v1alpha1": [PRIORITY_CLASSES, WORKLOADS]})
V1_36 = release({"v1": [PRIORITY_CLASSES], "v1alpha2": [WORKLOADS, *PODGROUPS]})
V1_37 = release({"v1": [PRIORITY_CLASSES], "v1beta1": [WORKLOADS, *PODGROUPS]})
V1_37_ALPHA_ONLY = release({"v1": [PRIORITY_CLASSES], "v1alpha3": [WORKLOADS, *PODGROUPS, COMPOSITE]})
V1_37_WITHOUT_THE_GATE = release({"v1": [PRIORITY_CLASSES]})


class ScriptedDiscovery:
    """A scripted API server answering `documents` (which a test may swap) and 404 for every other path."""

    def __init__(self, documents: dict[str, dict[str, Any]]) -> None:
        self.documents = documents
        self.failing = False
        self.server = FakeApiServer(self.answer)

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        if self.failing:
            return 503, [b'{"kind": "Status", "code": 503}']
        if path in self.documents:
            return 200, [orjson.dumps(self.documents[path])]
        return 404, [b'{"kind": "Status", "code": 404}']


@pytest.fixture
def discovery() -> Iterator[ScriptedDiscovery]:
    scripted = ScriptedDiscovery({})
    with scripted.server:
        yield scripted


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("documents", "active", "why"),
    [
        pytest.param(
            V1_35,
            False,
            "only as v1alpha1 (1.35: Workloads named by pods' spec.workloadRef, no PodGroup), not "
            "scheduling.k8s.io/v1beta1",
            id="1.35 serves v1alpha1 Workloads",
        ),
        pytest.param(
            V1_36,
            False,
            "only as v1alpha2 (1.36: PodGroup minCount immutable), not scheduling.k8s.io/v1beta1",
            id="1.36 serves v1alpha2",
        ),
        pytest.param(V1_37, True, "serves scheduling.k8s.io/v1beta1 Workloads and PodGroups", id="1.37"),
        pytest.param(V1_37_ALPHA_ONLY, False, "only as v1alpha3 (alpha, 1.37)", id="1.37 with v1alpha3 only"),
        pytest.param(
            V1_37_WITHOUT_THE_GATE, False, "does not serve scheduling.k8s.io/v1beta1", id="1.37 without the gate"
        ),
        pytest.param({}, False, "does not serve scheduling.k8s.io/v1beta1", id="no scheduling.k8s.io at all"),
    ],
)
def test_each_release_is_told_apart_by_its_discovery_documents(
    discovery: ScriptedDiscovery, documents: dict[str, dict[str, Any]], active: bool, why: str
) -> None:
    discovery.documents = documents
    status = DiscoveredNativeMode(discovery.server.api_client(), "on").refresh()
    assert (status.setting, status.active) == ("on", active)
    assert why in status.why, status.why


@pytest.mark.parametrize(("setting", "level"), [("on", logging.WARNING), ("auto", logging.INFO)])
def test_the_fallback_is_logged_once_a_warning_for_on_and_info_for_auto(
    discovery: ScriptedDiscovery, caplog: pytest.LogCaptureFixture, setting: str, level: int
) -> None:
    discovery.documents = V1_36
    clock = Clock()
    mode = DiscoveredNativeMode(discovery.server.api_client(), setting, recheck_s=30, clock=clock)
    with caplog.at_level(logging.INFO, logger="extender.k8s.native_mode"):
        for _ in range(3):
            mode.refresh()
            clock.now += 31
    said = [(record.levelno, record.getMessage()) for record in caplog.records]
    assert len(said) == 1 and said[0][0] == level, said
    assert "TFJobs keep the extender's own barrier" in said[0][1] and "v1alpha2" in said[0][1]


def test_a_cluster_that_starts_serving_v1beta1_is_noticed_at_the_next_look(discovery: ScriptedDiscovery) -> None:
    discovery.documents = V1_37_WITHOUT_THE_GATE
    clock = Clock()
    mode = DiscoveredNativeMode(discovery.server.api_client(), "auto", recheck_s=30, clock=clock)
    assert not mode.refresh().active
    discovery.documents = V1_37
    clock.now = 29
    assert not mode.refresh().active, "not asked again before recheck_s"
    clock.now = 30
    assert mode.refresh().active
    assert mode.status().active


def test_a_failed_look_keeps_the_last_answer_and_says_so(discovery: ScriptedDiscovery) -> None:
    discovery.documents = V1_37
    clock = Clock()
    mode = DiscoveredNativeMode(discovery.server.api_client(), "on", recheck_s=30, clock=clock)
    assert mode.refresh().active
    discovery.failing = True
    clock.now = 30
    status = mode.refresh()
    assert status.active and "discovery failed" in status.why and "503" in status.why, status.why


def test_off_never_asks(discovery: ScriptedDiscovery) -> None:
    discovery.documents = V1_37
    status = DiscoveredNativeMode(discovery.server.api_client(), "off").refresh()
    assert (status.active, status.why) == (False, "native_gangs is off")
    assert discovery.server.requests == []
