"""Keeps the admission webhook's serving certificate current, and the API server trusting it.

Two sources (`CertificateSource`, from the webhook's settings):
- files (`tls_cert_file`, `tls_key_file`: cert-manager's Secret, mounted): read at start and again whenever
  they change; the `caBundle` is someone else's (cert-manager's CA injector);
- the extender itself (the default): the CA and the serving certificate live in the Secret `secret`, so every
  replica serves the same certificate and a restart keeps it. Each round reads the Secret, makes what
  `certificates.renewed` says is due and writes it back under the resourceVersion it read (of two replicas
  racing, one wins and the other takes its certificates next round), serves the Secret's certificate, and
  writes the CA bundle into every webhook of the MutatingWebhookConfiguration `configuration` where it
  differs (a JSON patch that tests the resourceVersion it read). Never Helm's `genCA`, which changes on
  every render.
A round runs at start and every `RECHECK_S` (`RETRY_S` after a failure), on a thread of its own
(`rounds-webhook-certificates`). Until the first certificate is loaded the listener serves a throwaway self-signed
one, which no API server trusts: TLS is never off. `status` is what `/debug/native-gangs` and `/readyz` show.
"""

from __future__ import annotations

import base64
import datetime
import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient

from extender.k8s import secrets
from extender.k8s.certificates import Certificates, new_ca, new_serving, not_after, renewed
from extender.k8s.client import api_call
from extender.k8s.reads import get_or_none
from extender.k8s.rounds import InRounds, Rounds

log = logging.getLogger(__name__)

RECHECK_S = 60.0
RETRY_S = 5.0
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
SECRET_KEYS = {
    "ca_cert": "ca.crt",
    "ca_key": "ca.key",
    "cert": "tls.crt",
    "key": "tls.key",
    "previous_ca": "ca-previous.crt",
}


@dataclass(frozen=True, slots=True)
class CertificateSource:
    """Where the webhook's certificate comes from, and what it is for."""

    namespace: str
    secret: str
    configuration: str
    hosts: tuple[str, ...]
    certificate_days: int = 90
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def server_context(cert_pem: str, key_pem: str) -> ssl.SSLContext:
    """A TLS server context serving this certificate and key, loaded without writing them to disk where the
    platform allows (an anonymous memory file)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    pem = (cert_pem + key_pem).encode()
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create("webhook-certificate")
        try:
            os.write(descriptor, pem)
            context.load_cert_chain(f"/proc/self/fd/{descriptor}")
        finally:
            os.close(descriptor)
        return context
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "certificate.pem"
        path.write_bytes(pem)
        context.load_cert_chain(str(path))
    return context


def placeholder_context() -> ssl.SSLContext:
    """A throwaway self-signed certificate to serve until the real one is loaded."""
    now = utc_now()
    ca_cert, ca_key = new_ca(now, 1)
    cert, key = new_serving(ca_cert, ca_key, ["tfjob-extender-webhook-not-ready"], now, 1)
    return server_context(cert, key)


def certificates_of(secret: dict[str, Any] | None) -> Certificates | None:
    """The certificates a Secret holds (None: no Secret, or it holds none)."""
    stored = secrets.texts(secret)
    values = {field: stored.get(key, "") for field, key in SECRET_KEYS.items()}
    return Certificates(**values) if values["ca_cert"] else None


def secret_texts(certificates: Certificates) -> dict[str, str]:
    return {key: getattr(certificates, field) for field, key in SECRET_KEYS.items()}


def bundle_patch(configuration: dict[str, Any], bundle: str) -> list[dict[str, Any]]:
    """The JSON patch writing `bundle` into every webhook of `configuration` whose caBundle differs ([]: none)."""
    encoded = base64.b64encode(bundle.encode()).decode("ascii")
    patch: list[dict[str, Any]] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        client = webhook.get("clientConfig") or {}
        if client.get("caBundle") != encoded:
            patch.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": encoded})
    if patch:
        version = (configuration.get("metadata") or {}).get("resourceVersion")
        patch.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": version})
    return patch


class WebhookCertificates(InRounds):
    """The webhook's certificate keeper (see the module's text); `on_context` gets each new server context."""

    def __init__(
        self,
        api_client: ApiClient,
        settings: CertificateSource,
        on_context: Callable[[ssl.SSLContext], None],
        *,
        clock: Callable[[], datetime.datetime] = utc_now,
    ) -> None:
        self._api = api_client
        self._settings = settings
        self._on_context = on_context
        self._clock = clock
        self._rounds = Rounds("webhook-certificates", self.keep, RECHECK_S, RETRY_S)
        self._loaded = ""
        self._files_seen: tuple[float, float] | None = None
        self.not_after: datetime.datetime | None = None
        self.bundle_written = False

    @property
    def from_files(self) -> bool:
        return self._settings.tls_cert_file is not None

    def status(self) -> dict[str, Any]:
        return {
            "source": "files" if self.from_files else f"Secret {self._settings.namespace}/{self._settings.secret}",
            "loaded": bool(self._loaded),
            "notAfter": self.not_after.isoformat() if self.not_after else None,
            "caBundleWritten": None if self.from_files else self.bundle_written,
            "configuration": self._settings.configuration,
            "error": self.error or None,
        }

    def keep(self) -> None:
        """One round: load what is due, write what is due."""
        if self.from_files:
            self._keep_files()
            return
        now = self._clock()
        namespace, name = self._settings.namespace, self._settings.secret
        secret = secrets.read(self._api, namespace, name)
        stored = certificates_of(secret)
        certificates = renewed(stored, self._settings.hosts, now, self._settings.certificate_days)
        if certificates is not None:
            secrets.write(self._api, namespace, name, secret, secret_texts(certificates))
            log.info(
                "webhook certificates: made %s",
                "a new CA and serving certificate"
                if stored is None or certificates.ca_cert != stored.ca_cert
                else "a new serving certificate",
            )
        current = certificates or stored
        assert current is not None
        self._load(current.cert, current.key)
        self._write_bundle(current.bundle(now))

    def _keep_files(self) -> None:
        cert_file, key_file = self._settings.tls_cert_file, self._settings.tls_key_file or self._settings.tls_cert_file
        assert cert_file is not None and key_file is not None
        seen = (cert_file.stat().st_mtime, key_file.stat().st_mtime)
        if seen == self._files_seen:
            return
        cert, key = cert_file.read_text(), key_file.read_text()
        self._load(cert, key if key_file != cert_file else "")
        self._files_seen = seen

    def _load(self, cert: str, key: str) -> None:
        if cert == self._loaded:
            return
        self._on_context(server_context(cert, key))
        self._loaded = cert
        self.not_after = not_after(cert)
        log.info("webhook certificates: serving a certificate valid until %s", self.not_after.isoformat())

    def _write_bundle(self, bundle: str) -> None:
        path = f"{CONFIGURATIONS}/{self._settings.configuration}"
        configuration = get_or_none(self._api, path)
        if configuration is None:
            self.bundle_written = False
            raise ValueError(f"no MutatingWebhookConfiguration {self._settings.configuration} to write the CA into")
        patch = bundle_patch(configuration, bundle)
        if patch:
            api_call(self._api, "PATCH", path, patch, "application/json-patch+json")
            log.info("webhook certificates: wrote the CA bundle into %s", self._settings.configuration)
        self.bundle_written = True
