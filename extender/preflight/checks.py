"""The checks of `tfjob-extender preflight`, on the objects the API server gave (`Observed`), with no I/O.

`run_checks` answers, in this order: does training-operator name our scheduler (`--gang-scheduler-name`);
do the TFJob CRD and the chart's three CRDs exist, the latter owned by the release (else the `kubectl label`
and `kubectl annotate` that let Helm adopt them); is the release's kube-scheduler no newer than the API
server and at most `OLDER_MINORS_ALLOWED` minors older; may each identity do what its process does
(`rights`); and, when the release's MutatingWebhookConfiguration exists, can the API server reach the
webhook (`webhook`). Each finding carries the exact flag, command or value that fixes it. A source the API
server would not give (`Observed.unreadable`) fails the checks that need it rather than passing them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from extender.preflight import rights, webhook
from extender.preflight.install import (
    FAIL,
    OK,
    WARN,
    Finding,
    Install,
    Object,
    annotations_of,
    containers_of,
    find,
    labels_of,
    name_of,
    namespace_of,
    unreadable,
)

GANG_SCHEDULER_FLAG = "--gang-scheduler-name"
"""training-operator's flag naming the scheduler of the pods it creates (and making it create PodGroups)."""
OPERATOR_MARK = "training-operator"
"""What a container's image, command or arguments contain when it runs training-operator."""
OPERATOR_RELEASE = "v1.9.4"
"""The training-operator release the docs install."""
TFJOB_CRD = "tfjobs.kubeflow.org"
CHART_CRDS = (
    "podgroups.scheduling.x-k8s.io",
    "podgroups.scheduling.sigs.k8s.io",
    "clusternetworktopologies.scheduling.koordinator.sh",
)
"""The CRDs the chart installs (`templates/crds/`)."""
MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
"""The label Helm adopts an object by."""
RELEASE_NAME_ANNOTATION = "meta.helm.sh/release-name"
RELEASE_NAMESPACE_ANNOTATION = "meta.helm.sh/release-namespace"
SCHEDULER_CONTAINER = "kube-scheduler"
"""The container of the scheduler Deployment that runs kube-scheduler."""
OLDER_MINORS_ALLOWED = 1
"""Minor releases kube-scheduler may trail the API server by (Kubernetes' version skew policy), in minors."""
VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, slots=True)
class Observed:
    """What the API server gave: its version, every Deployment, the CRDs by name (None: not there), each
    identity's answered rights, the webhook's objects (None: no MutatingWebhookConfiguration of the release),
    and what it would not give (`deployments`, `crds`, `access`, `webhook` → why)."""

    server_version: str
    deployments: list[Object] = field(default_factory=list)
    crds: Mapping[str, Object | None] = field(default_factory=dict)
    access: rights.Answers = field(default_factory=dict)
    webhook: webhook.WebhookObjects | None = None
    unreadable: dict[str, str] = field(default_factory=dict)
    managed: tuple[str, ...] = ()
    """The namespaces the release's policy scopes it to (none: every namespace)."""


def run_checks(install: Install, observed: Observed) -> list[Finding]:
    findings: list[Finding] = []
    failed_read = observed.unreadable.get
    deployments_unread = failed_read("deployments")
    if deployments_unread:
        findings.append(unreadable("training-operator", "Deployments", deployments_unread))
    else:
        findings += check_training_operator(install, observed.deployments)
    if why := failed_read("crds"):
        findings.append(unreadable("crds", "CustomResourceDefinitions", why))
    else:
        findings += check_crds(install, observed.crds)
    if deployments_unread:
        findings.append(unreadable("kube-scheduler skew", "Deployments", deployments_unread))
    else:
        findings.append(check_scheduler_skew(install, observed.server_version, observed.deployments))
    if why := failed_read("access"):
        findings.append(unreadable("rights", "SubjectAccessReviews (create)", why))
    else:
        lease = rights.loops_lease(install, observed.deployments)
        findings += rights.check_rights(install, lease, observed.access, observed.managed)
    if why := failed_read("webhook"):
        findings.append(unreadable("webhook", "the admission webhook's objects", why))
    elif observed.webhook is not None:
        findings += webhook.check_webhook(install, observed.webhook)
    return findings


