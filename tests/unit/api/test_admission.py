"""The admission webhook's answers: the JSONPatch naming a TFJob's native gang, and every other review allowed
unchanged, or refused as the API server expects when it is not an AdmissionReview."""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from extender.api.admission import native_gang_patch, pointer, review_reply

SCHEDULER = "tfjob-scheduler"
Obj = dict[str, Any]


def tfjob(*, name: str = "mnist", scheduler: str | None = SCHEDULER, annotations: Obj | None = None) -> Obj:
    def replica(count: int) -> Obj:
        spec: Obj = {"containers": [{"name": "tensorflow", "image": "tf"}]}
        if scheduler is not None:
            spec["schedulerName"] = scheduler
        return {"replicas": count, "template": {"spec": spec}}

    meta: Obj = {"name": name, "namespace": "team"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": meta,
        "spec": {"tfReplicaSpecs": {"PS": replica(1), "Worker": replica(4)}},
    }


def request(obj: Obj, *, operation: str = "CREATE", uid: str = "7f3c") -> Obj:
    return {
        "uid": uid,
        "kind": {"group": "kubeflow.org", "version": "v1", "kind": "TFJob"},
        "resource": {"group": "kubeflow.org", "version": "v1", "resource": "tfjobs"},
        "operation": operation,
        "namespace": "team",
        "name": obj["metadata"].get("name", ""),
        "object": obj,
    }


def review(req: Obj) -> bytes:
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})


def applied(obj: Obj, patch: list[Obj]) -> Obj:
    """`obj` with the `add` operations of a JSONPatch applied."""
    result = copy.deepcopy(obj)
    for operation in patch:
        assert operation["op"] == "add"
        *parents, last = [part.replace("~1", "/").replace("~0", "~") for part in operation["path"].split("/")[1:]]
        target = result
        for part in parents:
            target = target[part]
        target[last] = operation["value"]
    return result


def answer(req: Obj) -> Obj:
    status, body = review_reply(review(req), lambda r: native_gang_patch(r, SCHEDULER))
    assert status == 200
    reply: Obj = orjson.loads(body)
    assert (reply["apiVersion"], reply["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    response: Obj = reply["response"]
    assert response["uid"] == req["uid"] and response["allowed"] is True
    return response


@pytest.mark.parametrize("annotations", [None, {}, {"team": "vision"}])
def test_a_tfjob_naming_the_scheduler_gets_its_native_gang_in_every_replica_template(annotations: Obj | None) -> None:
    job = tfjob(annotations=annotations)
    response = answer(request(job))
    assert response["patchType"] == "JSONPatch"
    patched = applied(job, orjson.loads(base64.b64decode(response["patch"])))
    for spec in patched["spec"]["tfReplicaSpecs"].values():
        assert spec["template"]["spec"]["schedulingGroup"] == {"podGroupName": "mnist"}
    assert patched["metadata"]["annotations"] == {**(annotations or {}), "tfjob-extender.io/native-gang": "mnist"}


def test_templates_without_a_scheduler_may_sit_beside_those_naming_it() -> None:
    job = tfjob()
    del job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["schedulerName"]
    patch, why = native_gang_patch(request(job), SCHEDULER)
    assert patch and not why


def test_replica_types_are_escaped_in_the_patch_paths() -> None:
    assert pointer("spec", "tfReplicaSpecs", "odd/type~1") == "/spec/tfReplicaSpecs/odd~1type~01"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda r: r["object"]["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"].update(schedulerName="volcano"),
            "other schedulers",
        ),
        (
            lambda r: [
                s["template"]["spec"].pop("schedulerName") for s in r["object"]["spec"]["tfReplicaSpecs"].values()
            ],
            "names tfjob-scheduler",
        ),
        (
            lambda r: r["object"]["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].update(
                schedulingGroup={"podGroupName": "mine"}
            ),
            "its owner's",
        ),
        (lambda r: r.update(operation="UPDATE"), "not a creation"),
        (lambda r: r.update(kind={"group": "", "kind": "Pod"}), "not a TFJob"),
        (lambda r: (r["object"]["metadata"].pop("name"), r.update(name="")), "generateName"),
        (lambda r: r["object"]["spec"].update(tfReplicaSpecs=[]), "tfReplicaSpecs"),
        (lambda r: r["object"]["spec"]["tfReplicaSpecs"].update(PS=None), "no template.spec"),
        (lambda r: r["object"]["spec"]["tfReplicaSpecs"]["PS"].update(replicas="2"), "not an integer"),
        (lambda r: [s.update(replicas=0) for s in r["object"]["spec"]["tfReplicaSpecs"].values()], "no replicas"),
        (lambda r: r.update(object="a string"), "no object"),
    ],
)
def test_anything_else_is_allowed_as_it_is(change: Any, reason: str) -> None:
    req = request(tfjob())
    change(req)
    patch, why = native_gang_patch(req, SCHEDULER)
    assert patch == [] and reason in why
    assert "patch" not in answer(req)


def test_a_failing_patch_still_allows_the_object() -> None:
    def broken(_: Mapping[str, Any]) -> tuple[list[Obj], str]:
        raise RuntimeError("bug")

    status, body = review_reply(review(request(tfjob())), broken)
    assert status == 200 and orjson.loads(body)["response"] == {"uid": "7f3c", "allowed": True}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "not JSON"),
        (b"[]", "not an AdmissionReview"),
        (orjson.dumps({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}), "not an AdmissionReview"),
        (orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}), "uid"),
        (orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}}), "uid"),
        (review({"uid": "x" * 129}), "uid"),
    ],
)
def test_a_body_that_is_no_admission_review_is_a_json_400(body: bytes, error: str) -> None:
    status, reply = review_reply(body, lambda r: native_gang_patch(r, SCHEDULER))
    assert status == 400 and error in orjson.loads(reply)["error"]
