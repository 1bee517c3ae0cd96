"""The native gangs' parts of a process that runs the preemption loop (`serve` without `--no-loops`, `loops`):
the controller (`loops.native_gang_loop`, on the Lease the loops share), and, with a webhook port, the
admission webhook's TLS listener (`api.edge.webhook_responder`) with its certificate keeper
(`k8s.webhook_tls`), which hands the listener each new certificate. Nothing of it is built while
`native_gangs` is `off`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from extender.config import Settings
from extender.state.store import ClusterState

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from extender.api.edge.server import EdgeServer
    from extender.api.native_gangs import NativeGangsView
    from extender.k8s.webhook_tls import WebhookCertificates
    from extender.loops.leadership import LeaderElector
    from extender.loops.native_gang_loop import NativeGangLoop


@dataclass(frozen=True, slots=True)
class NativeGangParts:
    loop: NativeGangLoop
    view: NativeGangsView
    certificates: WebhookCertificates | None = None
    listener: EdgeServer | None = None

    def start(self) -> None:
        self.loop.mode.refresh()
        self.loop.start()
        if self.certificates is not None:
            self.certificates.start()

    def stop(self) -> None:
        if self.certificates is not None:
            self.certificates.stop()
        self.loop.stop()


def make_native_gangs(
    settings: Settings, state: ClusterState, api_client: ApiClient, leader: LeaderElector
) -> NativeGangParts | None:
    """The native gangs' parts, or None while `native_gangs` is off (a `ValueError` when the webhook's
    certificate files are given by halves)."""
    from extender.api.edge.webhook_responder import WebhookResponder
    from extender.api.native_gangs import NativeGangsView, admission_answer
    from extender.cli.runtime import webhook_listener
    from extender.k8s.native_gangs import KubeNativeGangs
    from extender.k8s.native_mode import DiscoveredNativeMode
    from extender.k8s.webhook_tls import CertificateSource, WebhookCertificates, placeholder_context
    from extender.loops.native_gang_loop import NativeGangLoop

    if settings.native_gangs == "off":
        return None
    webhook = settings.webhook
    if (webhook.tls_cert_file is None) != (webhook.tls_key_file is None):
        raise ValueError("--webhook-tls-cert-file and --webhook-tls-key-file go together")
    loop = NativeGangLoop(
        state,
        KubeNativeGangs(api_client),
        DiscoveredNativeMode(api_client, settings.native_gangs),
        settings.policy.scheduler_name,
        time.time,
        leader=leader,
        dry_run=settings.dry_run,
        managed_namespaces=settings.policy.managed_namespaces,
    )
    if not webhook.port:
        return NativeGangParts(loop, NativeGangsView(loop))
    listener: EdgeServer | None = None
    source = CertificateSource(
        namespace=webhook.namespace,
        secret=webhook.secret,
        configuration=webhook.configuration,
        hosts=webhook.service_hosts,
        certificate_days=webhook.certificate_days,
        tls_cert_file=webhook.tls_cert_file,
        tls_key_file=webhook.tls_key_file,
    )

    def serve_certificate(context: object) -> None:
        assert listener is not None
        listener.tls = context  # type: ignore[assignment]

    certificates = WebhookCertificates(api_client, source, serve_certificate)
    view = NativeGangsView(loop, certificates.status)
    responder = WebhookResponder(admission_answer(view), lambda: bool(certificates.status()["loaded"]))
    listener = webhook_listener(responder, settings, placeholder_context())
    return NativeGangParts(loop, view, certificates, listener)
