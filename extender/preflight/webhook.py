"""Whether the API server can reach the release's admission webhook (native gangs), on the objects read.

Checked only when the MutatingWebhookConfiguration `<fullname>` exists. Three findings: the Service its
configuration names exists and selects at least one pod (the loops pod serves the webhook); every webhook of
the configuration has a CA (`caBundle`), or cert-manager is asked to inject one; and when a NetworkPolicy of
the release namespace selects the loops pod, one of those selecting it lets the webhook's port in from
anywhere (the API server's address differs from cluster to cluster, so no narrower peer is known to hold
it; policies add up, so one such rule is enough). Label selectors and named ports are resolved here as
Kubernetes resolves them, so the check needs no cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.preflight.install import (
    FAIL,
    OK,
    Finding,
    Install,
    Object,
    annotations_of,
    containers_of,
    labels_of,
    name_of,
)

CERT_MANAGER_INJECTION = (
    "cert-manager.io/inject-ca-from",
    "cert-manager.io/inject-ca-from-secret",
    "cert-manager.io/inject-apiserver-ca",
)
"""Annotations by which cert-manager's CA injector writes a configuration's `caBundle`."""
WEBHOOK_SERVICE_PORT = 443
"""The Service port a webhook's `clientConfig.service` calls when it names none (Kubernetes' default)."""
ANYWHERE = ("0.0.0.0/0", "::/0")
"""ipBlocks that hold every address."""


@dataclass(frozen=True, slots=True)
class WebhookObjects:
    """The release's MutatingWebhookConfiguration, the Service it names (None: not there), the pods of the
    Service's namespace, the release namespace's NetworkPolicies, and the loops Deployment (None: not there)."""

    configuration: Object
    service: Object | None = None
    pods: list[Object] = field(default_factory=list)
    network_policies: list[Object] = field(default_factory=list)
    loops: Object | None = None


def service_reference(configuration: Object) -> dict[str, object] | None:
    """The first webhook's `clientConfig.service` (None when it calls a URL)."""
    for hook in configuration.get("webhooks") or []:
        service = (hook.get("clientConfig") or {}).get("service")
        if service:
            return dict(service)
    return None


def selects(selector: Object | None, labels: dict[str, str]) -> bool:
    """Whether a LabelSelector (`matchLabels`, `matchExpressions`) selects an object with `labels`; an empty
    selector selects everything."""
    selector = selector or {}
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        matched = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(str(operator), False)
        if not matched:
            return False
    return True


def check_webhook(install: Install, objects: WebhookObjects) -> list[Finding]:
    return [check_service(install, objects), check_ca(objects), check_network_policies(install, objects)]


def check_service(install: Install, objects: WebhookObjects) -> Finding:
    check = "webhook service"
    reference = service_reference(objects.configuration)
    if reference is None:
        return Finding(OK, check, f"MutatingWebhookConfiguration {install.fullname} calls a URL, not a Service")
    where = f"{reference.get('namespace')}/{reference.get('name')}"
    if objects.service is None:
        return Finding(FAIL, check, f"Service {where} (its clientConfig) is missing", install.upgrade_command())
    selector = (objects.service.get("spec") or {}).get("selector") or {}
    chosen = [pod for pod in objects.pods if selector and selects({"matchLabels": selector}, labels_of(pod))]
    if not chosen:
        fix = f"start the loops, which serve the webhook: kubectl -n {install.namespace} rollout status "
        fix += f"deployment/{install.loops_account}"
        return Finding(FAIL, check, f"Service {where} selects no pod", fix)
    return Finding(OK, check, f"Service {where} selects {len(chosen)} pod(s)")


def check_ca(objects: WebhookObjects) -> Finding:
    check = "webhook caBundle"
    configuration = objects.configuration
    injected = [key for key in CERT_MANAGER_INJECTION if annotations_of(configuration).get(key)]
    if injected:
        return Finding(OK, check, f"cert-manager injects it ({injected[0]})")
    hooks = configuration.get("webhooks") or []
    without = [str(h.get("name")) for h in hooks if not (h.get("clientConfig") or {}).get("caBundle")]
    if without:
        fix = "the loops write it once they serve the webhook (their /readyz: nativeGangs.webhook; they need "
        fix += f"get/patch on MutatingWebhookConfiguration {name_of(configuration)}), or turn "
        fix += "webhook.certManager.enabled on for cert-manager to inject it"
        return Finding(FAIL, check, f"no caBundle on webhook {', '.join(without)}", fix)
    return Finding(OK, check, f"every webhook of {name_of(configuration)} has a caBundle")


def webhook_port(objects: WebhookObjects) -> tuple[int | None, str]:
    """The loops pod's port the webhook Service sends to, as (number, name): either may be unknown (None, "")."""
    reference = service_reference(objects.configuration) or {}
    wanted = reference.get("port") or WEBHOOK_SERVICE_PORT
    ports = ((objects.service or {}).get("spec") or {}).get("ports") or []
    port = next((p for p in ports if p.get("port") == wanted), None)
    target = (port or {}).get("targetPort", (port or {}).get("port"))
    if isinstance(target, int):
        return target, ""
    name = str(target or "")
    for container in containers_of(objects.loops or {}):
        for declared in container.get("ports") or []:
            if name and declared.get("name") == name:
                return int(declared.get("containerPort")), name
    return None, name


def admits(rule: Object, number: int | None, name: str) -> bool:
    """Whether an ingress rule lets TCP to the port (`number`, `name`) in from anywhere."""
    peers = rule.get("from") or []
    anywhere = not peers or any(
        (p.get("ipBlock") or {}).get("cidr") in ANYWHERE and not (p.get("ipBlock") or {}).get("except") for p in peers
    )
    if not anywhere:
        return False
    ports = rule.get("ports") or []
    return not ports or any(_covers(entry, number, name) for entry in ports)


def _covers(entry: Object, number: int | None, name: str) -> bool:
    if (entry.get("protocol") or "TCP") != "TCP":
        return False
    port, end = entry.get("port"), entry.get("endPort")
    if port is None:
        return True
    if isinstance(port, str):
        return bool(name) and port == name
    return number is not None and (port == number or (end is not None and port <= number <= end))


def check_network_policies(install: Install, objects: WebhookObjects) -> Finding:
    check = "webhook network policy"
    template = ((objects.loops or {}).get("spec") or {}).get("template") or {}
    labels = labels_of(template) or dict(((objects.service or {}).get("spec") or {}).get("selector") or {})
    ingress = [
        policy
        for policy in objects.network_policies
        if selects((policy.get("spec") or {}).get("podSelector"), labels)
        and "Ingress" in ((policy.get("spec") or {}).get("policyTypes") or ["Ingress"])
    ]
    if not ingress:
        return Finding(OK, check, "no NetworkPolicy limits what reaches the loops pod")
    number, name = webhook_port(objects)
    shown = str(number) if number is not None else name or "the webhook's port"
    letting = [
        name_of(policy)
        for policy in ingress
        if any(admits(rule, number, name) for rule in (policy.get("spec") or {}).get("ingress") or [])
    ]
    if letting:
        return Finding(OK, check, f"NetworkPolicy {letting[0]} lets port {shown} in from anywhere")
    names = ", ".join(name_of(policy) for policy in ingress)
    fix = f"give NetworkPolicy {name_of(ingress[0])} the ingress rule `{{ports: [{{port: {shown}, protocol: TCP}}]}}` "
    fix += "with no `from` (the chart's has it while native gangs are on)"
    found = f"NetworkPolicy {names} select(s) the loops pod and none lets port {shown} in from anywhere"
    return Finding(FAIL, check, found, fix)
