"""kube-controller-manager in the local control plane, with only the controllers a chart install needs, and a
kube-scheduler of the default profile for the pods they make.

Off by default (`LocalControlPlane(with_controller_manager=True)`, `dev-cluster up --with-controllers`): the
end-to-end tests make their pods themselves, often owned by objects that never existed, which the garbage
collector would delete. On, `helm install` creates the chart's Deployments' pods as a cluster would: the
deployment and replica-set controllers make them, the default scheduler binds them to kwok's nodes and kwok
runs them. The node lifecycle controllers are not among `CONTROLLERS` (they would evict kwok nodes whose
heartbeats lag), nor the service-account token controller (projected tokens come from TokenRequest).
"""

from __future__ import annotations

from typing import Any

from extender.devcluster.access import PlaneAccess
from extender.devcluster.processes import UNVERIFIED_TLS, free_port, wait_until

CONTROLLERS = (
    "deployment-controller",
    "replicaset-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "disruption-controller",
)
"""What a chart install needs: Deployments' pods, their owners' clean-up, namespaces, the `default`
ServiceAccount and the `kube-root-ca.crt` ConfigMap of every namespace, and PodDisruptionBudgets' status."""
DEFAULT_SCHEDULER = "default-scheduler"


def start_controller_manager(plane: PlaneAccess) -> None:
    """kube-controller-manager with `CONTROLLERS`, as the administrator, ready once its /healthz answers."""
    port = free_port()
    plane.spawn(
        "kube-controller-manager",
        [
            str(plane.bin / "kube-controller-manager"),
            f"--kubeconfig={plane.kubeconfig}",
            f"--authentication-kubeconfig={plane.kubeconfig}",
            f"--authorization-kubeconfig={plane.kubeconfig}",
            f"--controllers={','.join(CONTROLLERS)}",
            f"--root-ca-file={plane.certificate_authority}",
            "--use-service-account-credentials=false",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--v=1",
        ],
    )
    wait_until(
        "kube-controller-manager /healthz",
        lambda: plane.probe(f"https://127.0.0.1:{port}/healthz", context=UNVERIFIED_TLS),
        60,
    )


def default_scheduler_settings(plane: PlaneAccess) -> dict[str, Any]:
    """A KubeSchedulerConfiguration of the default profile alone, for pods that name no scheduler."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(plane.kubeconfig)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": DEFAULT_SCHEDULER}],
    }
