"""The certificates of the hop from kube-scheduler to the extender's verbs: what is due, at a given time.

kube-scheduler calls the verbs over mutual TLS (its extender `tlsConfig`): the verb listener proves itself
with a serving certificate for the verbs Service's DNS names, kube-scheduler with a client certificate
(client authentication only, so the serving certificate cannot call the verbs), both signed by a CA of the
extender's own (`certificates.new_ca`). `renewed` says what a set of stored certificates needs:
- a new CA when there is none or it has less than a third of its life left; the old one (and its key) is
  kept beside it while it is valid;
- a new serving or client certificate when there is none, it has less than a third of its life left, it is
  made for other names, or no CA kept signed it.
A new leaf is signed by the old CA while that outlives it, else by the new one. kube-scheduler reads its CA
file only when it starts (it reads its client certificate again at each new connection), and both pods
trust both CAs as soon as the new one exists, so the verbs go on serving certificates of a CA that
kube-scheduler already trusts while the old CA outlives them (`CA_LIFETIMES`: about a year): any restart
of kube-scheduler's pod in that time (an upgrade, a node drained) picks up the new CA before the first
certificate it signs is served. Everything here takes `now` and PEM text and does
no I/O.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, replace

from extender.k8s.certificates import (
    canonical,
    is_due,
    is_valid,
    names_of,
    new_ca,
    new_client,
    new_serving,
    not_after,
    signed_by,
)

CA_LIFETIMES = 40
"""A CA lives this many leaf certificates' lifetimes (with 30-day leaves: 1200 days, a new CA made 400 days
before the old one expires, which signs leaves for 370 days more)."""
CLIENT_NAME = "kube-scheduler"
"""The common name of kube-scheduler's client certificate."""


@dataclass(frozen=True, slots=True)
class VerbsCertificates:
    """What the Secret holds (PEM). `previous_ca`/`previous_key`: the CA the current one replaced, while it
    is valid ("" otherwise)."""

    ca_cert: str
    ca_key: str
    cert: str
    key: str
    client_cert: str
    client_key: str
    previous_ca: str = ""
    previous_key: str = ""

    def bundle(self, now: datetime.datetime) -> str:
        """The CAs both sides trust: the current one, and the previous one while it is valid."""
        previous = self.previous_ca if self.previous_ca and is_valid(self.previous_ca, now) else ""
        return self.ca_cert + previous


def renewed(
    stored: VerbsCertificates | None, hosts: Sequence[str], now: datetime.datetime, days: int
) -> VerbsCertificates | None:
    """The certificates to store instead of `stored` (None: keep them); see the module's text. Unreadable
    stored certificates are made again."""
    try:
        return _renewed(stored, hosts, now, days)
    except ValueError:
        return _renewed(None, hosts, now, days)


def _renewed(
    stored: VerbsCertificates | None, hosts: Sequence[str], now: datetime.datetime, days: int
) -> VerbsCertificates | None:
    current = stored
    if current is None or not current.ca_cert or is_due(current.ca_cert, now):
        ca_cert, ca_key = new_ca(now, days, CA_LIFETIMES)
        kept = current is not None and bool(current.ca_cert) and is_valid(current.ca_cert, now)
        previous = (current.ca_cert, current.ca_key) if current is not None and kept else ("", "")
        current = VerbsCertificates(ca_cert, ca_key, "", "", "", "", *previous)
    elif current.previous_ca and not is_valid(current.previous_ca, now):
        current = replace(current, previous_ca="", previous_key="")
    signers = [pem for pem in (current.ca_cert, current.previous_ca) if pem]
    signer_cert, signer_key = _signer(current, now, days)
    wanted = {canonical(host) for host in hosts}
    if _due(current.cert, signers, now) or names_of(current.cert) != wanted:
        cert, key = new_serving(signer_cert, signer_key, hosts, now, days)
        current = replace(current, cert=cert, key=key)
    if _due(current.client_cert, signers, now):
        client_cert, client_key = new_client(signer_cert, signer_key, CLIENT_NAME, now, days)
        current = replace(current, client_cert=client_cert, client_key=client_key)
    return None if current == stored else current


def _signer(certificates: VerbsCertificates, now: datetime.datetime, days: int) -> tuple[str, str]:
    """The old CA while it outlives a certificate made now, else the current one."""
    previous = certificates.previous_ca
    if previous and certificates.previous_key and not_after(previous) > now + datetime.timedelta(days=days):
        return previous, certificates.previous_key
    return certificates.ca_cert, certificates.ca_key


def _due(pem: str, signers: Sequence[str], now: datetime.datetime) -> bool:
    return not pem or is_due(pem, now) or not any(signed_by(pem, ca) for ca in signers)
