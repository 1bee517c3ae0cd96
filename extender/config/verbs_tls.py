"""Where the loops keep the certificates of kube-scheduler's calls to the verbs (`VerbsTlsSettings`).

Where kube-scheduler and the verb-serving extender run in pods of their own (the chart), kube-scheduler calls
the verbs through a Service over mutual TLS, and the process that runs the loops keeps the CA, the verb
listener's serving certificate (for the Service's DNS names) and kube-scheduler's client certificate in
one Secret both pods mount (`k8s.verbs_tls`). Off (no `secret`) where the verbs stay on the loopback
address of kube-scheduler's own host (the local control plane). Settings of one process, flags only.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.config.rules import Text
from extender.policy.core.setting_rules import Name, Numbers, check_declared, setting


@dataclass(frozen=True, slots=True)
class VerbsTlsSettings:
    """The Secret, the Service its serving certificate is for, and the certificates' lifetime."""

    secret: str = setting(
        "", Text(metavar="NAME"), "the Secret to keep the verbs' CA and certificates in (empty: none kept)"
    )
    service: str = setting(
        "tfjob-extender-verbs",
        Name(),
        "the verbs' Service (the serving certificate names <service>.<namespace>.svc)",
    )
    namespace: str = setting("tfjob-system", Name(), "namespace of the verbs' Service and of the Secret")
    certificate_days: int = setting(
        30, Numbers(3, integer=True, unit="days"), "days a verbs certificate the extender makes is valid"
    )
    """Made again when a third of that is left; the CA lives forty times as long."""

    def __post_init__(self) -> None:
        check_declared(self)

    @property
    def service_hosts(self) -> tuple[str, ...]:
        """The DNS names kube-scheduler may call the Service by."""
        base = f"{self.service}.{self.namespace}"
        return (self.service, base, f"{base}.svc", f"{base}.svc.cluster.local")
