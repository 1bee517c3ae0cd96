"""The Kubernetes side of native gangs: the Workload and PodGroup written, what a listed Workload says, what the
discovery documents say about the cluster, the webhook's certificates and the caBundle patch."""

from __future__ import annotations

import base64
import datetime
import ssl
from collections.abc import Mapping
from typing import Any

from extender.k8s import secrets
from extender.k8s.certificates import Certificates, not_after, renewed
from extender.k8s.native_gangs import kept_gang, podgroup_manifest, workload_manifest
from extender.k8s.native_mode import native_api
from extender.k8s.webhook_tls import bundle_patch, certificates_of, secret_texts, server_context
from extender.loops.native_gangs import KeptGang, NativeGangAction
from extender.state.workload_api import min_count
from tests.certificates import handshake

NOW = datetime.datetime(2026, 10, 1, tzinfo=datetime.UTC)
HOSTS = ["tfjob-extender-webhook", "tfjob-extender-webhook.tfjob-system.svc", "127.0.0.1"]
ACTION = NativeGangAction("create", "team", "mnist", "team/mnist", "u1", 5, "")


def test_the_workload_and_podgroup_carry_the_gang_its_template_and_their_owner() -> None:
    workload, group = workload_manifest(ACTION), podgroup_manifest(ACTION)
    assert workload["apiVersion"] == group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["spec"]["podGroupTemplates"] == [{"name": "tfjob", "schedulingPolicy": {"gang": {"minCount": 5}}}]
    assert group["spec"] == {
        "workloadRef": {"workloadName": "mnist", "templateName": "tfjob"},
        "schedulingPolicy": {"gang": {"minCount": 5}},
    }
    for manifest in (workload, group):
        meta = manifest["metadata"]
        assert (meta["name"], meta["namespace"]) == ("mnist", "team")
        assert meta["ownerReferences"] == [
            {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": "u1", "controller": True}
        ]
        assert meta["labels"] == {"app.kubernetes.io/managed-by": "tfjob-extender", "tfjob-extender.io/tfjob-uid": "u1"}
    assert min_count(group) == 5


def test_the_workload_and_podgroup_carry_the_tfjobs_priority_class() -> None:
    action = NativeGangAction("create", "team", "mnist", "team/mnist", "u1", 5, "", "high")
    workload, group = workload_manifest(action), podgroup_manifest(action)
    assert workload["spec"]["podGroupTemplates"][0]["priorityClassName"] == "high"
    assert group["spec"]["priorityClassName"] == "high"


def test_a_listed_workload_is_ours_only_with_our_labels() -> None:
    assert kept_gang(workload_manifest(ACTION)) == KeptGang("team", "mnist", "u1", 5)
    foreign = workload_manifest(ACTION)
    foreign["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "kueue"}
    assert kept_gang(foreign) is None


def served(documents: Mapping[str, Any]) -> Any:
    return lambda path: documents.get(path)


def group_document(*versions: str) -> dict[str, Any]:
    return {"versions": [{"groupVersion": f"scheduling.k8s.io/{version}"} for version in versions]}


def resources(*names: str) -> dict[str, Any]:
    return {"resources": [{"name": name} for name in names]}


def test_native_gangs_need_v1beta1_workloads_and_podgroups() -> None:
    on_137 = {"/apis/scheduling.k8s.io": group_document("v1", "v1beta1", "v1alpha3")}
    on_137["/apis/scheduling.k8s.io/v1beta1"] = resources("workloads", "podgroups", "podgroups/status")
    assert native_api(served(on_137))[0] is True
    on_136 = {"/apis/scheduling.k8s.io": group_document("v1", "v1alpha2")}
    served_136, why = native_api(served(on_136))
    assert not served_136 and "v1alpha2" in why and "immutable" in why
    served_135, why = native_api(served({"/apis/scheduling.k8s.io": group_document("v1", "v1alpha1")}))
    assert not served_135 and "workloadRef" in why
    off, why = native_api(served({"/apis/scheduling.k8s.io": group_document("v1")}))
    assert not off and "GenericWorkload" in why
    partial = {**on_137, "/apis/scheduling.k8s.io/v1beta1": resources("podgroups")}
    assert native_api(served(partial)) == (False, "the API server serves scheduling.k8s.io/v1beta1 without workloads")


def test_certificates_are_made_kept_and_renewed_when_due() -> None:
    made = renewed(None, HOSTS, NOW, 90)
    assert made is not None and made.previous_ca == ""
    assert renewed(made, HOSTS, NOW + datetime.timedelta(days=30), 90) is None
    serving_due = renewed(made, HOSTS, NOW + datetime.timedelta(days=61), 90)
    assert serving_due is not None and serving_due.ca_cert == made.ca_cert and serving_due.cert != made.cert
    other_names = renewed(made, [*HOSTS, "extra.example"], NOW, 90)
    assert other_names is not None and other_names.ca_cert == made.ca_cert
    ca_due = renewed(made, HOSTS, NOW + datetime.timedelta(days=610), 90)
    assert ca_due is not None and ca_due.ca_cert != made.ca_cert and ca_due.previous_ca == made.ca_cert
    assert ca_due.bundle(NOW + datetime.timedelta(days=610)) == ca_due.ca_cert + made.ca_cert
    assert ca_due.bundle(not_after(made.ca_cert) + datetime.timedelta(days=1)) == ca_due.ca_cert
    broken = Certificates("not a certificate", "", "", "")
    assert renewed(broken, HOSTS, NOW, 90) is not None


def test_the_serving_certificate_is_trusted_through_the_bundle_for_each_name() -> None:
    made = renewed(None, HOSTS, datetime.datetime.now(datetime.UTC), 90)
    assert made is not None
    server = server_context(made.cert, made.key)
    client = ssl.create_default_context(cadata=made.bundle(datetime.datetime.now(datetime.UTC)))
    client_side = handshake(server, client, "tfjob-extender-webhook.tfjob-system.svc")
    assert client_side is not None
    peer = client_side.getpeercert()
    assert peer is not None
    assert ("DNS", "tfjob-extender-webhook.tfjob-system.svc") in list(peer["subjectAltName"])


def test_the_secret_round_trips_the_certificates() -> None:
    made = renewed(None, HOSTS, NOW, 90)
    assert made is not None
    assert certificates_of({"data": secrets.encoded(secret_texts(made))}) == made
    assert certificates_of(None) is None and certificates_of({"data": {}}) is None


def test_the_bundle_is_written_into_every_webhook_that_lacks_it_under_the_version_read() -> None:
    bundle = "-----BEGIN CERTIFICATE-----\n...\n"
    encoded = base64.b64encode(bundle.encode()).decode()
    webhooks: list[dict[str, Any]] = [
        {"name": "a", "clientConfig": {"caBundle": encoded}},
        {"name": "b", "clientConfig": {}},
    ]
    configuration = {"metadata": {"resourceVersion": "41"}, "webhooks": webhooks}
    assert bundle_patch(configuration, bundle) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "41"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": encoded},
    ]
    webhooks[1]["clientConfig"]["caBundle"] = encoded
    assert bundle_patch(configuration, bundle) == []
