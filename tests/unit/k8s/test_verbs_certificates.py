"""The verbs' mutual TLS: the certificates the loops keep, when each is made again, and real handshakes
between a kube-scheduler-like client and the verb listener's context built from the mounted files."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path
from typing import Any

import pytest

from extender.api.auth import tls_context
from extender.api.tls_files import TlsFiles
from extender.config import AuthSettings
from extender.k8s import reads, secrets
from extender.k8s.certificates import not_after, signed_by
from extender.k8s.verbs_certificates import VerbsCertificates, renewed
from extender.k8s.verbs_tls import BUNDLE_KEY, VerbsCertificateKeeper, VerbsTlsSource, certificates_of, secret_texts
from tests.certificates import handshake as tls_handshake

NOW = datetime.datetime(2026, 10, 1, tzinfo=datetime.UTC)
HOSTS = ("tfjob-extender-verbs", "tfjob-extender-verbs.tfjob-system.svc")
DAYS = 30


def made_at(now: datetime.datetime = NOW) -> VerbsCertificates:
    made = renewed(None, HOSTS, now, DAYS)
    assert made is not None
    return made


def test_nothing_is_made_again_while_every_certificate_has_life_left() -> None:
    made = made_at()
    assert signed_by(made.cert, made.ca_cert) and signed_by(made.client_cert, made.ca_cert)
    assert renewed(made, HOSTS, NOW + datetime.timedelta(days=DAYS // 2), DAYS) is None


def test_leaves_are_made_again_with_a_third_of_their_life_left_and_the_ca_kept() -> None:
    made = made_at()
    later = NOW + datetime.timedelta(days=DAYS * 2 / 3 + 1)
    again = renewed(made, HOSTS, later, DAYS)
    assert again is not None and again.ca_cert == made.ca_cert
    assert again.cert != made.cert and again.client_cert != made.client_cert


def test_a_new_ca_is_trusted_at_once_but_signs_only_once_the_old_one_would_not_outlive_a_leaf() -> None:
    made = made_at()
    ca_due = not_after(made.ca_cert) - datetime.timedelta(days=DAYS * 10)
    renewed_ca = renewed(made, HOSTS, ca_due, DAYS)
    assert renewed_ca is not None and renewed_ca.ca_cert != made.ca_cert
    assert renewed_ca.bundle(ca_due) == renewed_ca.ca_cert + made.ca_cert
    assert signed_by(renewed_ca.cert, made.ca_cert), "a kube-scheduler started before the new CA still trusts it"
    near_end = not_after(made.ca_cert) - datetime.timedelta(days=DAYS // 2)
    switched = renewed(renewed_ca, HOSTS, near_end, DAYS)
    assert switched is not None and signed_by(switched.cert, renewed_ca.ca_cert)
    assert signed_by(switched.client_cert, renewed_ca.ca_cert)
    gone = renewed(switched, HOSTS, not_after(made.ca_cert) + datetime.timedelta(days=1), DAYS)
    assert gone is not None and gone.previous_ca == "" and gone.bundle(near_end) == gone.ca_cert


def test_unreadable_certificates_are_made_again() -> None:
    broken = VerbsCertificates("not a certificate", "", "", "", "", "")
    assert renewed(broken, HOSTS, NOW, DAYS) is not None


def test_the_secret_round_trips_and_carries_the_bundle_the_pods_mount() -> None:
    made = made_at()
    texts = secret_texts(made, NOW)
    assert texts[BUNDLE_KEY] == made.ca_cert
    assert certificates_of({"data": secrets.encoded(texts)}) == made
    assert certificates_of(None) is None


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> bool:
    return tls_handshake(server, client, HOSTS[1]) is not None


def mounted(directory: Path, certificates: VerbsCertificates, now: datetime.datetime) -> AuthSettings:
    """The verbs pod's mount of the Secret, as the verb listener's `--tls-*` flags name it."""
    texts = secret_texts(certificates, now)
    for key in (BUNDLE_KEY, "tls.crt", "tls.key"):
        (directory / key).write_text(texts[key])
    return AuthSettings(
        tls_cert_file=directory / "tls.crt",
        tls_key_file=directory / "tls.key",
        tls_client_ca_file=directory / BUNDLE_KEY,
    )


def client(certificates: VerbsCertificates, cert: str, key: str, tmp_path: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=certificates.bundle(datetime.datetime.now(datetime.UTC)))
    if cert:
        (tmp_path / "client.pem").write_text(cert + key)
        context.load_cert_chain(str(tmp_path / "client.pem"))
    return context


def test_only_the_client_certificate_calls_the_verbs(tmp_path: Path) -> None:
    made = made_at(datetime.datetime.now(datetime.UTC))
    server = tls_context(mounted(tmp_path, made, datetime.datetime.now(datetime.UTC)))
    assert server is not None
    assert handshake(server, client(made, made.client_cert, made.client_key, tmp_path))
    assert not handshake(server, client(made, "", "", tmp_path)), "no client certificate"
    assert not handshake(server, client(made, made.cert, made.key, tmp_path)), "a serving certificate"
    stranger = made_at(datetime.datetime.now(datetime.UTC))
    assert not handshake(server, client(made, stranger.client_cert, stranger.client_key, tmp_path)), "another CA"


def test_the_listener_reads_its_files_again_when_the_secret_changes(tmp_path: Path) -> None:
    now = datetime.datetime.now(datetime.UTC)
    made = made_at(now)
    loaded: list[ssl.SSLContext] = []
    files = TlsFiles(mounted(tmp_path, made, now), loaded.append)
    files.keep()
    assert loaded == []
    other = made_at(now)
    mounted(tmp_path, other, now)
    files.keep()
    assert len(loaded) == 1
    assert handshake(loaded[0], client(other, other.client_cert, other.client_key, tmp_path))
    assert not handshake(loaded[0], client(made, made.client_cert, made.client_key, tmp_path))


class Secrets:
    """The API server's Secrets, as `api_call` would reach them."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes = 0

    def __call__(self, api: Any, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
        from extender.k8s.client import ApiCallError

        if method == "GET":
            if path not in self.objects:
                raise ApiCallError(404, "not found")
            return self.objects[path]
        self.writes += 1
        name = body["metadata"]["name"]
        self.objects[secrets.path_of(body["metadata"]["namespace"], name)] = body
        return body


def test_the_keeper_writes_the_secret_once_and_again_only_when_something_is_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = Secrets()
    for module in (secrets, reads):
        monkeypatch.setattr(module, "api_call", fake)
    clock = [NOW]
    source = VerbsTlsSource("tfjob-system", "tfjob-extender-verbs-tls", HOSTS, DAYS)
    keeper = VerbsCertificateKeeper(object(), source, clock=lambda: clock[0])  # type: ignore[arg-type]
    keeper.keep()
    keeper.keep()
    assert fake.writes == 1
    stored = certificates_of(fake.objects[secrets.path_of("tfjob-system", "tfjob-extender-verbs-tls")])
    assert stored is not None
    clock[0] = NOW + datetime.timedelta(days=DAYS)
    keeper.keep()
    assert fake.writes == 2
