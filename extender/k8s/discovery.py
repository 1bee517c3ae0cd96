"""Which version of its API group the API server serves a kind under.

Kubernetes' own PodGroup is `scheduling.k8s.io/v1alpha2` in 1.36 and `v1beta1` (and `v1alpha3`) in 1.37,
and a cluster serves it only when it enables it (feature gate `GenericWorkload` plus `--runtime-config`).
Before listing such a kind (one with `older_versions`), the informer reads the API server's discovery
documents: `/apis/<group>` for the versions served, then `/apis/<group>/<version>` for each version's
resources, newest version first, and watches the first that serves the resource. A group, version or
resource that is not served is no error: the kind counts as synced and empty, and is looked for again
later. A kind with a single version is used as it is, without a request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from extender.state.kinds import ResourceType

FetchJson = Callable[[str], Mapping[str, Any] | None]
"""GET a path of the API server: the decoded JSON document, or None when it answers 404."""


def served_resource_type(resource_type: ResourceType, fetch: FetchJson) -> ResourceType | None:
    """`resource_type` at the newest version the API server serves it under, or None when it serves none."""
    if not resource_type.older_versions:
        return resource_type
    group = fetch(f"/apis/{resource_type.api_group}")
    if group is None:
        return None
    served = {str(entry.get("groupVersion")) for entry in group.get("versions") or []}
    for api_version in resource_type.api_versions:
        if api_version not in served:
            continue
        resources = fetch(f"/apis/{api_version}") or {}
        if any(entry.get("name") == resource_type.plural for entry in resources.get("resources") or []):
            return replace(resource_type, api_version=api_version, older_versions=())
    return None
