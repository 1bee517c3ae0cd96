"""The admission webhook's listener over a real TLS socket: an AdmissionReview in, a JSONPatch out; every other
request answered in JSON; TLS only, with the certificate the keeper hands it trusted from then on."""

from __future__ import annotations

import base64
import datetime
import ssl
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import orjson
import pytest

from extender.api.edge.webhook_responder import WebhookResponder
from extender.api.native_gangs import NativeGangsView, admission_answer
from extender.cli.runtime import webhook_listener
from extender.config import Settings
from extender.k8s.certificates import Certificates, renewed
from extender.k8s.webhook_tls import placeholder_context, server_context
from extender.loops.native_gang_loop import NativeGangLoop
from extender.loops.native_gangs import KeptGang, NativeGangAction, NativeModeStatus
from extender.state.store import ClusterState
from tests.contract.listeners import running

SCHEDULER = "tfjob-scheduler"


class Mode:
    def __init__(self, active: bool) -> None:
        self.current = NativeModeStatus("auto", active, "served" if active else "not served (1.36)")

    def refresh(self) -> NativeModeStatus:
        return self.current

    def status(self) -> NativeModeStatus:
        return self.current


class NoWrites:
    def list_kept(self) -> dict[str, KeptGang]:
        return {}

    def create(self, action: NativeGangAction) -> None:
        raise AssertionError("the listener never writes")

    resize = delete = create


def certificates() -> Certificates:
    made = renewed(None, ["tfjob-extender-webhook", "127.0.0.1"], datetime.datetime.now(datetime.UTC), 3)
    assert made is not None
    return made


@pytest.fixture
def trusted() -> Certificates:
    return certificates()


def listener(active: bool = True, **limits: Any) -> Any:
    settings = Settings()
    settings = replace(
        settings,
        webhook=replace(settings.webhook, port=0),
        webhook_limits=replace(settings.webhook_limits, **limits),
    )
    loop = NativeGangLoop(ClusterState(), NoWrites(), Mode(active), SCHEDULER, lambda: 0.0)
    responder = WebhookResponder(admission_answer(NativeGangsView(loop)), lambda: True)
    return webhook_listener(responder, settings, placeholder_context())


@pytest.fixture
def served(trusted: Certificates) -> Iterator[httpx.Client]:
    server = listener()
    server.tls = server_context(trusted.cert, trusted.key)
    verify = ssl.create_default_context(cadata=trusted.ca_cert)
    with running([server]), httpx.Client(base_url=f"https://127.0.0.1:{server.port}", verify=verify) as client:
        yield client


def review(job_name: str = "mnist") -> dict[str, Any]:
    spec = {"schedulerName": SCHEDULER, "containers": [{"name": "tensorflow", "image": "tf"}]}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": job_name, "namespace": "team"},
        "spec": {"tfReplicaSpecs": {"PS": {"replicas": 1, "template": {"spec": spec}}}},
    }
    request = {
        "uid": "0d6c",
        "kind": {"group": "kubeflow.org", "version": "v1", "kind": "TFJob"},
        "operation": "CREATE",
        "name": job_name,
        "object": job,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def test_an_admission_review_gets_its_jsonpatch(served: httpx.Client) -> None:
    reply = served.post("/mutate-tfjobs", content=orjson.dumps(review()))
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    response = reply.json()["response"]
    assert (response["uid"], response["allowed"], response["patchType"]) == ("0d6c", True, "JSONPatch")
    patch = orjson.loads(base64.b64decode(response["patch"]))
    assert {
        "op": "add",
        "path": "/spec/tfReplicaSpecs/PS/template/spec/schedulingGroup",
        "value": {"podGroupName": "mnist"},
    } in patch


def test_without_native_gangs_here_the_review_is_allowed_unchanged(trusted: Certificates) -> None:
    server = listener(active=False)
    server.tls = server_context(trusted.cert, trusted.key)
    verify = ssl.create_default_context(cadata=trusted.ca_cert)
    with running([server]), httpx.Client(base_url=f"https://127.0.0.1:{server.port}", verify=verify) as client:
        reply = client.post("/mutate-tfjobs", content=orjson.dumps(review()))
    assert reply.json()["response"] == {"uid": "0d6c", "allowed": True}


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "error"),
    [
        ("POST", "/mutate-tfjobs", b"{", 400, "not JSON"),
        ("POST", "/mutate-tfjobs", b'{"kind": "AdmissionReview"}', 400, "not an AdmissionReview"),
        ("GET", "/mutate-tfjobs", b"", 405, "POST only"),
        ("GET", "/debug/gangs", b"", 404, "serves /mutate-tfjobs"),
        ("POST", "/healthz", b"", 405, "GET or HEAD"),
    ],
)
def test_every_other_request_is_answered_in_json(
    served: httpx.Client, method: str, path: str, body: bytes, status: int, error: str
) -> None:
    reply = served.request(method, path, content=body)
    assert reply.status_code == status and error in reply.json()["error"]


def test_the_probes_answer(served: httpx.Client) -> None:
    assert served.get("/healthz").json() == {"status": "ok"}
    assert served.get("/readyz").json() == {"ready": True, "certificate": True}


def test_a_body_over_its_cap_is_a_json_413(trusted: Certificates) -> None:
    server = listener(max_body_bytes=1024)
    server.tls = server_context(trusted.cert, trusted.key)
    verify = ssl.create_default_context(cadata=trusted.ca_cert)
    with running([server]), httpx.Client(base_url=f"https://127.0.0.1:{server.port}", verify=verify) as client:
        reply = client.post("/mutate-tfjobs", content=b" " * 4096)
    assert reply.status_code == 413 and "error" in reply.json()


def test_it_serves_tls_only_and_each_new_certificate_from_the_next_connection(trusted: Certificates) -> None:
    server = listener()
    verify = ssl.create_default_context(cadata=trusted.ca_cert)
    with running([server]):
        with pytest.raises(httpx.ConnectError), httpx.Client(verify=verify) as client:
            client.post(f"https://127.0.0.1:{server.port}/mutate-tfjobs", content=orjson.dumps(review()))
        with pytest.raises(httpx.HTTPError), httpx.Client() as plain:
            plain.post(f"http://127.0.0.1:{server.port}/mutate-tfjobs", content=orjson.dumps(review()))
        server.tls = server_context(trusted.cert, trusted.key)
        with httpx.Client(verify=verify) as client:
            reply = client.post(f"https://127.0.0.1:{server.port}/mutate-tfjobs", content=orjson.dumps(review()))
        assert reply.status_code == 200
        rotated = certificates()
        server.tls = server_context(rotated.cert, rotated.key)
        with httpx.Client(verify=ssl.create_default_context(cadata=rotated.ca_cert)) as client:
            assert client.get(f"https://127.0.0.1:{server.port}/healthz").status_code == 200
