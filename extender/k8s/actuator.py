"""The Kubernetes side of the actuator: TFJob worker patches, pod evictions, Events.

- A resize reads the TFJob, patches the replica count under whatever key the stored spec uses for the
  Worker replicas (training-operator accepts `worker` as well as `Worker`), with the resourceVersion it
  read as a precondition, and retries on a conflict. It re-reads the TFJob on every attempt and changes
  nothing unless the Worker replicas are still the count the plan was made from, so a retry after a
  conflict, or a second instance acting on a stale model, never applies the same step twice.
- An eviction goes through the pod's `eviction` subresource (`policy/v1` Eviction, the pod's UID as a
  precondition, so a pod recreated under the same name is never hit): the API server refuses it with
  429 while a PodDisruptionBudget allows no disruption (`EvictionRefused`), and otherwise marks the pod
  with a `DisruptionTarget` condition itself. A dry run (`dryRun: [All]`) asks the same question
  without evicting. A pod already gone (404, or 409 for another UID) counts as evicted.
- Restarting a worker evicts it the same way; training-operator recreates any index below `replicas`
  under the same name (an empty bucket means create).
- Events are core/v1 Events from the component `tfjob-extender`.
- A PodGroup's annotations are merge-patched in the API group the PodGroup was read from.
- A suspension (or resumption) merge-patches the TFJob's `spec.runPolicy.suspend` together with its
  annotations: training-operator deletes a suspended job's pods and recreates them on resumption.
Failures are logged and raised; the caller decides whether to retry.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from extender.k8s.client import ApiCallError, api_call
from extender.k8s.plans import group_path
from extender.loops.actuator import EvictionRefused, Resize
from extender.policy.core.views import GroupView, PodView, Role

log = logging.getLogger(__name__)

COMPONENT = "tfjob-extender"
CONFLICT_RETRIES = 5


class KubeActuator:
    def __init__(self, api_client: ApiClient) -> None:
        self._api = api_client

    def _call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        return api_call(self._api, method, path, body, content_type)

    def resize_workers(
        self, job: str, expected: int, replicas: int, annotations: Mapping[str, str], reason: str
    ) -> Resize:
        namespace, name = job.split("/", 1)
        path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}"
        conflicts = 0
        while True:
            current = self._call("GET", path)
            specs = current["spec"]["tfReplicaSpecs"]
            key = next((k for k in specs if k.lower() == Role.WORKER.value), "Worker")
            observed = (specs.get(key) or {}).get("replicas", 1)
            if observed != expected:
                log.info("not resizing %s: %d workers, planned from %d", job, observed, expected)
                return Resize(False, observed, conflicts)
            patch = {
                "metadata": {
                    "resourceVersion": current["metadata"]["resourceVersion"],
                    "annotations": dict(annotations),
                },
                "spec": {"tfReplicaSpecs": {key: {"replicas": replicas}}},
            }
            try:
                self._call("PATCH", path, patch, content_type="application/merge-patch+json")
            except ApiCallError as error:
                if error.status != 409 or conflicts >= CONFLICT_RETRIES - 1:
                    raise
                conflicts += 1
                time.sleep(0.05 * conflicts)
                continue
            log.info("resized %s from %d to %d workers: %s", job, expected, replicas, reason)
            return Resize(True, observed, conflicts)

    def restart_pod(self, pod: PodView, reason: str) -> bool:
        if not self._evict(pod, dry_run=False):
            return False
        log.info("restarted %s: %s", pod.key, reason)
        return True

    def annotate_job(self, job: str, annotations: Mapping[str, str]) -> None:
        self._annotate(_job_path(job), annotations)

    def annotate_kueue_workloads(self, job: str, job_uid: str, annotations: Mapping[str, str]) -> int:
        namespace = job.split("/", 1)[0]
        path = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads"
        listed = self._call("GET", f"{path}?labelSelector={JOB_UID_LABEL}%3D{job_uid}")
        names = [item["metadata"]["name"] for item in listed.get("items") or []]
        for name in names:
            self._annotate(f"{path}/{name}", annotations)
        return len(names)

    def suspend_job(self, job: str, suspend: bool, annotations: Mapping[str, str | None]) -> None:
        patch = {"metadata": {"annotations": dict(annotations)}, "spec": {"runPolicy": {"suspend": suspend}}}
        self._call("PATCH", _job_path(job), patch, "application/merge-patch+json")
        log.info("%s %s", "suspended" if suspend else "resumed", job)

    def annotate_group(self, group: GroupView, annotations: Mapping[str, str | None]) -> None:
        path = group_path(group)
        if path is None:
            raise ValueError(f"PodGroup {group.namespace}/{group.name}: unknown API group {group.api_group}")
        self._annotate(path, annotations)

    def _annotate(self, path: str, annotations: Mapping[str, str | None]) -> None:
        """Merge-patch the object's annotations (a None value removes one)."""
        self._call("PATCH", path, {"metadata": {"annotations": dict(annotations)}}, "application/merge-patch+json")

    def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
        if self._evict(pod, dry_run=dry_run) and not dry_run:
            log.info("evicted %s: %s", pod.key, reason)

    def _evict(self, pod: PodView, *, dry_run: bool) -> bool:
        """POST an Eviction for `pod`; False when the pod is already gone."""
        options: dict[str, Any] = {"preconditions": {"uid": pod.uid}}
        if dry_run:
            options["dryRun"] = ["All"]
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
            "deleteOptions": options,
        }
        try:
            self._call("POST", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/eviction", body)
        except ApiCallError as error:
            if error.status == 429:
                raise EvictionRefused(f"eviction of {pod.key} refused: {error}") from error
            if error.status in (404, 409):
                return False
            raise
        return True

    def record_event(self, kind: str, key: str, reason: str, message: str) -> None:
        namespace, name = key.split("/", 1) if "/" in key else ("default", key)
        api_version = "kubeflow.org/v1" if kind == "TFJob" else "v1"
        timestamp = _now()
        event = {
            "metadata": {"name": f"{name}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
            "involvedObject": {"kind": kind, "namespace": namespace, "name": name, "apiVersion": api_version},
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": COMPONENT},
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
        }
        try:
            self._call("POST", f"/api/v1/namespaces/{namespace}/events", event)
        except ApiCallError as error:
            log.warning("could not record event %s on %s %s: %s", reason, kind, key, error)


JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
"""The label Kueue puts on the Workload it makes for a job: the job's UID."""


def _job_path(job: str) -> str:
    namespace, name = job.split("/", 1)
    return f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
