"""What each of the release's three identities must be allowed, and the check of the API server's answers.

The rights are those the chart grants its ServiceAccounts for what their processes do
(`templates/rbac-cluster.yaml`, `templates/rbac.yaml`, the chart README's "Who may do what"):
kube-scheduler binds pods, lists and watches nodes and pods, and holds its Lease (named the scheduler name)
in the release namespace; the extender lists and watches what it models and patches PodGroups of all three
gang dialects; the loops read the same, evict through `pods/eviction`, get and patch TFJobs, create Events
and hold their own Lease (`--lease-name` of the loops Deployment, else `<fullname>-loops`) and keep the
verbs' certificates in the Secret `<fullname>-verbs-tls`. Each right is
asked as a SubjectAccessReview (`review`) for the ServiceAccount's user and groups, so the answer is the
API server's authorizer's, whatever grants it; a right denied is one failing finding naming the account,
the verb and the resource, and the chart's binding that grants it. A release scoped to some namespaces
(`managedNamespaces`, read from its policy file: `managed_namespaces`) needs the writes in each of those
namespaces only, where its `<account>-writer` RoleBindings grant them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import yaml

from extender.preflight.install import FAIL, OK, Finding, Install, Object, containers_of, find

GANG_GROUPS = ("scheduling.x-k8s.io", "scheduling.sigs.k8s.io", "scheduling.k8s.io")
"""The API groups of the three PodGroup dialects."""
MODELLED = (
    ("", "nodes"),
    ("", "pods"),
    ("scheduling.k8s.io", "priorityclasses"),
    *((group, "podgroups") for group in GANG_GROUPS),
    ("kubeflow.org", "tfjobs"),
    ("scheduling.koordinator.sh", "clusternetworktopologies"),
    ("kueue.x-k8s.io", "workloadpriorityclasses"),
)
"""(API group, resource) the extender and the loops list and watch."""
LEASE_GROUP = "coordination.k8s.io"
LEASE_NAME_FLAG = "--lease-name"
"""The loops' flag naming their Lease."""
POLICY_KEY = "policy.yaml"
"""The key of the release's policy ConfigMap (`<fullname>-policy`) holding its policy file."""
KUBE_SCHEDULER_ROLE = "system:kube-scheduler"
"""The built-in ClusterRole the chart binds kube-scheduler's account to."""


@dataclass(frozen=True, slots=True)
class Right:
    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    """"": in every namespace (or a cluster-scoped resource)."""
    name: str = ""

    def attributes(self) -> dict[str, str]:
        """A SubjectAccessReview's `resourceAttributes`."""
        wanted = {"verb": self.verb, "group": self.group, "resource": self.resource}
        optional = {"subresource": self.subresource, "namespace": self.namespace, "name": self.name}
        return {**wanted, **{key: value for key, value in optional.items() if value}}

    def __str__(self) -> str:
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        resource += f"/{self.subresource}" if self.subresource else ""
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {resource}{named} " + (f"in {self.namespace}" if self.namespace else "(cluster-wide)")


@dataclass(frozen=True, slots=True)
class Need:
    """A right an account needs, and the chart's binding that grants it."""

    account: str
    right: Right
    binding: str


Answers = dict[tuple[str, Right], bool]
"""(account, right) → whether the API server allows it."""


def loops_lease(install: Install, deployments: list[Object]) -> str:
    """The loops' Lease: `--lease-name` of the loops Deployment, else `<fullname>-loops` (the chart's default)."""
    deployment = find(deployments, install.namespace, install.loops_account)
    for container in containers_of(deployment) if deployment is not None else []:
        words = [str(word) for word in container.get("args") or ()]
        for index, word in enumerate(words):
            if word.startswith(f"{LEASE_NAME_FLAG}="):
                return word.partition("=")[2]
            if word == LEASE_NAME_FLAG and index + 1 < len(words):
                return words[index + 1]
    return install.loops_account


def _kept(account: str, resource: str, group: str, namespace: str, name: str, binding: str) -> list[Need]:
    """Keeping one object: creating it in the namespace (`create` cannot be limited by name), reading and
    updating it by name."""
    return [
        Need(account, Right("create", resource, group, namespace=namespace), binding),
        *(
            Need(account, Right(verb, resource, group, namespace=namespace, name=name), binding)
            for verb in ("get", "update")
        ),
    ]


def _lease(account: str, namespace: str, name: str, binding: str) -> list[Need]:
    """Holding a Lease."""
    return _kept(account, "leases", LEASE_GROUP, namespace, name, binding)


