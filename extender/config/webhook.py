"""The native gangs' settings: the mode (`NATIVE_GANG_MODES`), the admission webhook's listener and where its
certificates come from (`WebhookSettings`), and the listener's limits (`WEBHOOK_LIMITS`).

In native mode (`docs/workload-api.md`) every TFJob naming the scheduler gets Kubernetes' own gang: a
mutating admission webhook served by the process that runs the loops names a PodGroup in the job's replica
templates as it is created, and a controller keeps that Workload and PodGroup. The API server calls
webhooks over TLS only, so the listener always serves TLS: from the files `tls_cert_file`/`tls_key_file`
(cert-manager's Secret, mounted), else from a CA and serving certificate the process makes for the
Service's DNS names (and `cert_hosts`), keeps in the Secret `secret` (every replica serves the same one)
and writes into the `caBundle` of the MutatingWebhookConfiguration `configuration`. These are settings of
one process, flags only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from extender.config.listeners import ListenerLimits
from extender.config.rules import FilePath, Text, Words
from extender.policy.core.setting_rules import Name, Numbers, check_declared, setting

NATIVE_GANG_MODES = ("off", "on", "auto")
"""`off`: none; `on` and `auto`: where the API server serves `scheduling.k8s.io/v1beta1` PodGroups (1.37), the
only difference being how loudly a cluster without them is reported (a warning, or an info line)."""


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """The admission webhook's listener and its certificates (see the module's text)."""

    port: int = setting(
        9443, Numbers(0, 65535, integer=True, unit="port"), "port of the admission webhook's listener (0: none)"
    )
    """Served only when `native_gangs` is not `off`, by the process that runs the preemption loop."""
    host: str = setting(
        "127.0.0.1", Text(non_empty=True, metavar="ADDRESS"), "address of the admission webhook's listener"
    )
    service: str = setting(
        "tfjob-extender-webhook",
        Name(),
        "the webhook's Service (its serving certificate names <service>.<namespace>.svc)",
    )
    namespace: str = setting(
        "tfjob-system", Name(), "namespace of the webhook's Service and of the Secret its certificates are kept in"
    )
    configuration: str = setting(
        "tfjob-extender", Name(), "the MutatingWebhookConfiguration whose caBundle the extender keeps"
    )
    secret: str = setting(
        "tfjob-extender-webhook-tls",
        Name(),
        "the Secret the extender keeps the webhook's CA and serving certificate in",
    )
    cert_hosts: tuple[str, ...] = setting(
        (), Words("HOST"), "another DNS name or IP address the serving certificate is made for", flag="cert-host"
    )
    """E.g. 127.0.0.1 for an API server that calls the webhook by URL on the same machine."""
    certificate_days: int = setting(
        90, Numbers(3, integer=True, unit="days"), "days a serving certificate the extender makes is valid"
    )
    """It is made again when a third of that is left; the CA lives ten times as long, and a new one is
    trusted beside the old until the old expires."""
    tls_cert_file: Path | None = setting(
        None, FilePath(), "serve this certificate (PEM; cert-manager's) instead of one the extender makes"
    )
    """Read again when the file changes; the caBundle is then someone else's (cert-manager's CA injector)."""
    tls_key_file: Path | None = setting(None, FilePath(), "the certificate's private key (PEM)")

    def __post_init__(self) -> None:
        check_declared(self)

    @property
    def service_hosts(self) -> tuple[str, ...]:
        """The DNS names the API server may call the Service by, then `cert_hosts`."""
        base = f"{self.service}.{self.namespace}"
        return (self.service, base, f"{base}.svc", f"{base}.svc.cluster.local", *self.cert_hosts)


WEBHOOK_LIMITS = ListenerLimits(
    max_connections=64,
    reserved_for_authenticated=0,
    max_connections_per_peer=32,
    overflow_replies=16,
    accepts_per_s=100.0,
    requests_per_s=100.0,
    max_body_bytes=3 * 2**20,
    keep_alive_s=120.0,
    max_backlog_bytes=8 * 2**20,
    max_buffered_bytes=32 * 2**20,
)
"""The API server is one client (one address, a pool of connections) sending TFJobs of at most 1.5 MiB
(etcd's object limit) in AdmissionReviews; nothing else needs to reach the listener."""
