"""The chart's native gangs: nothing of them by default; with `nativeGangs` the webhook's configuration scoped to
TFJob creations naming the scheduler and never blocking them, its Service on the loops pod, the loops' flags
and narrow rights; its certificate from the extender or from cert-manager."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.helm import NAMESPACE, RELEASE, Document, RenderRefused, containers, named, of_kind, render

NATIVE = {"nativeGangs": "auto"}
CERT_MANAGER = {**NATIVE, "webhook": {"certManager": {"enabled": True}}}
WEBHOOK_SERVICE = f"{RELEASE}-webhook"
SECRET = f"{RELEASE}-webhook-tls"


def loops_args(docs: list[Document]) -> list[str]:
    args: list[str] = containers(docs)["tfjob-extender-loops"]["args"]
    return args


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def rules_of(docs: list[Document], kind: str, name: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = named(docs, kind, name)["rules"]
    return rules


def test_nothing_of_native_gangs_renders_by_default() -> None:
    docs = render()
    assert not of_kind(docs, "MutatingWebhookConfiguration")
    assert WEBHOOK_SERVICE not in {d["metadata"]["name"] for d in of_kind(docs, "Service")}
    assert not any("webhook" in arg for arg in loops_args(docs))
    assert not any("native-gangs" in d["metadata"]["name"] for d in of_kind(docs, "ClusterRole"))


def test_the_webhook_sees_only_tfjob_creations_naming_the_scheduler_and_never_blocks_them() -> None:
    docs = render({**NATIVE, "schedulerName": "gangs", "webhook": {"timeoutSeconds": 3}})
    (configuration,) = of_kind(docs, "MutatingWebhookConfiguration")
    assert configuration["metadata"]["name"] == RELEASE
    (webhook,) = configuration["webhooks"]
    assert webhook["rules"] == [
        {
            "apiGroups": ["kubeflow.org"],
            "apiVersions": ["v1"],
            "resources": ["tfjobs"],
            "operations": ["CREATE"],
            "scope": "Namespaced",
        }
    ]
    (condition,) = webhook["matchConditions"]
    assert "schedulerName.orValue('') == 'gangs'" in condition["expression"]
    assert (webhook["failurePolicy"], webhook["sideEffects"], webhook["timeoutSeconds"]) == ("Ignore", "None", 3)
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["clientConfig"] == {
        "service": {"name": WEBHOOK_SERVICE, "namespace": NAMESPACE, "path": "/mutate-tfjobs", "port": 443}
    }, "no caBundle: the extender writes it, and an upgrade leaves it"


def test_the_webhook_service_reaches_the_loops_pods_webhook_port() -> None:
    docs = render({**NATIVE, "webhook": {"port": 9555}})
    service = named(docs, "Service", WEBHOOK_SERVICE)
    assert service["spec"]["ports"] == [{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}]
    loops = named(docs, "Deployment", f"{RELEASE}-loops")["spec"]["template"]
    assert service["spec"]["selector"].items() <= loops["metadata"]["labels"].items()
    (container,) = loops["spec"]["containers"]
    assert {"name": "webhook", "containerPort": 9555, "protocol": "TCP"} in container["ports"]
    (loops_policy,) = [p for p in of_kind(docs, "NetworkPolicy") if p["metadata"]["name"].endswith("-loops")]
    assert {"ports": [{"port": 9555, "protocol": "TCP"}]} in loops_policy["spec"]["ingress"]


def test_the_loops_keep_the_webhooks_certificate_and_read_the_mode_from_the_config_file() -> None:
    docs = render(NATIVE)
    args = loops_args(docs)
    assert (flag(args, "--webhook-host"), flag(args, "--webhook-port")) == ("0.0.0.0", "9443")
    assert flag(args, "--webhook-service") == WEBHOOK_SERVICE
    assert flag(args, "--webhook-namespace") == NAMESPACE
    assert flag(args, "--webhook-configuration") == RELEASE
    assert flag(args, "--webhook-secret") == SECRET
    config = yaml.safe_load(named(docs, "ConfigMap", f"{RELEASE}-policy")["data"]["policy.yaml"])
    assert config["native_gangs"] == "auto"
    assert not any(arg.startswith("--webhook") for arg in containers(docs)["tfjob-extender"]["args"])


def test_the_loops_rights_are_narrow() -> None:
    docs = render(NATIVE)
    rules = rules_of(docs, "ClusterRole", f"{RELEASE}-loops-native-gangs")
    assert rules == [
        {
            "apiGroups": ["scheduling.k8s.io"],
            "resources": ["workloads"],
            "verbs": ["list", "create", "patch", "delete"],
        },
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["podgroups"], "verbs": ["create", "patch", "delete"]},
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["mutatingwebhookconfigurations"],
            "resourceNames": [RELEASE],
            "verbs": ["get", "patch"],
        },
    ]
    secrets = rules_of(docs, "Role", f"{RELEASE}-loops-webhook-certificates")
    assert secrets == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [SECRET], "verbs": ["get", "update"]},
    ]
    assert named(docs, "Role", f"{RELEASE}-loops-webhook-certificates")["metadata"]["namespace"] == NAMESPACE


def test_with_cert_manager_the_certificate_is_mounted_and_its_ca_injected() -> None:
    docs = render(CERT_MANAGER)
    (configuration,) = of_kind(docs, "MutatingWebhookConfiguration")
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{NAMESPACE}/{WEBHOOK_SERVICE}"
    }
    certificate = named(docs, "Certificate", WEBHOOK_SERVICE)
    assert certificate["spec"]["secretName"] == SECRET
    assert f"{WEBHOOK_SERVICE}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": WEBHOOK_SERVICE}
    assert named(docs, "Issuer", WEBHOOK_SERVICE)["spec"] == {"selfSigned": {}}
    args = loops_args(docs)
    assert flag(args, "--webhook-tls-cert-file") == "/etc/tfjob-extender-webhook/tls.crt"
    assert "--webhook-secret" not in args
    loops = named(docs, "Deployment", f"{RELEASE}-loops")["spec"]["template"]["spec"]
    assert {"name": "webhook-certificate", "secret": {"secretName": SECRET}} in loops["volumes"]
    rules = rules_of(docs, "ClusterRole", f"{RELEASE}-loops-native-gangs")
    assert not any("mutatingwebhookconfigurations" in rule["resources"] for rule in rules)
    assert f"{RELEASE}-loops-webhook-certificates" not in {d["metadata"]["name"] for d in of_kind(docs, "Role")}


def test_cert_manager_signs_with_the_issuer_given() -> None:
    issuer = {"kind": "ClusterIssuer", "name": "platform-ca"}
    docs = render({**NATIVE, "webhook": {"certManager": {"enabled": True, "issuerRef": issuer}}})
    assert named(docs, "Certificate", WEBHOOK_SERVICE)["spec"]["issuerRef"] == issuer
    assert not of_kind(docs, "Issuer")


@pytest.mark.parametrize(
    ("values", "refusal"),
    [
        ({"settings": {"native_gangs": "on"}}, "set nativeGangs instead"),
        ({"nativeGangs": "yes"}, "nativeGangs"),
        ({**NATIVE, "webhook": {"timeoutSeconds": 60}}, "timeoutSeconds"),
    ],
)
def test_the_mode_is_set_once_and_checked(values: dict[str, Any], refusal: str) -> None:
    with pytest.raises(RenderRefused, match=refusal):
        render(values)