def any_failed(findings: list[Finding]) -> bool:
    """Whether a check failed (a warning is not a failure)."""
    return any(f.status == FAIL for f in findings)


# -- training-operator ----------------------------------------------------------------------------------------


def runs_operator(container: Object) -> bool:
    words = [
        str(container.get("image") or ""),
        *map(str, container.get("command") or ()),
        *map(str, container.get("args") or ()),
    ]
    return any(OPERATOR_MARK in word for word in words)


def gang_scheduler_name(container: Object) -> tuple[str, int, str] | None:
    """The scheduler name training-operator's flag gives, with where it is (`command` or `args`) and the index
    of the word holding the value; None without the flag."""
    for where in ("command", "args"):
        words = [str(word) for word in container.get(where) or ()]
        for index, word in enumerate(words):
            flag, equals, value = word.lstrip("-").partition("=")
            if word.startswith("-") and flag == GANG_SCHEDULER_FLAG.lstrip("-"):
                if equals:
                    return value, index, where
                if index + 1 < len(words):
                    return words[index + 1], index + 1, where
    return None


def check_training_operator(install: Install, deployments: list[Object]) -> list[Finding]:
    flag = f"{GANG_SCHEDULER_FLAG}={install.scheduler_name}"
    findings = []
    for deployment in deployments:
        for position, container in enumerate(containers_of(deployment)):
            if not runs_operator(container):
                continue
            where = f"Deployment {namespace_of(deployment)}/{name_of(deployment)}, container {container.get('name')}"
            given = gang_scheduler_name(container)
            if given is not None and given[0] == install.scheduler_name:
                findings.append(Finding(OK, "training-operator", f"{where} runs with {flag}"))
                continue
            found = f"{where} runs without {GANG_SCHEDULER_FLAG}" if given is None else f"{where} names {given[0]!r}"
            findings.append(Finding(FAIL, "training-operator", found, _flag_fix(deployment, position, container, flag)))
    if not findings:
        fix = f"install training-operator {OPERATOR_RELEASE} first, started with {flag} (docs/operations.md, 1)"
        findings.append(Finding(WARN, "training-operator", "no Deployment runs training-operator", fix))
    return findings


def _flag_fix(deployment: Object, position: int, container: Object, flag: str) -> str:
    """The `kubectl patch` that gives the container `flag`: added to its arguments, or put in place of the
    value it has."""
    given = gang_scheduler_name(container)
    base = f"/spec/template/spec/containers/{position}"
    operation: dict[str, object]
    if given is not None:
        _, index, where = given
        operation = {"op": "replace", "path": f"{base}/{where}/{index}", "value": flag}
        if not str((container.get(where) or [])[index]).startswith("-"):
            operation["value"] = flag.partition("=")[2]
    elif container.get("args"):
        operation = {"op": "add", "path": f"{base}/args/-", "value": flag}
    else:
        operation = {"op": "add", "path": f"{base}/args", "value": [flag]}
    patch = json.dumps([operation], separators=(",", ":"))
    target = f"-n {namespace_of(deployment)} deployment {name_of(deployment)}"
    command = f"kubectl patch {target} --type json -p {shlex.quote(patch)}"
    return f"give container {container.get('name')} {flag}: {command}"


# -- CRDs --------------------------------------------------------------------------------------------------------


