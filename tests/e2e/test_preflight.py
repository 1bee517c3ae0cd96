"""End to end: `tfjob-extender preflight` against a real API server with RBAC on, the chart applied as `helm
install` leaves it.

A control plane of its own for this module (`install`): etcd and kube-apiserver, no extender, kube-scheduler
or training-operator running. The chart is rendered by the repository's Helm for the control plane's
Kubernetes version with its defaults, every object given Helm's ownership marks (the label and the two
`meta.helm.sh` annotations `helm install` adds), and applied with the administrator's credentials, the
Deployments included (nothing runs their pods: preflight reads objects, not processes). A stand-in
training-operator Deployment is created with `--gang-scheduler-name=tfjob-scheduler`. Preflight runs as a
subprocess with the administrator's kubeconfig: the healthy install passes; then one thing at a time is
broken — training-operator's flag, the loops' ClusterRoleBinding, kube-scheduler's version, a CRD's
ownership — and each run fails naming the fix; where the fix is a command, running it exactly as printed
makes the next run pass.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from extender.devcluster import LocalControlPlane, build_control_plane, wait_until
from tests.e2e.conftest import skip_without_control_plane
from tests.helm import RELEASE, Document, named, render

pytestmark = pytest.mark.e2e

NAMESPACE = "tfjob-system"
"""The release's namespace."""
OPERATOR_NAMESPACE = "kubeflow"
OPERATOR_FLAG = "--gang-scheduler-name=tfjob-scheduler"
OWNERSHIP_ANNOTATIONS = {"meta.helm.sh/release-name": RELEASE, "meta.helm.sh/release-namespace": NAMESPACE}
"""What `helm install` adds to every object of the release (`helm template` leaves it out)."""
PREFLIGHT_TIMEOUT_S = 120
"""Seconds one preflight run may take."""
RBAC_SETTLE_S = 30
"""Seconds the API server's authorizer has to see a deleted or restored binding."""
LOOPS_BINDING = "tfjob-extender-loops"
"""The loops' ClusterRoleBinding (the chart's `rbac-cluster.yaml`)."""


@dataclass
class Install:
    plane: LocalControlPlane
    docs: list[Document]

    def preflight(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "extender", "preflight", "--kubeconfig", str(self.plane.kubeconfig), *args]
        env = {**os.environ, "PYTHONPATH": str(self.plane.source.root)}
        return subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=PREFLIGHT_TIMEOUT_S, env=env
        )

    def kubectl(self, *args: str, manifest: str | None = None) -> str:
        command = [str(self.plane.bin / "kubectl"), "--kubeconfig", str(self.plane.kubeconfig), *args]
        done = subprocess.run(command, input=manifest, capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def apply(self, docs: list[Document]) -> None:
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", manifest=json.dumps(listed(docs)))

    def run_fix(self, fix: str) -> None:
        """Run the kubectl commands of a finding's fix (`… : kubectl … && kubectl …`) as printed."""
        commands = fix.partition("kubectl ")[2].partition(" (or")[0]
        for command in commands.split(" && "):
            words = shlex.split(command.removeprefix("kubectl "))
            self.kubectl(*words)

    def may(self, account: str, verb: str, resource: str, subresource: str = "") -> bool:
        attributes = {"verb": verb, "resource": resource, "subresource": subresource}
        spec = {"user": f"system:serviceaccount:{NAMESPACE}:{account}", "resourceAttributes": attributes}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        answer = self.plane.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
        return bool(answer["status"].get("allowed"))


def listed(docs: list[Document]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": docs}


def owned(doc: Document) -> Document:
    """The object as `helm install` creates it: with the release's ownership annotations."""
    metadata = {
        **doc["metadata"],
        "annotations": {**(doc["metadata"].get("annotations") or {}), **OWNERSHIP_ANNOTATIONS},
    }
    return {**doc, "metadata": metadata}


def training_operator(args: list[str]) -> Document:
    container = {"name": "training-operator", "image": "kubeflow/training-operator:v1-855e096", "command": ["/manager"]}
    labels = {"control-plane": "kubeflow-training-operator"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "training-operator", "namespace": OPERATOR_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{**container, "args": args}]}},
        },
    }


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    skip_without_control_plane()
    run_dir = tmp_path_factory.mktemp("preflight")
    with LocalControlPlane(
        build_control_plane(), run_dir=run_dir, with_extender=False, with_scheduler=False, with_operator=False
    ) as plane:
        docs = [owned(doc) for doc in render(kube_version=plane.kubernetes_version()) if doc["kind"] != "Pod"]
        installed = Install(plane, docs)
        installed.apply(docs)
        plane.create_namespace(OPERATOR_NAMESPACE)
        installed.apply([training_operator([OPERATOR_FLAG])])
        yield installed


def failures(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("fail  ")]


def fix_of(line: str) -> str:
    return line.partition(" — fix: ")[2]


def assert_passes(install: Install) -> None:
    done = install.preflight()
    assert done.returncode == 0, done.stdout + done.stderr
    assert not failures(done)