def _reads(account: str, binding: str) -> list[Need]:
    return [
        Need(account, Right(verb, resource, group), binding)
        for group, resource in MODELLED
        for verb in ("list", "watch")
    ]


def managed_namespaces(policy: Object | None) -> tuple[str, ...]:
    """The namespaces the release's policy ConfigMap scopes it to (none: every namespace, or unreadable)."""
    text = ((policy or {}).get("data") or {}).get(POLICY_KEY)
    try:
        loaded = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return ()
    names = loaded.get("managed_namespaces") if isinstance(loaded, dict) else None
    return tuple(str(name) for name in names) if isinstance(names, list) else ()


def _writes(account: str, rights: list[Right], binding: str, managed: tuple[str, ...]) -> list[Need]:
    """The rights to write, everywhere through `binding`, or with `managed` in each of those namespaces
    through the account's writer RoleBinding there."""
    if not managed:
        return [Need(account, right, binding) for right in rights]
    writer = f"{account}-writer"
    return [
        Need(account, replace(right, namespace=namespace), f"RoleBinding {namespace}/{writer} (ClusterRole {writer})")
        for namespace in managed
        for right in rights
    ]


def needs(install: Install, lease: str, managed: tuple[str, ...] = ()) -> list[Need]:
    """Every right of the three accounts, kube-scheduler's first; `lease`: the loops' Lease; `managed`: the
    namespaces the release is scoped to (none: all)."""
    scheduler, extender, loops, namespace = (
        install.scheduler_account,
        install.extender_account,
        install.loops_account,
        install.namespace,
    )
    as_scheduler = f"ClusterRoleBinding {scheduler}-as-kube-scheduler (ClusterRole {KUBE_SCHEDULER_ROLE})"
    extender_binding = f"ClusterRoleBinding {extender} (ClusterRole {extender})"
    loops_binding = f"ClusterRoleBinding {loops} (ClusterRole {loops})"
    patches = [Right("patch", "podgroups", group) for group in GANG_GROUPS]
    return [
        Need(scheduler, Right("create", "pods", subresource="binding"), as_scheduler),
        *(
            Need(scheduler, Right(verb, resource), as_scheduler)
            for resource in ("nodes", "pods")
            for verb in ("list", "watch")
        ),
        *_lease(scheduler, namespace, install.scheduler_name, f"RoleBinding {namespace}/{scheduler}-lease"),
        *_reads(extender, extender_binding),
        *_writes(extender, patches, extender_binding, managed),
        *_reads(loops, loops_binding),
        *_writes(
            loops,
            [
                *patches,
                Right("create", "pods", subresource="eviction"),
                *(Right(verb, "tfjobs", "kubeflow.org") for verb in ("get", "patch")),
                Right("create", "events"),
            ],
            loops_binding,
            managed,
        ),
        *_lease(loops, namespace, lease, f"RoleBinding {namespace}/{loops}-lease"),
        *_kept(
            loops,
            "secrets",
            "",
            namespace,
            f"{install.fullname}-verbs-tls",
            f"RoleBinding {namespace}/{loops}-verbs-certificates",
        ),
    ]


def user_of(install: Install, account: str) -> tuple[str, list[str]]:
    """The user name and groups the API server gives a token of the ServiceAccount."""
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{install.namespace}", "system:authenticated"]
    return f"system:serviceaccount:{install.namespace}:{account}", groups


def review(install: Install, need: Need) -> dict[str, Any]:
    """The SubjectAccessReview that asks whether the account may do what `need` says."""
    user, groups = user_of(install, need.account)
    spec = {"user": user, "groups": groups, "resourceAttributes": need.right.attributes()}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def check_rights(install: Install, lease: str, answers: Answers, managed: tuple[str, ...] = ()) -> list[Finding]:
    """One failing finding per right denied (or not answered), and one passing finding per account that has
    them all."""
    findings = []
    wanted = needs(install, lease, managed)
    for account in (install.scheduler_account, install.extender_account, install.loops_account):
        own = [need for need in wanted if need.account == account]
        check = f"rights {install.namespace}/{account}"
        denied = [need for need in own if not answers.get((account, need.right), False)]
        for need in denied:
            fix = f"restore the chart's {need.binding}, which grants it: {install.upgrade_command()}"
            findings.append(Finding(FAIL, check, f"may not {need.right}", fix))
        if not denied:
            findings.append(Finding(OK, check, f"has all {len(own)} rights its process needs"))
    return findings