def check_crds(install: Install, crds: Mapping[str, Object | None]) -> list[Finding]:
    findings = []
    if crds.get(TFJOB_CRD) is None:
        fix = f"install training-operator {OPERATOR_RELEASE}: its install brings the TFJob CRD"
        findings.append(Finding(FAIL, f"crd {TFJOB_CRD}", "missing", fix))
    else:
        findings.append(Finding(OK, f"crd {TFJOB_CRD}", "exists"))
    for name in CHART_CRDS:
        crd = crds.get(name)
        check = f"crd {name}"
        if crd is None:
            fix = f"{install.upgrade_command('--set crds.install=true')} (or kubectl apply -k manifests/crds/)"
            findings.append(Finding(FAIL, check, "missing", fix))
        elif install.crds_external:
            findings.append(Finding(OK, check, "exists (its owner is not this release: --crds-external)"))
        elif lacking := _ownership_lacking(install, crd):
            fix = (
                f"let Helm adopt it: kubectl label crd {name} --overwrite {'='.join(MANAGED_BY)} && "
                f"kubectl annotate crd {name} --overwrite {RELEASE_NAME_ANNOTATION}={install.release} "
                f"{RELEASE_NAMESPACE_ANNOTATION}={install.namespace} (or, when another owner keeps it, install "
                "with --set crds.install=false and run preflight with --crds-external)"
            )
            findings.append(Finding(FAIL, check, f"exists, not owned by release {install.release}: {lacking}", fix))
        else:
            findings.append(Finding(OK, check, f"exists, owned by release {install.namespace}/{install.release}"))
    return findings


def _ownership_lacking(install: Install, crd: Object) -> str:
    """What of Helm's ownership marks the CRD lacks or gives otherwise ("" when it has all three)."""
    labels, annotations = labels_of(crd), annotations_of(crd)
    wanted = {
        f"label {MANAGED_BY[0]}": (labels.get(MANAGED_BY[0]), MANAGED_BY[1]),
        f"annotation {RELEASE_NAME_ANNOTATION}": (annotations.get(RELEASE_NAME_ANNOTATION), install.release),
        f"annotation {RELEASE_NAMESPACE_ANNOTATION}": (
            annotations.get(RELEASE_NAMESPACE_ANNOTATION),
            install.namespace,
        ),
    }
    return ", ".join(
        f"{mark} {'missing' if has is None else f'is {has!r}'}" for mark, (has, want) in wanted.items() if has != want
    )


# -- kube-scheduler's version skew ----------------------------------------------------------------------------


def minor_version(text: str) -> tuple[int, int] | None:
    """(major, minor) of a version such as `v1.37.1` or `1.36`; None when there is none."""
    match = VERSION.match(text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def image_tag(image: str) -> str:
    """The tag of an image reference ("" without one): `registry.k8s.io/kube-scheduler:v1.37.1@sha256:…`
    → `v1.37.1`."""
    last = image.partition("@")[0].rsplit("/", 1)[-1]
    return last.partition(":")[2]


def check_scheduler_skew(install: Install, server_version: str, deployments: list[Object]) -> Finding:
    check = "kube-scheduler skew"
    name = install.scheduler_account
    deployment = find(deployments, install.namespace, name)
    if deployment is None:
        fix = f"install the chart (helm install {install.release} charts/tfjob-extender -n {install.namespace}), "
        fix += "or give the release's --namespace and --release"
        return Finding(FAIL, check, f"no Deployment {install.namespace}/{name}", fix)
    container = next((c for c in containers_of(deployment) if c.get("name") == SCHEDULER_CONTAINER), None)
    if container is None:
        return Finding(FAIL, check, f"Deployment {install.namespace}/{name} has no container {SCHEDULER_CONTAINER}")
    image = str(container.get("image") or "")
    server, scheduler = minor_version(server_version), minor_version(image_tag(image))
    found = f"API server {server_version}, kube-scheduler {image}"
    server_patch = VERSION.match(server_version.strip())
    tag = f"v{server_patch.group(1)}.{server_patch.group(2)}.{server_patch.group(3) or 0}" if server_patch else ""
    fix = install.upgrade_command(f"--set kubeScheduler.image.tag={tag}")
    if server is None or scheduler is None:
        return Finding(WARN, check, f"{found}: cannot tell kube-scheduler's minor from its tag", fix)
    if scheduler > server:
        return Finding(FAIL, check, f"{found}: kube-scheduler is newer than the API server", fix)
    if scheduler[0] < server[0] or server[1] - scheduler[1] > OLDER_MINORS_ALLOWED:
        older = f"kube-scheduler is more than {OLDER_MINORS_ALLOWED} minor older than the API server"
        return Finding(WARN, check, f"{found}: {older}", fix)
    return Finding(OK, check, found)