def test_a_healthy_install_passes(install: Install) -> None:
    done = install.preflight()
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "ok    training-operator: Deployment kubeflow/training-operator, container training-operator runs with "
        f"{OPERATOR_FLAG}"
    )
    version = install.plane.kubernetes_version()
    assert (
        f"ok    kube-scheduler skew: API server {version}, kube-scheduler registry.k8s.io/kube-scheduler:"
        in done.stdout
    )
    for account in ("tfjob-extender-scheduler", "tfjob-extender", "tfjob-extender-loops"):
        assert f"ok    rights {NAMESPACE}/{account}: has all " in done.stdout
    assert lines[-1].startswith(f"preflight of {NAMESPACE}/{RELEASE}: 0 fail, 0 warn, ")
    report = json.loads(install.preflight("--json").stdout)
    assert report["exitCode"] == 0 and {f["status"] for f in report["findings"]} == {"ok"}


def test_training_operator_without_the_flag_fails_and_the_printed_patch_fixes_it(install: Install) -> None:
    install.apply([training_operator(["--enable-scheme=tfjob"])])
    done = install.preflight()
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = failures(done)
    assert line.startswith(
        "fail  training-operator: Deployment kubeflow/training-operator, container training-operator runs without "
        "--gang-scheduler-name — fix: give container training-operator --gang-scheduler-name=tfjob-scheduler: "
        "kubectl patch -n kubeflow deployment training-operator --type json -p "
    )
    install.run_fix(fix_of(line))
    operator = install.plane.get(f"/apis/apps/v1/namespaces/{OPERATOR_NAMESPACE}/deployments/training-operator")
    assert operator["spec"]["template"]["spec"]["containers"][0]["args"] == ["--enable-scheme=tfjob", OPERATOR_FLAG]
    assert_passes(install)


def test_the_loops_without_their_cluster_role_binding_fail_per_right(install: Install) -> None:
    binding = named(install.docs, "ClusterRoleBinding", LOOPS_BINDING)
    install.plane.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{LOOPS_BINDING}")
    try:
        wait_until(
            "the eviction right gone",
            lambda: not install.may(LOOPS_BINDING, "create", "pods", "eviction"),
            RBAC_SETTLE_S,
        )
        done = install.preflight()
        assert done.returncode == 1, done.stdout + done.stderr
        lines = failures(done)
        assert all(line.startswith(f"fail  rights {NAMESPACE}/tfjob-extender-loops: may not ") for line in lines)
        found = [line.partition(": may not ")[2].partition(" — fix")[0] for line in lines]
        assert {"create pods/eviction (cluster-wide)", "patch tfjobs.kubeflow.org (cluster-wide)"} <= set(found)
        assert "create events (cluster-wide)" in found
        assert not [right for right in found if "leases" in right]  # granted by the RoleBinding, still there
        assert fix_of(lines[0]) == (
            f"restore the chart's ClusterRoleBinding {LOOPS_BINDING} (ClusterRole {LOOPS_BINDING}), which grants it: "
            f"helm upgrade {RELEASE} charts/tfjob-extender -n {NAMESPACE} --reset-then-reuse-values"
        )
    finally:
        install.apply([binding])
    wait_until(
        "the eviction right back", lambda: install.may(LOOPS_BINDING, "create", "pods", "eviction"), RBAC_SETTLE_S
    )
    assert_passes(install)


def test_a_kube_scheduler_newer_than_the_api_server_fails(install: Install) -> None:
    version = install.plane.kubernetes_version()
    major, minor, *_ = version.lstrip("v").split(".")
    newer = f"registry.k8s.io/kube-scheduler:v{major}.{int(minor) + 1}.0"
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/tfjob-extender-scheduler"
    original = install.plane.get(path)["spec"]["template"]["spec"]["containers"]
    (image,) = [c["image"] for c in original if c["name"] == "kube-scheduler"]

    def set_image(to: str) -> None:
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "kube-scheduler", "image": to}]}}}}
        install.plane.request("PATCH", path, patch, content_type="application/strategic-merge-patch+json")

    set_image(newer)
    try:
        done = install.preflight()
        assert done.returncode == 1, done.stdout + done.stderr
        (line,) = failures(done)
        assert line == (
            f"fail  kube-scheduler skew: API server {version}, kube-scheduler {newer}: kube-scheduler is newer than "
            f"the API server — fix: helm upgrade {RELEASE} charts/tfjob-extender -n {NAMESPACE} "
            f"--reset-then-reuse-values --set kubeScheduler.image.tag={version}"
        )
    finally:
        set_image(image)
    assert_passes(install)


def test_a_crd_the_release_does_not_own_fails_and_the_printed_adoption_fixes_it(install: Install) -> None:
    name = "podgroups.scheduling.x-k8s.io"
    patch = {"metadata": {"annotations": {"meta.helm.sh/release-name": None}}}
    install.plane.merge_patch(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", patch)
    done = install.preflight()
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = failures(done)
    assert line.startswith(
        f"fail  crd {name}: exists, not owned by release {RELEASE}: annotation meta.helm.sh/release-name missing"
    )
    assert f"kubectl annotate crd {name} --overwrite meta.helm.sh/release-name={RELEASE}" in line
    install.run_fix(fix_of(line))
    assert_passes(install)
