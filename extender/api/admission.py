"""The native gangs' admission webhook: an `admission.k8s.io/v1` AdmissionReview in, its answer out.

On the creation of a TFJob whose replica templates name the scheduler (and no other), `native_gang_patch`
names a native gang in every replica template — `spec.schedulingGroup.podGroupName: <the TFJob's name>`,
which training-operator copies into each pod — and records it on the TFJob (annotation
`tfjob-extender.io/native-gang`), from which the controller makes the Workload and PodGroup of that name.
Deciding per TFJob, not per pod, keeps a gang whole: a job is created with the field in all its templates
or in none, so its pods never split between a native gang and the extender's own barrier (a pod's
`schedulingGroup` cannot be changed once it exists). A TFJob whose templates already name a PodGroup is
its owner's and is left as it is; so is one without a name yet (`generateName`).

`review_reply` is the whole exchange: a body that is not an AdmissionReview of `admission.k8s.io/v1` with a
request uid gets a 400 with a JSON `error` (the API server counts that as a failed call, and with
`failurePolicy: Ignore` creates the object unchanged); every readable review gets a 200 allowing the object,
with a JSONPatch when there is one to make and none otherwise. Nothing here is ever refused.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from extender.state.gang_annotations import NATIVE_GANG_ANNOTATION

log = logging.getLogger(__name__)

API_VERSION = "admission.k8s.io/v1"
WEBHOOK_PATH = b"/mutate-tfjobs"
"""Where the MutatingWebhookConfiguration calls the webhook."""
UID_MAX_CHARS = 128

Patch = list[dict[str, Any]]


def pointer(*segments: str) -> str:
    """A JSON pointer (RFC 6901) to the path `segments`."""
    return "".join("/" + segment.replace("~", "~0").replace("/", "~1") for segment in segments)


def native_gang_patch(request: Mapping[str, Any], scheduler_name: str) -> tuple[Patch, str]:
    """(the JSONPatch naming a native gang in a TFJob being created, or [] with why not)."""
    kind = request.get("kind")
    if not isinstance(kind, dict):
        kind = {}
    if (kind.get("group"), kind.get("kind")) != ("kubeflow.org", "TFJob"):
        return [], f"not a TFJob: {kind.get('group')}/{kind.get('kind')}"
    if request.get("operation") != "CREATE":
        return [], f"not a creation: {request.get('operation')}"
    job = request.get("object")
    meta = job.get("metadata") if isinstance(job, dict) else None
    spec = job.get("spec") if isinstance(job, dict) else None
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return [], "no object with metadata and spec"
    name = meta.get("name") or request.get("name")
    if not isinstance(name, str) or not name:
        return [], "no name yet (generateName): the PodGroup is named after the TFJob"
    replica_specs = spec.get("tfReplicaSpecs")
    if not isinstance(replica_specs, dict) or not replica_specs:
        return [], "no spec.tfReplicaSpecs"
    templates: dict[str, dict[str, Any]] = {}
    pods = 0
    for replica_type, replica_spec in replica_specs.items():
        template = replica_spec.get("template") if isinstance(replica_spec, dict) else None
        pod_spec = template.get("spec") if isinstance(template, dict) else None
        replicas = replica_spec.get("replicas", 1) if isinstance(replica_spec, dict) else None
        if not isinstance(pod_spec, dict) or not isinstance(replicas, int) or isinstance(replicas, bool):
            return [], f"spec.tfReplicaSpecs.{replica_type}: no template.spec, or replicas not an integer"
        templates[str(replica_type)] = pod_spec
        pods += max(replicas, 0)
    schedulers = {str(pod_spec.get("schedulerName") or "") for pod_spec in templates.values()}
    if scheduler_name not in schedulers:
        return [], f"no replica template names {scheduler_name}"
    if schedulers - {scheduler_name, ""}:
        return [], f"replica templates name other schedulers too: {sorted(schedulers - {scheduler_name, ''})}"
    if any("schedulingGroup" in pod_spec for pod_spec in templates.values()):
        return [], "its templates name a PodGroup already (its owner's)"
    if pods == 0:
        return [], "no replicas"
    annotations = meta.get("annotations")
    patch: Patch = (
        [{"op": "add", "path": pointer("metadata", "annotations", NATIVE_GANG_ANNOTATION), "value": name}]
        if isinstance(annotations, dict)
        else [{"op": "add", "path": pointer("metadata", "annotations"), "value": {NATIVE_GANG_ANNOTATION: name}}]
    )
    group = {"podGroupName": name}
    patch += [
        {
            "op": "add",
            "path": pointer("spec", "tfReplicaSpecs", replica_type, "template", "spec", "schedulingGroup"),
            "value": group,
        }
        for replica_type in templates
    ]
    return patch, ""


def review_reply(body: bytes, patch_for: Callable[[Mapping[str, Any]], tuple[Patch, str]]) -> tuple[int, bytes]:
    """(status, body) answering an AdmissionReview: see the module's text. `patch_for` makes the patch of a
    request (it is trusted to return; any failure of it allows the object unchanged)."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        return _refused(f"the body is not JSON: {error}")
    if not isinstance(review, dict) or (review.get("apiVersion"), review.get("kind")) != (
        API_VERSION,
        "AdmissionReview",
    ):
        return _refused(f"not an AdmissionReview of {API_VERSION}")
    request = review.get("request")
    uid = request.get("uid") if isinstance(request, dict) else None
    if not isinstance(request, dict) or not isinstance(uid, str) or not uid or len(uid) > UID_MAX_CHARS:
        return _refused("the AdmissionReview has no request with a uid")
    try:
        patch, why = patch_for(request)
    except Exception:
        log.exception("admission review %s: no patch made", uid)
        patch, why = [], "the patch could not be made"
    response: dict[str, Any] = {"uid": uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(patch)).decode("ascii")
    else:
        log.debug("admission review %s: no patch: %s", uid, why)
    return 200, orjson.dumps({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response})


def _refused(message: str) -> tuple[int, bytes]:
    return 400, orjson.dumps({"error": message})
