"""The local control plane, as part of the product: etcd, kube-apiserver, kwok, kube-scheduler with the
extender, and training-operator on 127.0.0.1 (`plane`), the raw-JSON client the tests and the demo drive
it with (`objects`), and `tfjob-extender dev-cluster up|down|status` (`cli`)."""

from extender.devcluster.objects import COMPLETE_AFTER, SCHEDULER_NAME, ApiError, ClusterClient, kwok_node
from extender.devcluster.plane import LEASE_NAMESPACE, LocalControlPlane, build_control_plane, local_control_plane
from extender.devcluster.processes import UNVERIFIED_TLS, ControlPlaneError, free_port, wait_until

__all__ = [
    "COMPLETE_AFTER",
    "LEASE_NAMESPACE",
    "SCHEDULER_NAME",
    "UNVERIFIED_TLS",
    "ApiError",
    "ClusterClient",
    "ControlPlaneError",
    "LocalControlPlane",
    "build_control_plane",
    "free_port",
    "kwok_node",
    "local_control_plane",
    "wait_until",
]
