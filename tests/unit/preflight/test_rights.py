"""Each identity's rights: what preflight asks, how it asks (SubjectAccessReview), what a denial says, and
that every right it asks for is one the chart grants through the binding it names."""

from __future__ import annotations

from typing import Any

import pytest

from extender.preflight import rights
from extender.preflight.checks import run_checks
from extender.preflight.install import FAIL, OK, Install
from extender.preflight.rights import Right, check_rights, loops_lease, needs, review
from tests.helm import Document, named, render
from tests.unit.preflight.objects import INSTALL, all_allowed, healthy, loops

LEASE = "tfjob-extender-loops"


def test_rights_read_as_kubectl_names_them() -> None:
    assert str(Right("create", "pods", subresource="eviction")) == "create pods/eviction (cluster-wide)"
    assert str(Right("list", "podgroups", "scheduling.x-k8s.io")) == "list podgroups.scheduling.x-k8s.io (cluster-wide)"
    lease = Right("update", "leases", "coordination.k8s.io", namespace="ml", name="tfjob-scheduler")
    assert str(lease) == "update leases.coordination.k8s.io tfjob-scheduler in ml"


def test_each_right_is_asked_as_the_service_accounts_user_and_groups() -> None:
    need = next(n for n in needs(Install(namespace="ml"), LEASE) if n.right.subresource == "eviction")
    assert review(Install(namespace="ml"), need) == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:ml:tfjob-extender-loops",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:ml", "system:authenticated"],
            "resourceAttributes": {"verb": "create", "group": "", "resource": "pods", "subresource": "eviction"},
        },
    }


def test_the_rights_asked_are_what_each_process_does() -> None:
    by_account: dict[str, set[str]] = {}
    for need in needs(INSTALL, LEASE):
        by_account.setdefault(need.account, set()).add(str(need.right))
    scheduler, extender, loop_rights = (by_account[a] for a in ("tfjob-extender-scheduler", "tfjob-extender", LEASE))
    assert "create pods/binding (cluster-wide)" in scheduler
    assert "get leases.coordination.k8s.io tfjob-scheduler in tfjob-system" in scheduler
    assert {"list nodes (cluster-wide)", "watch pods (cluster-wide)"} <= scheduler
    assert "patch podgroups.scheduling.sigs.k8s.io (cluster-wide)" in extender
    assert "watch clusternetworktopologies.scheduling.koordinator.sh (cluster-wide)" in extender
    assert not [right for right in extender if right.startswith(("create", "get", "update"))]
    assert extender < loop_rights
    assert {
        "create pods/eviction (cluster-wide)",
        "get tfjobs.kubeflow.org (cluster-wide)",
        "patch tfjobs.kubeflow.org (cluster-wide)",
        "create events (cluster-wide)",
        "update leases.coordination.k8s.io tfjob-extender-loops in tfjob-system",
    } <= loop_rights


def test_every_account_with_all_its_rights_passes() -> None:
    findings = check_rights(INSTALL, LEASE, all_allowed())
    assert [(f.status, f.check) for f in findings] == [
        (OK, "rights tfjob-system/tfjob-extender-scheduler"),
        (OK, "rights tfjob-system/tfjob-extender"),
        (OK, "rights tfjob-system/tfjob-extender-loops"),
    ]


def test_each_right_denied_fails_naming_the_account_the_verb_the_resource_and_the_binding() -> None:
    answers = all_allowed()
    for need in needs(INSTALL, LEASE):
        if need.binding.startswith("RoleBinding tfjob-system/tfjob-extender-loops-lease"):
            answers[(need.account, need.right)] = False
    findings = check_rights(INSTALL, LEASE, answers)
    failed = [f for f in findings if f.status == FAIL]
    assert [f.found for f in failed] == [
        "may not create leases.coordination.k8s.io in tfjob-system",
        "may not get leases.coordination.k8s.io tfjob-extender-loops in tfjob-system",
        "may not update leases.coordination.k8s.io tfjob-extender-loops in tfjob-system",
    ]
    assert failed[0].line() == (
        "fail  rights tfjob-system/tfjob-extender-loops: may not create leases.coordination.k8s.io in tfjob-system "
        "— fix: restore the chart's RoleBinding tfjob-system/tfjob-extender-loops-lease, which grants it: "
        "helm upgrade tfjob-extender charts/tfjob-extender -n tfjob-system --reset-then-reuse-values"
    )
    assert len(findings) == len(failed) + 2  # the two other accounts pass


def test_a_right_not_answered_counts_as_denied() -> None:
    findings = run_checks(INSTALL, healthy(access={}))
    assert len([f for f in findings if f.status == FAIL]) == len(needs(INSTALL, LEASE))


def test_the_loops_lease_is_the_one_their_deployment_names() -> None:
    assert loops_lease(INSTALL, [loops("shared-lease")]) == "shared-lease"
    assert loops_lease(INSTALL, []) == LEASE
    assert any(n.right.name == "shared-lease" for n in needs(INSTALL, "shared-lease"))


def covers(rule: dict[str, Any], right: Right) -> bool:
    resource = f"{right.resource}/{right.subresource}" if right.subresource else right.resource
    return (
        right.group in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and right.verb in rule.get("verbs", [])
        and (not rule.get("resourceNames") or right.name in rule["resourceNames"])
    )


@pytest.mark.parametrize("managed", [(), ("team-a", "team-b")], ids=["everywhere", "scoped"])
def test_every_right_asked_is_granted_by_the_chart_through_the_binding_named(managed: tuple[str, ...]) -> None:
    docs: list[Document] = render({"managedNamespaces": list(managed)} if managed else None)
    install = Install()
    policy = named(docs, "ConfigMap", f"{install.fullname}-policy")
    assert rights.managed_namespaces(policy) == managed, "what preflight reads from the release's policy"
    for need in needs(install, LEASE, managed):
        kind, name, *_ = need.binding.split()
        if need.binding.endswith(f"(ClusterRole {rights.KUBE_SCHEDULER_ROLE})"):
            binding = named(docs, kind, name)
            assert binding["roleRef"]["name"] == rights.KUBE_SCHEDULER_ROLE
            continue
        namespace, _, name = name.rpartition("/")
        (binding,) = [
            doc
            for doc in docs
            if doc["kind"] == kind
            and doc["metadata"]["name"] == name
            and doc["metadata"].get("namespace", "") == namespace
        ]
        assert {"kind": "ServiceAccount", "name": need.account, "namespace": install.namespace} in binding["subjects"]
        role = named(docs, binding["roleRef"]["kind"], binding["roleRef"]["name"])
        assert any(covers(rule, need.right) for rule in role["rules"]), (need.account, str(need.right))
        assert (
            not need.right.namespace
            or role["kind"] == "ClusterRole"
            or role["metadata"]["namespace"] == need.right.namespace
        )
    if managed:
        assert all(
            need.right.namespace in managed for need in needs(install, LEASE, managed) if need.right.verb == "patch"
        )
