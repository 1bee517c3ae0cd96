"""The Kubernetes side of the native gangs' controller: each TFJob's `scheduling.k8s.io/v1beta1` Workload and
PodGroup, made, resized and deleted.

Both objects are named as the webhook named the gang in the TFJob's templates, labelled as the extender's
(`MANAGED_BY_LABEL`, and the TFJob's uid in `JOB_UID_LABEL`, so a TFJob deleted and created again under the same
name is told apart) and owned by the TFJob (an owner reference, so a cluster's garbage collector deletes them
with it even when the extender does not run). The Workload has one PodGroup template, `TEMPLATE`; the PodGroup
refers to it (`spec.workloadRef`) and carries its own copy of the gang policy and of the TFJob's PriorityClass,
as the API asks controllers to.
Writes are idempotent: a creation answered 409 counts as made, a deletion answered 404 as done. A resize
merge-patches the PodGroup's `gang.minCount` (mutable in 1.37), then the Workload's template; a PodGroup not
there is created. Made by `list_kept`'s label selector, the objects are found again after a restart.
"""

from __future__ import annotations

import logging
from typing import Any

from kubernetes.client import ApiClient

from extender.k8s.client import ApiCallError, api_call
from extender.k8s.native_mode import NATIVE_VERSION
from extender.k8s.reads import list_all
from extender.loops.native_gangs import KeptGang, NativeGangAction

log = logging.getLogger(__name__)

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "tfjob-extender"
JOB_UID_LABEL = "tfjob-extender.io/tfjob-uid"
TEMPLATE = "tfjob"
"""The Workload's one PodGroup template."""


def owner_reference(action: NativeGangAction) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "name": action.job.split("/", 1)[1],
        "uid": action.job_uid,
        "controller": True,
    }


def _metadata(action: NativeGangAction) -> dict[str, Any]:
    return {
        "name": action.name,
        "namespace": action.namespace,
        "labels": {MANAGED_BY_LABEL: MANAGED_BY, JOB_UID_LABEL: action.job_uid},
        "ownerReferences": [owner_reference(action)],
    }


def _gang(min_count: int) -> dict[str, Any]:
    return {"gang": {"minCount": min_count}}


def _priority(action: NativeGangAction) -> dict[str, Any]:
    """The gang's PriorityClass (immutable on both objects; the API server resolves the priority from it)."""
    return {"priorityClassName": action.priority_class} if action.priority_class else {}


def workload_manifest(action: NativeGangAction) -> dict[str, Any]:
    """The TFJob's Workload: one PodGroup template holding the gang policy and priority."""
    return {
        "apiVersion": NATIVE_VERSION,
        "kind": "Workload",
        "metadata": _metadata(action),
        "spec": {
            "controllerRef": {"apiGroup": "kubeflow.org", "kind": "TFJob", "name": action.job.split("/", 1)[1]},
            "podGroupTemplates": [{"name": TEMPLATE, "schedulingPolicy": _gang(action.min_count), **_priority(action)}],
        },
    }


def podgroup_manifest(action: NativeGangAction) -> dict[str, Any]:
    """The TFJob's PodGroup, made from the Workload's template."""
    return {
        "apiVersion": NATIVE_VERSION,
        "kind": "PodGroup",
        "metadata": _metadata(action),
        "spec": {
            "workloadRef": {"workloadName": action.name, "templateName": TEMPLATE},
            "schedulingPolicy": _gang(action.min_count),
            **_priority(action),
        },
    }


def kept_gang(workload: dict[str, Any]) -> KeptGang | None:
    """What a listed Workload says of the gang it was made for (None: not one of ours, or not readable)."""
    meta = workload.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or not labels.get(JOB_UID_LABEL):
        return None
    templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
    template = next((t for t in templates if isinstance(t, dict) and t.get("name") == TEMPLATE), {})
    min_count = ((template.get("schedulingPolicy") or {}).get("gang") or {}).get("minCount")
    return KeptGang(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        job_uid=str(labels[JOB_UID_LABEL]),
        min_count=min_count if isinstance(min_count, int) else 0,
    )


class KubeNativeGangs:
    """`NativeGangActuator` on the API server."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api = api_client

    def _call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        return api_call(self._api, method, path, body, content_type)

    def list_kept(self) -> dict[str, KeptGang]:
        workloads = list_all(
            self._api, f"/apis/{NATIVE_VERSION}/workloads", labelSelector=f"{MANAGED_BY_LABEL}={MANAGED_BY}"
        )
        kept = [gang for gang in map(kept_gang, workloads) if gang is not None]
        return {gang.key: gang for gang in kept}

    def create(self, action: NativeGangAction) -> None:
        self._create(_collection(action, "workloads"), workload_manifest(action))
        self._create(_collection(action, "podgroups"), podgroup_manifest(action))

    def resize(self, action: NativeGangAction) -> None:
        patch = {"spec": {"schedulingPolicy": _gang(action.min_count)}}
        try:
            self._call("PATCH", _path(action, "podgroups"), patch, "application/merge-patch+json")
        except ApiCallError as error:
            if error.status != 404:
                raise
            self._create(_collection(action, "podgroups"), podgroup_manifest(action))
        template = {"spec": {"podGroupTemplates": [{"name": TEMPLATE, "schedulingPolicy": _gang(action.min_count)}]}}
        try:
            self._call("PATCH", _path(action, "workloads"), template, "application/merge-patch+json")
        except ApiCallError as error:
            log.info("native gang %s: the Workload's template keeps its minCount: %s", action.key, error)

    def delete(self, action: NativeGangAction) -> None:
        for plural in ("podgroups", "workloads"):
            try:
                self._call("DELETE", _path(action, plural))
            except ApiCallError as error:
                if error.status != 404:
                    raise

    def _create(self, collection: str, manifest: dict[str, Any]) -> None:
        try:
            self._call("POST", collection, manifest)
        except ApiCallError as error:
            if error.status != 409:
                raise


def _collection(action: NativeGangAction, plural: str) -> str:
    return f"/apis/{NATIVE_VERSION}/namespaces/{action.namespace}/{plural}"


def _path(action: NativeGangAction, plural: str) -> str:
    return f"{_collection(action, plural)}/{action.name}"
