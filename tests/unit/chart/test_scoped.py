"""`managedNamespaces`: the extender manages TFJobs in the namespaces listed only, and its processes may
write there only — evictions, TFJob and PodGroup patches and Events through RoleBindings in each, the reads
cluster-wide (every pod takes room on its node) — and the native gangs' webhook sees only their TFJobs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.helm import RELEASE, Document, RenderRefused, named, of_kind, render

TEAMS = ["team-a", "team-b"]
WRITES = {
    ("", "pods/eviction", "create"),
    ("kubeflow.org", "tfjobs", "patch"),
    ("kubeflow.org", "tfjobs", "get"),
    ("", "events", "create"),
    *(("scheduling.x-k8s.io", "podgroups", "patch"), ("scheduling.sigs.k8s.io", "podgroups", "patch")),
    ("scheduling.k8s.io", "podgroups", "patch"),
}


def rules_of(role: Document) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def cluster_wide(docs: list[Document], account: str) -> set[tuple[str, str, str]]:
    """What ClusterRoleBindings give `account`."""
    roles = {role["metadata"]["name"]: role for role in of_kind(docs, "ClusterRole")}
    return {
        right
        for binding in of_kind(docs, "ClusterRoleBinding")
        if any(subject["name"] == account for subject in binding["subjects"]) and binding["roleRef"]["name"] in roles
        for right in rules_of(roles[binding["roleRef"]["name"]])
    }


def in_namespace(docs: list[Document], account: str, namespace: str) -> set[tuple[str, str, str]]:
    """What RoleBindings in `namespace` give `account` through ClusterRoles."""
    roles = {role["metadata"]["name"]: role for role in of_kind(docs, "ClusterRole")}
    return {
        right
        for binding in of_kind(docs, "RoleBinding")
        if binding["metadata"]["namespace"] == namespace
        and any(subject["name"] == account for subject in binding["subjects"])
        and binding["roleRef"]["kind"] == "ClusterRole"
        for right in rules_of(roles[binding["roleRef"]["name"]])
    }


def policy_of(docs: list[Document]) -> dict[str, Any]:
    (config,) = [doc for doc in of_kind(docs, "ConfigMap") if "policy.yaml" in (doc.get("data") or {})]
    return dict(yaml.safe_load(config["data"]["policy.yaml"]))


def test_listed_namespaces_confine_every_write_and_keep_the_reads_cluster_wide() -> None:
    loops, extender = f"{RELEASE}-loops", RELEASE
    every = render()
    assert cluster_wide(every, loops) >= WRITES, "unscoped: the loops write everywhere"
    scoped = render({"managedNamespaces": TEAMS})
    assert not WRITES & cluster_wide(scoped, loops) and not WRITES & cluster_wide(scoped, extender)
    assert ("", "pods", "watch") in cluster_wide(scoped, loops) and ("", "pods", "list") in cluster_wide(
        scoped, extender
    )
    for team in TEAMS:
        assert in_namespace(scoped, loops, team) == WRITES
        assert in_namespace(scoped, extender, team) == {w for w in WRITES if w[1] == "podgroups"}
    assert not in_namespace(scoped, loops, "default"), "nowhere else"
    assert policy_of(scoped)["managed_namespaces"] == TEAMS and "managed_namespaces" not in policy_of(every)


def test_the_webhook_sees_only_the_listed_namespaces_and_the_policy_is_set_by_the_value_alone() -> None:
    docs = render({"managedNamespaces": TEAMS, "nativeGangs": "on"})
    (hook,) = named(docs, "MutatingWebhookConfiguration", RELEASE)["webhooks"]
    assert hook["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": TEAMS}
    ]
    assert (
        "namespaceSelector"
        not in named(render({"nativeGangs": "on"}), "MutatingWebhookConfiguration", RELEASE)["webhooks"][0]
    )
    with pytest.raises(RenderRefused, match="set managedNamespaces instead"):
        render({"policy": {"managed_namespaces": TEAMS}})
    with pytest.raises(RenderRefused, match="managedNamespaces"):
        render({"managedNamespaces": ["Not_A_Namespace"]})
