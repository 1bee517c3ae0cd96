"""The webhook's certificate keeper against a scripted API server: the Secret made once and kept, the CA written
into the configuration, the serving certificate handed to the listener, renewed when due, and files read again
when they change."""

from __future__ import annotations

import base64
import datetime
import os
import ssl
from pathlib import Path
from typing import Any

import pytest

from extender.k8s import reads, secrets, webhook_tls
from extender.k8s.certificates import Certificates, renewed
from extender.k8s.client import ApiCallError
from extender.k8s.webhook_tls import CertificateSource, WebhookCertificates, secret_texts

SECRET = "/api/v1/namespaces/tfjob-system/secrets/tfjob-extender-webhook-tls"
CONFIGURATION = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/tfjob-extender"
SOURCE = CertificateSource("tfjob-system", "tfjob-extender-webhook-tls", "tfjob-extender", ("svc", "127.0.0.1"))


class Server:
    """Objects by path; POST to a collection, PUT, JSON PATCH of the caBundle, with resourceVersions."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {
            CONFIGURATION: {"metadata": {"resourceVersion": "1"}, "webhooks": [{"clientConfig": {}}]}
        }
        self.calls: list[tuple[str, str]] = []

    def __call__(self, api: Any, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
        self.calls.append((method, path))
        if method == "GET":
            if path not in self.objects:
                raise ApiCallError(404, "not found")
            return self.objects[path]
        if method == "POST":
            name = body["metadata"]["name"]
            self.objects[f"{path}/{name}"] = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
            return body
        if method == "PUT":
            self.objects[path] = body
            return body
        for operation in body:
            if operation["op"] == "add":
                index = int(operation["path"].split("/")[2])
                self.objects[path]["webhooks"][index]["clientConfig"]["caBundle"] = operation["value"]
        return self.objects[path]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    fake = Server()
    for module in (webhook_tls, secrets, reads):
        monkeypatch.setattr(module, "api_call", fake)
    return fake


def keeper(source: CertificateSource, loaded: list[ssl.SSLContext], at: datetime.datetime) -> WebhookCertificates:
    return WebhookCertificates(None, source, loaded.append, clock=lambda: at)  # type: ignore[arg-type]


def test_the_first_round_makes_the_secret_loads_it_and_writes_the_ca(server: Server) -> None:
    loaded: list[ssl.SSLContext] = []
    now = datetime.datetime.now(datetime.UTC)
    certificates = keeper(SOURCE, loaded, now)
    certificates.keep()
    secret = server.objects[SECRET]
    assert set(secret["data"]) >= {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    bundle = server.objects[CONFIGURATION]["webhooks"][0]["clientConfig"]["caBundle"]
    assert bundle == secret["data"]["ca.crt"]
    assert len(loaded) == 1 and certificates.status()["loaded"] and certificates.status()["caBundleWritten"]

    certificates.keep()
    assert len(loaded) == 1, "nothing new to serve"
    assert [call for call in server.calls[-2:] if call[0] != "GET"] == [], "nothing written again"

    another_replica: list[ssl.SSLContext] = []
    keeper(SOURCE, another_replica, now).keep()
    assert len(another_replica) == 1 and server.objects[SECRET]["data"] == secret["data"], "the same certificate"


def test_a_certificate_near_its_end_is_renewed_and_served(server: Server) -> None:
    loaded: list[ssl.SSLContext] = []
    now = datetime.datetime.now(datetime.UTC)
    keeper(SOURCE, loaded, now).keep()
    first = server.objects[SECRET]["data"]["tls.crt"]
    later = keeper(SOURCE, loaded, now + datetime.timedelta(days=70))
    later.keep()
    assert server.objects[SECRET]["data"]["tls.crt"] != first and len(loaded) == 2


def test_without_the_configuration_the_round_fails_and_says_why(server: Server) -> None:
    del server.objects[CONFIGURATION]
    certificates = keeper(SOURCE, [], datetime.datetime.now(datetime.UTC))
    with pytest.raises(ValueError, match="no MutatingWebhookConfiguration tfjob-extender"):
        certificates.keep()
    assert certificates.status()["loaded"] and not certificates.status()["caBundleWritten"]


def test_certificate_files_are_served_and_read_again_when_they_change(server: Server, tmp_path: Path) -> None:
    now = datetime.datetime.now(datetime.UTC)
    made = renewed(None, ["svc"], now, 90)
    assert made is not None
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_text(made.cert)
    key.write_text(made.key)
    loaded: list[ssl.SSLContext] = []
    source = CertificateSource("ns", "secret", "configuration", ("svc",), tls_cert_file=cert, tls_key_file=key)
    certificates = keeper(source, loaded, now)
    certificates.keep()
    certificates.keep()
    assert len(loaded) == 1 and server.calls == [], "files only: no Secret, no caBundle"
    again = renewed(None, ["svc"], now, 90)
    assert again is not None
    cert.write_text(again.cert)
    key.write_text(again.key)
    os.utime(cert, (now.timestamp() + 5, now.timestamp() + 5))
    certificates.keep()
    assert len(loaded) == 2 and certificates.status()["source"] == "files"


def test_the_secret_holds_base64_pem() -> None:
    data = secrets.encoded(secret_texts(Certificates("a", "b", "c", "d")))
    assert base64.b64decode(data["tls.crt"]) == b"c" and base64.b64decode(data["ca-previous.crt"]) == b""
