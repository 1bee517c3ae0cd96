"""Keeps the certificates of kube-scheduler's calls to the verbs in one Secret, for both pods to mount.

The process that runs the loops keeps them (with `--verbs-tls-secret`), in rounds on a thread of its own:
each reads the Secret, makes what `verbs_certificates.renewed` says is due and writes it back under the
resourceVersion it read (of two replicas racing, one wins and the other reads the winner's next round). The
Secret's keys are what the pods mount (`SECRET_KEYS`): `ca.crt`, the CAs both sides trust; `tls.crt` and
`tls.key`, the verb listener's serving certificate (its pod); `client.crt` and `client.key`,
kube-scheduler's client certificate (its pod); the CAs' keys, which neither pod mounts. The kubelet updates
a mounted Secret in place: the verb listener reads its files again when they change (`api.tls_files`),
kube-scheduler reads its client certificate at each new connection.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from kubernetes.client import ApiClient

from extender.k8s import secrets
from extender.k8s.rounds import InRounds, Rounds
from extender.k8s.verbs_certificates import VerbsCertificates, renewed
from extender.k8s.webhook_tls import RECHECK_S, RETRY_S, utc_now

log = logging.getLogger(__name__)

SECRET_KEYS = {
    "ca_cert": "signing-ca.crt",
    "ca_key": "signing-ca.key",
    "cert": "tls.crt",
    "key": "tls.key",
    "client_cert": "client.crt",
    "client_key": "client.key",
    "previous_ca": "previous-ca.crt",
    "previous_key": "previous-ca.key",
}
BUNDLE_KEY = "ca.crt"
"""The CAs both sides trust (`VerbsCertificates.bundle`), written beside the certificates."""


@dataclass(frozen=True, slots=True)
class VerbsTlsSource:
    """Where the certificates are kept and what the serving one is for."""

    namespace: str
    secret: str
    hosts: tuple[str, ...]
    certificate_days: int = 30


def certificates_of(secret: dict[str, Any] | None) -> VerbsCertificates | None:
    """The certificates a Secret holds (None: no Secret, or no CA in it)."""
    stored = secrets.texts(secret)
    values = {field.name: stored.get(SECRET_KEYS[field.name], "") for field in fields(VerbsCertificates)}
    return VerbsCertificates(**values) if values["ca_cert"] else None


def secret_texts(certificates: VerbsCertificates, now: datetime.datetime) -> dict[str, str]:
    texts = {key: getattr(certificates, field) for field, key in SECRET_KEYS.items()}
    return {**texts, BUNDLE_KEY: certificates.bundle(now)}


class VerbsCertificateKeeper(InRounds):
    """The keeper (see the module's text)."""

    def __init__(
        self,
        api_client: ApiClient,
        source: VerbsTlsSource,
        *,
        clock: Callable[[], datetime.datetime] = utc_now,
    ) -> None:
        self._api = api_client
        self._source = source
        self._clock = clock
        self._rounds = Rounds("verbs-certificates", self.keep, RECHECK_S, RETRY_S)

    def keep(self) -> None:
        """One round: make and write what is due."""
        now = self._clock()
        namespace, name = self._source.namespace, self._source.secret
        secret = secrets.read(self._api, namespace, name)
        stored = certificates_of(secret)
        certificates = renewed(stored, self._source.hosts, now, self._source.certificate_days)
        if certificates is None:
            return
        secrets.write(self._api, namespace, name, secret, secret_texts(certificates, now))
        log.info(
            "verbs certificates: wrote %s into Secret %s/%s",
            "a new CA and certificates"
            if stored is None or stored.ca_cert != certificates.ca_cert
            else "renewed certificates",
            namespace,
            name,
        )
