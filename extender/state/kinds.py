"""The kinds of Kubernetes object the cluster model follows, and where the API server serves them.

One table drives every front end: the informers list and watch each path, the offline loader sorts a
snapshot file's objects into these kinds, and `/readyz` waits until each has synced. A kind marked
`optional` is served by a CustomResourceDefinition a cluster may not have installed; its absence counts
as "synced and empty" rather than blocking readiness.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    NODE = "Node"
    POD = "Pod"
    PODGROUP = "PodGroup"
    """`scheduling.x-k8s.io/v1alpha1`, as training-operator and scheduler-plugins create them."""
    PODGROUP_SIGS = "PodGroup.scheduling.sigs.k8s.io"
    """`scheduling.sigs.k8s.io/v1alpha1`, the dialect Koordinator documents."""
    TFJOB = "TFJob"
    PRIORITY_CLASS = "PriorityClass"
    NETWORK_TOPOLOGY = "ClusterNetworkTopology"
    """`scheduling.koordinator.sh/v1alpha1`: the network layers; only the object named `default` counts."""


@dataclass(frozen=True, slots=True)
class ResourceType:
    kind: Kind
    api_version: str
    """`apiVersion` as written in manifests, e.g. `v1` or `kubeflow.org/v1`."""
    plural: str
    namespaced: bool
    optional: bool

    @property
    def list_path(self) -> str:
        """The cluster-wide collection path, e.g. `/api/v1/pods` or `/apis/kubeflow.org/v1/tfjobs`."""
        prefix = "/api" if "/" not in self.api_version else "/apis"
        return f"{prefix}/{self.api_version}/{self.plural}"

    @property
    def manifest_kind(self) -> str:
        return self.kind.value.split(".", 1)[0]


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType(Kind.NODE, "v1", "nodes", namespaced=False, optional=False),
    ResourceType(Kind.POD, "v1", "pods", namespaced=True, optional=False),
    ResourceType(Kind.PODGROUP, "scheduling.x-k8s.io/v1alpha1", "podgroups", namespaced=True, optional=True),
    ResourceType(Kind.PODGROUP_SIGS, "scheduling.sigs.k8s.io/v1alpha1", "podgroups", namespaced=True, optional=True),
    ResourceType(Kind.TFJOB, "kubeflow.org/v1", "tfjobs", namespaced=True, optional=True),
    ResourceType(Kind.PRIORITY_CLASS, "scheduling.k8s.io/v1", "priorityclasses", namespaced=False, optional=False),
    ResourceType(
        Kind.NETWORK_TOPOLOGY,
        "scheduling.koordinator.sh/v1alpha1",
        "clusternetworktopologies",
        namespaced=False,
        optional=True,
    ),
)

BY_KIND: dict[Kind, ResourceType] = {rt.kind: rt for rt in RESOURCE_TYPES}


def kind_of_manifest(api_version: str, kind: str) -> Kind | None:
    """The model kind of a manifest with this `apiVersion` and `kind`, or None when the model ignores it."""
    for rt in RESOURCE_TYPES:
        if rt.api_version == api_version and rt.manifest_kind == kind:
            return rt.kind
    return None
