"""Kubernetes' own gang API (KEP-4671, `scheduling.k8s.io`), read into the model's `GroupView`.

The third gang dialect, beside the two `v1alpha1` PodGroup CRDs. A Workload holds templates
(`spec.podGroupTemplates[].schedulingPolicy`); the runtime object is a standalone PodGroup carrying its
own `spec.schedulingPolicy` (copied from a template, or written directly), and a pod joins it with
`spec.schedulingGroup.podGroupName`. Only PodGroups and pods matter for scheduling, so the Workload is
never read. Field names, as the API defines them (`k8s.io/api/scheduling/<version>/types.go`):

- `spec.schedulingPolicy.gang.minCount`: the gang's minimum (`basic: {}` instead: no gang, minimum 1);
- `spec.workloadRef.{workloadName,templateName}` in `v1beta1` / `v1alpha3` (1.37) and
  `spec.podGroupTemplateRef.workload.{workloadName,podGroupTemplateName}` in `v1alpha2` (1.36): where the
  policy came from (not needed: the PodGroup carries its own copy);
- `spec.schedulingGroup.podGroupName` on a pod (`k8s.io/api/core/v1`, 1.36 and 1.37).

The API server drops `spec.schedulingGroup` from pods unless its `GenericWorkload` gate is on, and with
that gate kube-scheduler's GangScheduling plugin holds a gang PodGroup's pods back until `minCount` of
them exist and binds them all or none. So a gang PodGroup of this dialect is marked `gated_by_scheduler`:
the extender ranks, co-locates, preempts and scales it like any gang, and leaves that barrier alone (see
`PolicySettings.defer_to_scheduler_gang_barrier`). The annotations the other dialects read (GangGroup,
network-topology gather spec) are read here the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.policy.core.views import GroupView

API_GROUP = "scheduling.k8s.io"
DUMP_VERSION = "v1beta1"
"""The version a model dump writes this dialect's PodGroups in (the one 1.37 serves)."""

Json = Mapping[str, Any]


def min_count(obj: Json) -> int | None:
    """`spec.schedulingPolicy.gang.minCount`, or None for a PodGroup without a gang policy."""
    policy = (obj.get("spec") or {}).get("schedulingPolicy") or {}
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    if not isinstance(gang, Mapping):
        return None
    value = gang.get("minCount")
    try:
        return max(1, int(value)) if value is not None else 1
    except (TypeError, ValueError) as error:
        raise ValueError(f"spec.schedulingPolicy.gang.minCount={value!r} is not a number") from error


def group_view(obj: Json, base: GroupView) -> GroupView:
    """`base` (what every dialect shares: identity, annotations, creation time) with this dialect's
    minimum and barrier. A PodGroup with a `basic` policy is a group of one: no barrier anywhere."""
    count = min_count(obj)
    return GroupView(
        namespace=base.namespace,
        name=base.name,
        min_member=count or 1,
        api_group=API_GROUP,
        gang_group=base.gang_group,
        created=base.created,
        gather=base.gather,
        gated_by_scheduler=count is not None,
    )


def podgroup_manifest(group: GroupView, metadata: dict[str, Any]) -> dict[str, Any]:
    """A minimal `v1beta1` PodGroup for a dump: the gang policy (or `basic`) under `metadata`."""
    policy: dict[str, Any] = {"gang": {"minCount": group.min_member}} if group.gated_by_scheduler else {"basic": {}}
    return {
        "apiVersion": f"{API_GROUP}/{DUMP_VERSION}",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": {"schedulingPolicy": policy},
    }
