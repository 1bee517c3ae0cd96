"""The native gangs' admission webhook as the local control plane registers it.

The API server of a local control plane runs on 127.0.0.1 with no Service network, so the
MutatingWebhookConfiguration `WEBHOOK_CONFIGURATION` calls the extender's webhook listener by URL
(`https://127.0.0.1:PORT/mutate-tfjobs`), with the same scope as the chart's: TFJob creations whose replica
templates name the scheduler (`MATCH_SCHEDULER`, CEL), `failurePolicy: Ignore` (a TFJob is never held up by
the webhook), `sideEffects: None`, a short timeout. It is registered with an empty `caBundle`, which the
extender fills with the CA it made (its serving certificate also names 127.0.0.1); `wait_for_ca_bundle`
waits for that. Without the extender's webhook listener (`webhook=False`) the configuration still points at
a port nobody serves: the API server's call fails and the TFJob is created as it was sent, as when the
webhook is down.
"""

from __future__ import annotations

from typing import Any

from extender.devcluster.access import PlaneAccess
from extender.devcluster.processes import wait_until

WEBHOOK_CONFIGURATION = "tfjob-extender"
"""The MutatingWebhookConfiguration's name (the extender's `--webhook-configuration` default)."""
WEBHOOK_NAMESPACE = "tfjob-system"
"""Where the extender keeps the webhook's certificates (the Secret `tfjob-extender-webhook-tls`)."""
CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
TIMEOUT_S = 5


def match_scheduler(scheduler_name: str) -> str:
    """The CEL condition: some replica template of the TFJob names `scheduler_name`."""
    return (
        "object.spec.tfReplicaSpecs.exists(t, "
        f"object.spec.tfReplicaSpecs[t].?template.?spec.?schedulerName.orValue('') == '{scheduler_name}')"
    )


def webhook_configuration(port: int, scheduler_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": [
            {
                "name": "native-gangs.tfjob-extender.io",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate-tfjobs"},
                "rules": [
                    {
                        "apiGroups": ["kubeflow.org"],
                        "apiVersions": ["v1"],
                        "resources": ["tfjobs"],
                        "operations": ["CREATE"],
                        "scope": "Namespaced",
                    }
                ],
                "matchConditions": [{"name": "names-the-scheduler", "expression": match_scheduler(scheduler_name)}],
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "timeoutSeconds": TIMEOUT_S,
                "reinvocationPolicy": "Never",
            }
        ],
    }


def native_gang_flags(port: int) -> tuple[str, ...]:
    """The extender's flags for native mode with its webhook listener on 127.0.0.1:`port` (0: no listener)."""
    return (
        *("--native-gangs", "on", "--webhook-port", str(port), "--webhook-host", "127.0.0.1"),
        *("--webhook-cert-host", "127.0.0.1", "--webhook-namespace", WEBHOOK_NAMESPACE),
    )


def register_webhook(plane: PlaneAccess, port: int, scheduler_name: str) -> None:
    """The MutatingWebhookConfiguration pointing at the extender's webhook listener on `port`."""
    plane.post(CONFIGURATIONS, webhook_configuration(port, scheduler_name))


def wait_for_ca_bundle(plane: PlaneAccess, timeout_s: float = 60) -> None:
    """Until the extender has written its CA into the configuration."""

    def written() -> bool:
        configuration = plane.get(f"{CONFIGURATIONS}/{WEBHOOK_CONFIGURATION}")
        return all((webhook.get("clientConfig") or {}).get("caBundle") for webhook in configuration["webhooks"])

    wait_until("the extender's CA in the webhook's caBundle", written, timeout_s)
