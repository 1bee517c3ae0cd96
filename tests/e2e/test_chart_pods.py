"""End to end: the chart's pods really created. On a control plane with kube-controller-manager (its
deployment, replica-set, garbage-collector, namespace, service-account, root-CA and disruption controllers;
no node lifecycle controller) and a default-profile kube-scheduler, `helm install` of the chart — the
repository's Helm, against the API server — into a namespace that enforces Pod Security `restricted` makes
every Deployment's pods, which the default scheduler binds to kwok's nodes and kwok runs. Pod Security is
shown to be enforced there: a privileged pod is refused. (kwok only pretends to run the containers; the
installed-form test, `test_installed.py`, runs each one's exact command as a process.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import ApiError, LocalControlPlane, build_control_plane, wait_until
from tests.helm import CHART, RELEASE, helm

pytestmark = pytest.mark.e2e

NAMESPACE = "scheduling-restricted"
"""The release namespace, made here with Pod Security `restricted` enforced."""
RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}


@pytest.fixture(scope="module")
def controlled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalControlPlane]:
    with LocalControlPlane(
        build_control_plane(),
        run_dir=tmp_path_factory.mktemp("chart-pods"),
        with_extender=False,
        with_scheduler=False,
        with_operator=False,
        with_controller_manager=True,
    ) as plane:
        yield plane


def privileged_pod() -> dict[str, Any]:
    container = {"name": "c", "image": "example.org/x:1", "securityContext": {"privileged": True}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "privileged"}, "spec": {"containers": [container]}}


def test_helm_install_creates_and_runs_the_charts_pods_under_restricted_pod_security(
    controlled: LocalControlPlane,
) -> None:
    plane = controlled
    nodes = ["node-a", "node-b"]
    for node in nodes:
        plane.create_node(node)
    plane.wait_nodes_ready(nodes)
    plane.post("/api/v1/namespaces", {"metadata": {"name": NAMESPACE, "labels": RESTRICTED}})
    with pytest.raises(ApiError) as refused:
        plane.post(f"/api/v1/namespaces/{NAMESPACE}/pods", privileged_pod())
    assert refused.value.status == 403 and "restricted" in str(refused.value), "Pod Security enforces restricted"

    install = [str(helm()), "install", RELEASE, str(CHART), "--namespace", NAMESPACE]
    install += ["--kubeconfig", str(plane.kubeconfig), "--set", "crds.install=false"]
    done = subprocess.run(install, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr

    deployments = plane.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments")["items"]
    wanted = {d["metadata"]["name"]: d["spec"]["replicas"] for d in deployments}
    assert set(wanted) == {f"{RELEASE}-scheduler", f"{RELEASE}-verbs", f"{RELEASE}-loops"}, wanted

    def running() -> list[dict[str, Any]] | None:
        pods = plane.pods(NAMESPACE)
        up = [p for p in pods if p["status"].get("phase") == "Running" and p["spec"].get("nodeName") in nodes]
        return up if len(up) == sum(wanted.values()) else None

    pods = wait_until("the chart's pods bound and running", running, 120)
    owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in pods}
    assert owners == {"ReplicaSet"}, "made by the replica-set controller, from the Deployments"
    for deployment in wanted:

        def counted(name: str = deployment) -> dict[str, Any] | None:
            status: dict[str, Any] = plane.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}")["status"]
            return status if status.get("replicas") == wanted[name] else None

        wait_until(f"{deployment}'s status counting its pods (the controller writes it after they run)", counted, 30)
    failed = [
        event["message"]
        for event in plane.events(NAMESPACE)
        if event["reason"] == "FailedCreate" and event["involvedObject"]["kind"] == "ReplicaSet"
    ]
    assert not failed, f"Pod Security refused a pod of the chart: {failed}"
