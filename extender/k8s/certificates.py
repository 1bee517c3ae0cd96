"""The admission webhook's certificates: a CA of its own, a serving certificate it signs, and when to renew either.

The API server calls webhooks over TLS and checks the serving certificate against the `caBundle` of the
webhook's configuration, so the extender makes both: an ECDSA P-256 CA valid `CA_LIFETIMES` serving
lifetimes, and a serving certificate for the webhook Service's DNS names (IP addresses become IP SANs)
valid `serving_days`. `renewal` says what a set of stored certificates needs at a given time: a new CA
when it is missing or has less than a third of its life left (the old one stays trusted beside it until it
expires, so an API server still holding the old bundle keeps reaching the webhook), a new serving
certificate when it is missing, signed by another CA, made for other names, or has less than a third left.
Everything here takes `now` and PEM text and does no I/O.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_LIFETIMES = 10
"""A CA lives this many serving certificates' lifetimes."""
RENEW_AT_LEFT = 1 / 3
"""Renew a certificate when less than this share of its life is left."""
CA_NAME = "tfjob-extender webhook CA"


@dataclass(frozen=True, slots=True)
class Certificates:
    """What the Secret holds (PEM): the CA and its key, the serving certificate and its key, and the CA it
    replaced while that is still valid ("")."""

    ca_cert: str
    ca_key: str
    cert: str
    key: str
    previous_ca: str = ""

    def bundle(self, now: datetime.datetime) -> str:
        """The CA bundle API servers should trust: the CA, and the previous one while it is valid."""
        previous = self.previous_ca if self.previous_ca and not_after(self.previous_ca) > now else ""
        return self.ca_cert + previous


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def _cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def new_ca(now: datetime.datetime, serving_days: int, lifetimes: int = CA_LIFETIMES) -> tuple[str, str]:
    """(certificate, key) of a new CA, valid `lifetimes` times `serving_days`."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(CA_NAME))
        .issuer_name(_name(CA_NAME))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=serving_days * lifetimes))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _cert_pem(cert), _key_pem(key)


def new_serving(ca_cert: str, ca_key: str, hosts: Sequence[str], now: datetime.datetime, days: int) -> tuple[str, str]:
    """(certificate, key) for `hosts` (DNS names; IP addresses as IP SANs), signed by the CA."""
    names = x509.SubjectAlternativeName([_general_name(host) for host in hosts])
    return _leaf(ca_cert, ca_key, hosts[0], names, ExtendedKeyUsageOID.SERVER_AUTH, now, days)


def new_client(ca_cert: str, ca_key: str, common_name: str, now: datetime.datetime, days: int) -> tuple[str, str]:
    """(certificate, key) a client authenticates with (client authentication only), signed by the CA."""
    return _leaf(ca_cert, ca_key, common_name, None, ExtendedKeyUsageOID.CLIENT_AUTH, now, days)


def _leaf(
    ca_cert: str,
    ca_key: str,
    common_name: str,
    names: x509.SubjectAlternativeName | None,
    usage: x509.ObjectIdentifier,
    now: datetime.datetime,
    days: int,
) -> tuple[str, str]:
    authority = x509.load_pem_x509_certificate(ca_cert.encode())
    signing_key = serialization.load_pem_private_key(ca_key.encode(), password=None)
    if not isinstance(signing_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA's key is not an ECDSA key")
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(authority.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(min(now + datetime.timedelta(days=days), authority.not_valid_after_utc))
    )
    if names is not None:
        builder = builder.add_extension(names, critical=False)
    cert = (
        builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(signing_key, hashes.SHA256())
    )
    return _cert_pem(cert), _key_pem(key)


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def not_after(pem: str) -> datetime.datetime:
    return x509.load_pem_x509_certificate(pem.encode()).not_valid_after_utc


def is_due(pem: str, now: datetime.datetime) -> bool:
    cert = x509.load_pem_x509_certificate(pem.encode())
    life = cert.not_valid_after_utc - cert.not_valid_before_utc
    return cert.not_valid_after_utc - now < life * RENEW_AT_LEFT


def names_of(pem: str) -> set[str]:
    cert = x509.load_pem_x509_certificate(pem.encode())
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(name) for name in names.get_values_for_type(x509.DNSName)} | {
        str(address) for address in names.get_values_for_type(x509.IPAddress)
    }


def signed_by(pem: str, ca_pem: str) -> bool:
    cert = x509.load_pem_x509_certificate(pem.encode())
    authority = x509.load_pem_x509_certificate(ca_pem.encode())
    try:
        cert.verify_directly_issued_by(authority)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def renewed(
    stored: Certificates | None, hosts: Sequence[str], now: datetime.datetime, serving_days: int
) -> Certificates | None:
    """The certificates to store instead of `stored` (None: keep them): see the module's text. Unreadable
    stored certificates are replaced."""
    try:
        ca_due = stored is None or not stored.ca_cert or is_due(stored.ca_cert, now)
        serving_due = (
            ca_due
            or stored is None
            or not stored.cert
            or is_due(stored.cert, now)
            or not signed_by(stored.cert, stored.ca_cert)
            or names_of(stored.cert) != {canonical(host) for host in hosts}
        )
    except ValueError:
        ca_due = serving_due = True
    if not serving_due:
        return None
    if ca_due:
        ca_cert, ca_key = new_ca(now, serving_days)
        previous = stored.ca_cert if stored is not None and stored.ca_cert and is_valid(stored.ca_cert, now) else ""
    else:
        assert stored is not None
        ca_cert, ca_key, previous = stored.ca_cert, stored.ca_key, stored.previous_ca
    cert, key = new_serving(ca_cert, ca_key, hosts, now, serving_days)
    return Certificates(ca_cert, ca_key, cert, key, previous)


def is_valid(pem: str, now: datetime.datetime) -> bool:
    try:
        return not_after(pem) > now
    except ValueError:
        return False


def canonical(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host
