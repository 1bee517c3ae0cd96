"""The chart's native gangs: `nativeGangs: auto` (the default) on exactly where the cluster serves
scheduling.k8s.io/v1beta1 PodGroups and kube-scheduler is 1.37 or later, `on` and `off` as they say; native
gangs and kube-scheduler's GenericWorkload gate always together, the gate given once; while on, the webhook's
configuration scoped to TFJob creations naming the scheduler and never blocking them, its Service on the loops
pod, the loops' flags and narrow rights; its certificate from the extender or from cert-manager."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.helm import NAMESPACE, RELEASE, Document, RenderRefused, containers, named, of_kind, render

NATIVE = {"nativeGangs": "on"}
CERT_MANAGER = {**NATIVE, "webhook": {"certManager": {"enabled": True}}}
WEBHOOK_SERVICE = f"{RELEASE}-webhook"
SECRET = f"{RELEASE}-webhook-tls"
SERVED = ("scheduling.k8s.io/v1beta1/PodGroup",)
"""What `helm install` sees on a 1.37 cluster with GenericWorkload (and `helm template --api-versions` gives)."""
GATE = "--feature-gates=GenericWorkload=true"


def loops_args(docs: list[Document]) -> list[str]:
    args: list[str] = containers(docs)["tfjob-extender-loops"]["args"]
    return args


def scheduler_command(docs: list[Document]) -> list[str]:
    command: list[str] = containers(docs)["kube-scheduler"]["command"]
    return command


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def rules_of(docs: list[Document], kind: str, name: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = named(docs, kind, name)["rules"]
    return rules


def feature_gates(command: list[str]) -> dict[str, bool]:
    """kube-scheduler's feature gates as its flag parser reads them (`--feature-gates=A=true,B=false`, or
    `--feature-gates` and its value next), checking that the flag is given at most once."""
    values = [arg.removeprefix("--feature-gates=") for arg in command if arg.startswith("--feature-gates=")]
    values += [command[i + 1] for i, arg in enumerate(command) if arg == "--feature-gates"]
    assert len(values) <= 1, f"--feature-gates given more than once: {command}"
    pairs = [pair.split("=") for value in values for pair in value.split(",") if pair.strip()]
    return {key.strip(): value.strip().lower() in ("true", "1", "t") for key, value in pairs}


def native_gangs_on(docs: list[Document]) -> bool:
    """Whether the render gives native gangs, checking that its three signs agree: the loops' flag, the
    webhook's objects, and kube-scheduler's GenericWorkload gate (given once, never a second --feature-gates)."""
    mode = flag(loops_args(docs), "--native-gangs")
    webhook = bool(of_kind(docs, "MutatingWebhookConfiguration"))
    gated = feature_gates(scheduler_command(docs)).get("GenericWorkload", False)
    assert mode in ("on", "off")
    assert webhook == (mode == "on"), "the webhook renders exactly while native gangs are on"
    assert gated or mode == "off", "native gangs never without kube-scheduler's gate"
    return mode == "on"


def test_nothing_of_native_gangs_renders_by_default() -> None:
    docs = render()
    assert not of_kind(docs, "MutatingWebhookConfiguration")
    assert WEBHOOK_SERVICE not in {d["metadata"]["name"] for d in of_kind(docs, "Service")}
    assert not any("webhook" in arg for arg in loops_args(docs))
    assert flag(loops_args(docs), "--native-gangs") == "off"
    assert not any("native-gangs" in d["metadata"]["name"] for d in of_kind(docs, "ClusterRole"))
    assert scheduler_command(docs) == ["kube-scheduler", "--config=/etc/tfjob-scheduler/kube-scheduler-config.yaml"]


@pytest.mark.parametrize(
    ("kube_version", "values", "api_versions", "on"),
    [
        pytest.param("v1.37.1", {}, SERVED, True, id="served-1.37"),
        pytest.param("v1.37.1-gke.100", {}, SERVED, True, id="served-1.37-suffixed"),
        pytest.param("v1.38.1", {}, SERVED, True, id="served-1.38"),
        pytest.param("v1.37.1", {}, (), False, id="not-served"),
        pytest.param("v1.37.1", {}, ("scheduling.k8s.io/v1beta1",), False, id="group-version-only"),
        pytest.param("v1.37.1", {}, ("scheduling.k8s.io/v1alpha2/PodGroup",), False, id="alpha-only"),
        pytest.param("v1.36.4", {}, SERVED, False, id="served-but-1.36"),
        pytest.param("v1.37.1", {"kubeScheduler": {"image": {"tag": "v1.36.4"}}}, SERVED, False, id="tag-1.36"),
        pytest.param("v1.37.1", {"kubeScheduler": {"image": {"tag": "v1.37.0"}}}, SERVED, True, id="tag-1.37"),
        pytest.param("v1.37.1", {"kubeScheduler": {"image": {"tag": "custom"}}}, SERVED, True, id="tag-unversioned"),
    ],
)
def test_auto_is_on_exactly_where_the_api_is_served_and_kube_scheduler_is_1_37(
    kube_version: str, values: dict[str, Any], api_versions: tuple[str, ...], on: bool
) -> None:
    for given in ({**values, "nativeGangs": "auto"}, values):
        docs = render(given, kube_version=kube_version, api_versions=api_versions)
        assert native_gangs_on(docs) is on
        assert (GATE in scheduler_command(docs)) is on


def test_auto_on_gives_the_gate_the_webhook_and_the_loops_flag() -> None:
    docs = render(api_versions=SERVED)
    assert scheduler_command(docs) == [
        "kube-scheduler",
        "--config=/etc/tfjob-scheduler/kube-scheduler-config.yaml",
        GATE,
    ]
    assert flag(loops_args(docs), "--native-gangs") == "on"
    assert flag(loops_args(docs), "--webhook-service") == WEBHOOK_SERVICE
    assert named(docs, "ClusterRole", f"{RELEASE}-loops-native-gangs")


@pytest.mark.parametrize(
    ("extra_args", "command_tail"),
    [
        pytest.param(["--v=2"], [GATE, "--v=2"], id="no-feature-gates"),
        pytest.param(
            ["--v=2", "--feature-gates=Foo=true"],
            ["--v=2", "--feature-gates=Foo=true,GenericWorkload=true"],
            id="merged",
        ),
        pytest.param(["--feature-gates", "Foo=true"], ["--feature-gates", "Foo=true,GenericWorkload=true"], id="split"),
        pytest.param(["--feature-gates="], [GATE], id="empty"),
        pytest.param([GATE], [GATE], id="already"),
        pytest.param(
            ["--feature-gates=Foo=true, GenericWorkload=True"],
            ["--feature-gates=Foo=true, GenericWorkload=True"],
            id="already-spelt-otherwise",
        ),
        pytest.param(
            ["--feature-gates", "GenericWorkload=true,Foo=false", "--v=2"],
            ["--feature-gates", "GenericWorkload=true,Foo=false", "--v=2"],
            id="already-split",
        ),
    ],
)
@pytest.mark.parametrize("setting", ["auto", "on"])
def test_the_gate_is_added_once_into_the_users_feature_gates(
    setting: str, extra_args: list[str], command_tail: list[str]
) -> None:
    docs = render({"nativeGangs": setting, "kubeScheduler": {"extraArgs": extra_args}}, api_versions=SERVED)
    assert native_gangs_on(docs)
    assert scheduler_command(docs)[2:] == command_tail


@pytest.mark.parametrize("api_versions", [SERVED, ()])
def test_off_is_off_and_leaves_the_users_feature_gates_alone(api_versions: tuple[str, ...]) -> None:
    extra_args = ["--feature-gates=Foo=true"]
    docs = render({"nativeGangs": "off", "kubeScheduler": {"extraArgs": extra_args}}, api_versions=api_versions)
    assert not native_gangs_on(docs)
    assert scheduler_command(docs)[2:] == extra_args
    assert not of_kind(docs, "MutatingWebhookConfiguration")


def test_auto_is_off_where_the_users_extra_args_turn_the_gate_off() -> None:
    extra_args = ["--feature-gates=GenericWorkload=false"]
    docs = render({"kubeScheduler": {"extraArgs": extra_args}}, api_versions=SERVED)
    assert not native_gangs_on(docs)
    assert scheduler_command(docs)[2:] == extra_args


def test_on_needs_no_capability_so_helm_template_renders_it() -> None:
    docs = render(NATIVE)
    assert native_gangs_on(docs)
    assert GATE in scheduler_command(docs)


@pytest.mark.parametrize(
    ("values", "kube_version", "refusal"),
    [
        ({}, "v1.36.4", "kube-scheduler is v1.36.4"),
        ({"kubeScheduler": {"image": {"tag": "v1.35.2"}}}, "v1.37.1", "kube-scheduler is v1.35.2"),
        ({"kubeScheduler": {"extraArgs": ["--feature-gates=GenericWorkload=false"]}}, "v1.37.1", "gate off"),
        ({"kubeScheduler": {"extraArgs": ["--feature-gates", "A=true,GenericWorkload=0"]}}, "v1.37.1", "gate off"),
    ],
)
def test_on_refuses_a_kube_scheduler_that_cannot_hold_the_barrier(
    values: dict[str, Any], kube_version: str, refusal: str
) -> None:
    with pytest.raises(RenderRefused, match=refusal):
        render({**NATIVE, **values}, kube_version=kube_version, api_versions=SERVED)


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


def test_the_loops_keep_the_webhooks_certificate_and_take_the_mode_as_a_flag() -> None:
    docs = render(NATIVE)
    args = loops_args(docs)
    assert flag(args, "--native-gangs") == "on"
    assert (flag(args, "--webhook-host"), flag(args, "--webhook-port")) == ("0.0.0.0", "9443")
    assert flag(args, "--webhook-service") == WEBHOOK_SERVICE
    assert flag(args, "--webhook-namespace") == NAMESPACE
    assert flag(args, "--webhook-configuration") == RELEASE
    assert flag(args, "--webhook-secret") == SECRET
    config = yaml.safe_load(named(docs, "ConfigMap", f"{RELEASE}-policy")["data"]["policy.yaml"])
    assert "native_gangs" not in config, "the flag alone says it"
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
