"""The install manifests and the scheduler configuration parse, agree, and ask for no more than needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
SCHEDULER_CONFIG = REPO / "scheduler-config" / "kube-scheduler-config.yaml"


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


ALL_YAML = sorted([*MANIFESTS.rglob("*.yaml"), SCHEDULER_CONFIG])


@pytest.mark.parametrize("path", ALL_YAML, ids=lambda path: str(path.relative_to(REPO)))
def test_every_document_is_a_kubernetes_object(path: Path) -> None:
    for doc in documents(path):
        assert doc.get("apiVersion") and doc.get("kind"), path
        if doc["kind"] not in ("Kustomization", "KubeSchedulerConfiguration"):
            assert doc["metadata"]["name"], path


def test_the_mounted_scheduler_config_is_the_documented_one() -> None:
    assert documents(MANIFESTS / "kube-scheduler-config.yaml") == documents(SCHEDULER_CONFIG)


def test_the_extender_block_is_safe_for_gangs() -> None:
    (config,) = documents(SCHEDULER_CONFIG)
    (profile,) = config["profiles"]
    (extender,) = config["extenders"]
    assert profile["schedulerName"] == "tfjob-scheduler"
    assert profile["percentageOfNodesToScore"] == 100
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is False
    assert (extender["filterVerb"], extender["prioritizeVerb"], extender["preemptVerb"]) == (
        "filter",
        "prioritize",
        "preempt",
    )
    assert isinstance(extender["weight"], int) and extender["weight"] > 0
    assert "bindVerb" not in extender


def test_both_podgroup_dialects_are_installed() -> None:
    groups = {doc["spec"]["group"]: doc for path in (MANIFESTS / "crds").glob("*.yaml") for doc in documents(path)}
    assert set(groups) == {"scheduling.x-k8s.io", "scheduling.sigs.k8s.io"}
    for group, crd in groups.items():
        assert crd["metadata"]["name"] == f"podgroups.{group}"
        assert crd["spec"]["names"]["kind"] == "PodGroup"
    assert "api-approved.kubernetes.io" in groups["scheduling.sigs.k8s.io"]["metadata"]["annotations"]


def test_rbac_grants_no_wildcards() -> None:
    for doc in documents(MANIFESTS / "rbac.yaml"):
        for rule in doc.get("rules") or []:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule


def test_kustomization_lists_every_manifest() -> None:
    (kustomization,) = documents(MANIFESTS / "kustomization.yaml")
    listed = set(kustomization["resources"]) | {"kube-scheduler-config.yaml", "kustomization.yaml"}
    present = {str(path.relative_to(MANIFESTS)) for path in MANIFESTS.rglob("*.yaml")}
    assert listed == present
