"""The kinds of Kubernetes object the cluster model follows, and where the API server serves them.

One table drives every front end: the informers list and watch each path, the offline loader sorts a
snapshot file's objects into these kinds, and `/readyz` waits until each has synced. A kind marked
`optional` is served by a CustomResourceDefinition (or an API version) a cluster may not have enabled;
its absence counts as "synced and empty" rather than blocking readiness. A kind with `older_versions`
is served under one of several versions of its API group, depending on the Kubernetes release: the
informer watches the version the API server serves (see `extender.k8s.discovery`), and a snapshot file
may use any of them.
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
    PODGROUP_K8S = "PodGroup.scheduling.k8s.io"
    """Kubernetes' own PodGroup (KEP-4671, `GenericWorkload` feature gate): `v1beta1` from 1.37, `v1alpha2`
    in 1.36; pods join it with `spec.schedulingGroup.podGroupName`."""
    TFJOB = "TFJob"
    PRIORITY_CLASS = "PriorityClass"
    NETWORK_TOPOLOGY = "ClusterNetworkTopology"
    """`scheduling.koordinator.sh/v1alpha1`: the network layers; only the object named `default` counts."""
    WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
    """`kueue.x-k8s.io/v1beta2` (`v1beta1` before Kueue v0.15): the priorities Kueue gives the Workloads of
    jobs labelled `kueue.x-k8s.io/priority-class`, which the priority boost must stay below."""


@dataclass(frozen=True, slots=True)
class ResourceType:
    kind: Kind
    api_version: str
    """`apiVersion` as written in manifests, e.g. `v1` or `kubeflow.org/v1`."""
    plural: str
    namespaced: bool
    optional: bool
    older_versions: tuple[str, ...] = ()
    """Other versions of the same API group serving this kind, newest first (`api_version` is the newest)."""

    @property
    def list_path(self) -> str:
        """The cluster-wide collection path, e.g. `/api/v1/pods` or `/apis/kubeflow.org/v1/tfjobs`."""
        prefix = "/api" if "/" not in self.api_version else "/apis"
        return f"{prefix}/{self.api_version}/{self.plural}"

    @property
    def manifest_kind(self) -> str:
        return self.kind.value.split(".", 1)[0]

    @property
    def api_group(self) -> str:
        """The API group, e.g. `scheduling.k8s.io`; empty for the core group."""
        return self.api_version.rpartition("/")[0]

    @property
    def api_versions(self) -> tuple[str, ...]:
        """Every `apiVersion` this kind is served under, newest first."""
        return (self.api_version, *(f"{self.api_group}/{version}" for version in self.older_versions))


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType(Kind.NODE, "v1", "nodes", namespaced=False, optional=False),
    ResourceType(Kind.POD, "v1", "pods", namespaced=True, optional=False),
    ResourceType(Kind.PODGROUP, "scheduling.x-k8s.io/v1alpha1", "podgroups", namespaced=True, optional=True),
    ResourceType(Kind.PODGROUP_SIGS, "scheduling.sigs.k8s.io/v1alpha1", "podgroups", namespaced=True, optional=True),
    ResourceType(
        Kind.PODGROUP_K8S,
        "scheduling.k8s.io/v1beta1",
        "podgroups",
        namespaced=True,
        optional=True,
        older_versions=("v1alpha3", "v1alpha2"),
    ),
    ResourceType(Kind.TFJOB, "kubeflow.org/v1", "tfjobs", namespaced=True, optional=True),
    ResourceType(Kind.PRIORITY_CLASS, "scheduling.k8s.io/v1", "priorityclasses", namespaced=False, optional=False),
    ResourceType(
        Kind.WORKLOAD_PRIORITY_CLASS,
        "kueue.x-k8s.io/v1beta2",
        "workloadpriorityclasses",
        namespaced=False,
        optional=True,
        older_versions=("v1beta1",),
    ),
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
        if api_version in rt.api_versions and rt.manifest_kind == kind:
            return rt.kind
    return None
