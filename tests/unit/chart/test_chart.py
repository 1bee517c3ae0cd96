"""The chart's values do what values.yaml and the chart's README say: images and their tags, the CRDs kept on
uninstall, one policy file for both processes, the observe listeners' flags and rights, the optional
objects, and the values schema in step with the policy's settings."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from typing import Any

import pytest
import yaml

import extender
from extender.config.documents import chart_policy_schema, chart_settings_schema
from extender.policy.core.settings import PolicySettings
from tests.helm import (
    CHART,
    EVERY_OPTION,
    NAMESPACE,
    RELEASE,
    Document,
    RenderRefused,
    containers,
    helm,
    named,
    of_kind,
    render,
)

CHART_YAML = CHART / "Chart.yaml"
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
POLICY_FILE = "/etc/tfjob-extender/policy.yaml"
OBSERVE_DEBUG_FLAGS = ("--observe-debug", "--observe-auth-token-review", "--observe-auth-token-file")


def chart() -> dict[str, Any]:
    loaded = yaml.safe_load(CHART_YAML.read_text())
    assert isinstance(loaded, dict)
    return loaded


def pod_templates(docs: list[Document]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d["spec"]["template"] for d in of_kind(docs, "Deployment")}


def image_of(docs: list[Document], container: str) -> str:
    image = containers(docs)[container]["image"]
    assert isinstance(image, str)
    return image


def args_of(docs: list[Document], container: str) -> list[str]:
    each = containers(docs)[container]
    args = each.get("args") or each["command"]
    assert isinstance(args, list)
    return args


def checksums(docs: list[Document]) -> dict[str, str]:
    return {name: t["metadata"]["annotations"]["checksum/config"] for name, t in pod_templates(docs).items()}


def test_chart_and_app_versions_are_the_programs() -> None:
    meta = chart()
    assert meta["apiVersion"] == "v2"
    assert meta["version"] == extender.__version__
    assert meta["appVersion"] == extender.__version__
    images = yaml.safe_load(meta["annotations"]["artifacthub.io/images"])
    assert {
        "name": "tfjob-extender",
        "image": f"ghcr.io/tfjob-extender/tfjob-extender:{extender.__version__}",
    } in images


def test_the_chart_lints_strictly() -> None:
    done = subprocess.run([str(helm()), "lint", "--strict", str(CHART)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_extender_image_tag_defaults_to_the_app_version() -> None:
    expected = f"ghcr.io/tfjob-extender/tfjob-extender:{chart()['appVersion']}"
    docs = render()
    assert image_of(docs, "tfjob-extender") == image_of(docs, "tfjob-extender-loops") == expected
    pinned = render({"image": {"registry": "registry.example.com", "repository": "ml/ext", "tag": "1.2.3"}})
    assert image_of(pinned, "tfjob-extender") == "registry.example.com/ml/ext:1.2.3"
    digest = "sha256:" + "ab" * 32
    assert image_of(render({"image": {"digest": digest}}), "tfjob-extender-loops") == f"{expected}@{digest}"


@pytest.mark.parametrize(
    ("kube_version", "tag"),
    [
        ("v1.37.1", "v1.37.1"),
        ("v1.36.4", "v1.36.4"),
        ("v1.35.1+k3s1", "v1.35.1"),
        ("v1.36.4-gke.100", "v1.36.4"),
        ("1.35.2-eks-ce1d5eb", "v1.35.2"),
    ],
)
def test_kube_scheduler_runs_the_clusters_release(kube_version: str, tag: str) -> None:
    docs = render(kube_version=kube_version)
    assert image_of(docs, "kube-scheduler") == f"registry.k8s.io/kube-scheduler:{tag}"


def test_an_explicit_kube_scheduler_tag_wins_over_the_clusters_version() -> None:
    docs = render({"kubeScheduler": {"image": {"tag": "v1.36.4"}}}, kube_version="v1.37.1+k3s1")
    assert image_of(docs, "kube-scheduler") == "registry.k8s.io/kube-scheduler:v1.36.4"


UPSTREAM_GANG_PREEMPTION_OFF = {"podGroupPostFilter": {"disabled": [{"name": "DefaultPreemption"}]}}


@pytest.mark.parametrize(
    ("kube_version", "values", "plugins"),
    [
        ("v1.37.1", {}, UPSTREAM_GANG_PREEMPTION_OFF),
        ("v1.38.1-gke.1", {}, UPSTREAM_GANG_PREEMPTION_OFF),
        ("v1.36.4", {}, None),
        ("v1.37.1", {"kubeScheduler": {"image": {"tag": "v1.36.4"}}}, None),
        ("v1.36.4", {"kubeScheduler": {"image": {"tag": "custom-build"}}}, UPSTREAM_GANG_PREEMPTION_OFF),
    ],
)
def test_kube_scheduler_never_preempts_for_gangs_where_its_release_has_the_extension_point(
    kube_version: str, values: dict[str, Any], plugins: dict[str, Any] | None
) -> None:
    config_map = named(render(values, kube_version=kube_version), "ConfigMap", f"{RELEASE}-scheduler-config")
    (profile,) = yaml.safe_load(config_map["data"]["kube-scheduler-config.yaml"])["profiles"]
    assert profile.get("plugins") == plugins


def test_crds_are_kept_on_uninstall_or_left_out() -> None:
    crds = of_kind(render(), "CustomResourceDefinition")
    assert {crd["metadata"]["name"] for crd in crds} == {
        "podgroups.scheduling.x-k8s.io",
        "podgroups.scheduling.sigs.k8s.io",
        "clusternetworktopologies.scheduling.koordinator.sh",
    }
    for crd in crds:
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep", crd["metadata"]["name"]
    assert not of_kind(render({"crds": {"install": False}}), "CustomResourceDefinition")


def test_one_policy_file_reaches_both_processes() -> None:
    policy = {"starvation_limit_s": 120.0, "network_topology": [{"name": "Rack", "labels": ["example.com/rack"]}]}
    docs = render({"policy": policy})
    config_map = named(docs, "ConfigMap", f"{RELEASE}-policy")
    assert yaml.safe_load(config_map["data"]["policy.yaml"]) == {**policy, "scheduler_name": "tfjob-scheduler"}
    assert set(yaml.safe_load(named(render(), "ConfigMap", f"{RELEASE}-policy")["data"]["policy.yaml"])) == {
        "scheduler_name"
    }, "the built-in defaults but for the scheduler's name"
    templates = pod_templates(docs)
    for deployment, container in (("tfjob-extender-verbs", "tfjob-extender"), ("tfjob-extender-loops", None)):
        spec = templates[deployment]["spec"]
        (each,) = [c for c in spec["containers"] if container in (None, c["name"])]
        assert each["args"][1:3] == ["--config", POLICY_FILE]
        (mount,) = [m for m in each["volumeMounts"] if POLICY_FILE.startswith(m["mountPath"] + "/")]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    assert "--config" not in args_of(docs, "kube-scheduler")[2:]


def test_a_policy_change_rolls_the_pods_that_read_it() -> None:
    before = checksums(render())
    after = checksums(render({"policy": {"starvation_limit_s": 60.0}}))
    assert before.keys() == after.keys() == {"tfjob-extender-scheduler", "tfjob-extender-verbs", "tfjob-extender-loops"}
    for name in ("tfjob-extender-verbs", "tfjob-extender-loops"):
        assert before[name] != after[name], name
    assert before["tfjob-extender-scheduler"] == after["tfjob-extender-scheduler"], "kube-scheduler reads no policy"
    assert checksums(render({"extender": {"replicas": 3}})) == before, "only what the ConfigMaps hold counts"
    renamed = checksums(render({"schedulerName": "gang-scheduler"}))
    assert renamed["tfjob-extender-scheduler"] != before["tfjob-extender-scheduler"], "kube-scheduler's config"


def test_the_policy_takes_only_the_policys_settings() -> None:
    with pytest.raises(RenderRefused, match="starvation_limt_s"):
        render({"policy": {"starvation_limt_s": 60.0}})
    with pytest.raises(RenderRefused, match="starving_hold"):
        render({"policy": {"starving_hold": "wait"}})
    with pytest.raises(RenderRefused, match="differs from schedulerName"):
        render({"policy": {"scheduler_name": "other"}})


def test_the_values_schema_takes_what_the_processes_take() -> None:
    """The `policy:` and `settings:` blocks' schemas are made from the settings' declarations, so `helm
    install` refuses a key or a value out of range that the processes would refuse at start. After a change
    of a declaration: `.venv/bin/python hack/generate_settings.py`."""
    assert SCHEMA["properties"]["policy"] == chart_policy_schema()
    assert SCHEMA["properties"]["settings"] == chart_settings_schema()


def test_settings_reach_both_processes_beside_the_policy() -> None:
    values = {
        "policy": {"starvation_limit_s": 120.0},
        "settings": {"model_catch_up_s": 1.0, "preemption_loop": {"interval_s": 5.0}},
    }
    config_map = named(render(values), "ConfigMap", f"{RELEASE}-policy")
    assert yaml.safe_load(config_map["data"]["policy.yaml"]) == {
        "starvation_limit_s": 120.0,
        "scheduler_name": "tfjob-scheduler",
        "model_catch_up_s": 1.0,
        "preemption_loop": {"interval_s": 5.0},
    }


def test_settings_the_chart_sets_itself_are_refused() -> None:
    with pytest.raises(RenderRefused, match="logFormat"):
        render({"settings": {"log_format": "text"}})
    with pytest.raises(RenderRefused, match="release namespace"):
        render({"settings": {"leader_election": {"lease_namespace": "elsewhere"}}})
    with pytest.raises(RenderRefused, match="interval_s"):
        render({"settings": {"preemption_loop": {"interval_s": 0}}})
    with pytest.raises(RenderRefused, match="identity"):
        render({"settings": {"leader_election": {"identity": "one"}}})


def test_the_loops_lease_rights_follow_its_name() -> None:
    docs = render({"settings": {"leader_election": {"lease_name": "team-a-loops"}}})
    role = named(docs, "Role", f"{RELEASE}-loops-lease")
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["team-a-loops"],
            "verbs": ["get", "update"]} in role["rules"]  # fmt: skip


def test_a_policy_value_out_of_range_is_refused_by_helm() -> None:
    with pytest.raises(RenderRefused, match="starvation_limit_s"):
        render({"policy": {"starvation_limit_s": -1}})
    with pytest.raises(RenderRefused, match="colocation_weight"):
        render({"policy": {"colocation_weight": 1.5}})
    with pytest.raises(RenderRefused, match="network_topology"):
        render({"policy": {"network_topology": [{"name": "SpineLayer", "labels": []}]}})


def test_the_policy_keys_shown_in_values_yaml_are_settings() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    start = lines.index("policy: {}")
    shown = []
    for line in lines[start + 1 :]:
        if not line.startswith("#"):
            break
        if found := re.match(r"#   ([a-z_]+):", line):
            shown.append(found.group(1))
    fields = {field.name for field in dataclasses.fields(PolicySettings)}
    assert len(shown) > 10 and set(shown) <= fields


def test_the_scheduler_name_names_the_profile_the_lease_and_the_extenders_filter() -> None:
    docs = render({"schedulerName": "gang-scheduler"}, namespace="ml-system")
    config_map = named(docs, "ConfigMap", f"{RELEASE}-scheduler-config")
    config = yaml.safe_load(config_map["data"]["kube-scheduler-config.yaml"])
    assert [profile["schedulerName"] for profile in config["profiles"]] == ["gang-scheduler"]
    assert config["leaderElection"]["resourceName"] == "gang-scheduler"
    assert config["leaderElection"]["resourceNamespace"] == "ml-system"
    role = named(docs, "Role", f"{RELEASE}-scheduler-lease")
    assert role["metadata"]["namespace"] == "ml-system"
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["gang-scheduler"],
            "verbs": ["get", "update"]} in role["rules"]  # fmt: skip
    policy = yaml.safe_load(named(docs, "ConfigMap", f"{RELEASE}-policy")["data"]["policy.yaml"])
    assert policy["scheduler_name"] == "gang-scheduler"
    loops = args_of(docs, "tfjob-extender-loops")
    assert loops[loops.index("--lease-namespace") + 1] == "ml-system"


def test_the_exact_command_lines() -> None:
    docs = render()
    tls = "/etc/tfjob-extender/verbs-tls"
    assert args_of(docs, "tfjob-extender") == [
        "serve", "--config", POLICY_FILE, "--host", "0.0.0.0", "--port", "8888",
        "--tls-cert-file", f"{tls}/tls.crt", "--tls-key-file", f"{tls}/tls.key",
        "--tls-client-ca-file", f"{tls}/ca.crt",
        "--no-loops", "--observe-host", "0.0.0.0", "--observe-port", "8890", "--log-format", "json",
    ]  # fmt: skip
    assert args_of(docs, "tfjob-extender-loops") == [
        "loops", "--config", POLICY_FILE, "--host", "0.0.0.0", "--port", "8889",
        "--lease-namespace", NAMESPACE, "--lease-name", f"{RELEASE}-loops",
        "--verbs-tls-secret", f"{RELEASE}-verbs-tls", "--verbs-tls-service", f"{RELEASE}-verbs",
        "--verbs-tls-namespace", NAMESPACE, "--log-format", "json", "--native-gangs", "off",
    ]  # fmt: skip
    assert args_of(docs, "kube-scheduler") == [
        "kube-scheduler",
        "--config=/etc/tfjob-scheduler/kube-scheduler-config.yaml",
    ]
    text = render({"logFormat": "text", "loops": {"dryRun": True}})
    assert args_of(text, "tfjob-extender")[-2:] == ["--log-format", "text"]
    assert args_of(text, "tfjob-extender-loops")[-5:] == ["--log-format", "text", "--native-gangs", "off", "--dry-run"]


def test_extra_args_come_last() -> None:
    docs = render(EVERY_OPTION)
    assert args_of(docs, "tfjob-extender")[-1] == "--own-barrier-for-gated-gangs"
    assert args_of(docs, "tfjob-extender-loops")[-2:] == ["--scaler-interval-s", "5"]
    assert args_of(docs, "kube-scheduler")[-1] == "--feature-gates=GenericWorkload=true"


def test_observe_debug_is_off_by_default_and_behind_a_token_review_when_on() -> None:
    for container in ("tfjob-extender", "tfjob-extender-loops"):
        assert not set(OBSERVE_DEBUG_FLAGS) & set(args_of(render(), container))
    users = ["system:serviceaccount:monitoring:grafana", "alice"]
    groups = ["ml-platform"]
    docs = render({"observe": {"debug": {"enabled": True, "allowedUsers": users, "allowedGroups": groups}}})
    services = {"tfjob-extender": f"{RELEASE}-observe", "tfjob-extender-loops": f"{RELEASE}-loops"}
    for container, service in services.items():
        args = args_of(docs, container)
        tail = args[args.index("--observe-debug") :]
        assert tail == [
            "--observe-debug",
            "--observe-auth-token-review",
            *[item for user in users for item in ("--observe-auth-allowed-user", user)],
            "--observe-auth-allowed-group",
            "ml-platform",
            "--observe-auth-access-review",
            f"{NAMESPACE}/{service}",
        ]
    only_named = render({"observe": {"debug": {"enabled": True, "allowedUsers": users, "accessReview": False}}})
    assert "--observe-auth-access-review" not in args_of(only_named, "tfjob-extender")
    with pytest.raises(RenderRefused, match="lets no one read /debug by itself"):
        render({"observe": {"debug": {"enabled": True, "accessReview": False}}})


def token_reviewers(docs: list[Document]) -> set[str]:
    """ServiceAccounts bound to a role that may create TokenReviews."""
    roles = {
        role["metadata"]["name"]
        for role in of_kind(docs, "ClusterRole")
        for rule in role["rules"]
        if "tokenreviews" in rule["resources"] and "create" in rule["verbs"]
    }
    return {
        subject["name"]
        for binding in of_kind(docs, "ClusterRoleBinding")
        if binding["roleRef"]["name"] in roles
        for subject in binding["subjects"]
    }


def test_token_review_rights_exist_only_for_token_review_auth() -> None:
    assert token_reviewers(render()) == set()
    review = render({"observe": {"debug": {"enabled": True}}})
    assert token_reviewers(review) == {"tfjob-extender", "tfjob-extender-loops"}, "never kube-scheduler's account"
    token_file = {"enabled": True, "auth": "tokenFile", "tokenFile": {"secretName": "observe-tokens"}}
    assert token_reviewers(render({"observe": {"debug": token_file}})) == set()
    assert token_reviewers(render({"observe": {"debug": {"auth": "tokenReview"}}})) == set(), "debug off"


def test_a_token_file_comes_from_the_named_secret() -> None:
    debug = {"enabled": True, "auth": "tokenFile", "tokenFile": {"secretName": "observe-tokens", "key": "list"}}
    docs = render({"observe": {"debug": debug}})
    for deployment, container in (("tfjob-extender-verbs", "tfjob-extender"), ("tfjob-extender-loops", None)):
        spec = pod_templates(docs)[deployment]["spec"]
        (each,) = [c for c in spec["containers"] if container in (None, c["name"])]
        args = each["args"]
        token_file = args[args.index("--observe-auth-token-file") + 1]
        assert "--observe-debug" in args and "--observe-auth-token-review" not in args
        (mount,) = [m for m in each["volumeMounts"] if token_file.startswith(m["mountPath"] + "/")]
        assert not any(
            m["mountPath"].startswith(mount["mountPath"] + "/") or mount["mountPath"].startswith(m["mountPath"] + "/")
            for m in each["volumeMounts"]
            if m is not mount
        ), "no mount inside another"
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["secret"]["secretName"] == "observe-tokens"
        assert token_file.endswith("/list")
    with pytest.raises(RenderRefused, match="secretName"):
        render({"observe": {"debug": {"enabled": True, "auth": "tokenFile"}}})
    with pytest.raises(RenderRefused, match="allowedUsers"):
        render({"observe": {"debug": {**debug, "allowedUsers": ["alice"]}}})
    with pytest.raises(RenderRefused, match="auth"):
        render({"observe": {"debug": {"enabled": True, "auth": "basic"}}})


def test_no_priority_class_by_default() -> None:
    for name, template in pod_templates(render()).items():
        assert "priorityClassName" not in template["spec"], name
    chosen = pod_templates(render(EVERY_OPTION))
    for name in ("tfjob-extender-scheduler", "tfjob-extender-verbs"):
        assert chosen[name]["spec"]["priorityClassName"] == "tfjob-critical", name


def test_pod_placement_labels_and_annotations_reach_the_pods() -> None:
    templates = pod_templates(render(EVERY_OPTION))
    assert templates["tfjob-extender-scheduler"]["metadata"]["labels"]["example.com/team"] == "ml"
    spec = templates["tfjob-extender-verbs"]
    for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
        assert spec["spec"][key] == EVERY_OPTION["extender"][key], key
    assert spec["spec"]["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert spec["metadata"]["labels"]["example.com/team"] == "ml"
    assert spec["metadata"]["annotations"]["example.com/owner"] == "ml-platform"
    for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "imagePullSecrets"):
        assert key not in pod_templates(render())["tfjob-extender-verbs"]["spec"], key


def test_service_monitor_is_optional_and_scrapes_both_services() -> None:
    assert not of_kind(render(), "ServiceMonitor")
    docs = render({"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}})
    (monitor,) = of_kind(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    selector = monitor["spec"]["selector"]["matchLabels"]
    selected = [s for s in of_kind(docs, "Service") if selector.items() <= s["metadata"]["labels"].items()]
    assert {s["metadata"]["name"] for s in selected} == {
        "tfjob-extender-observe",
        "tfjob-extender-loops",
        "tfjob-extender-kube-scheduler",
        "tfjob-extender-verbs",
    }
    endpoint, scheduler = monitor["spec"]["endpoints"]
    ports = {s["metadata"]["name"]: {port["name"] for port in s["spec"]["ports"]} for s in selected}
    assert ports["tfjob-extender-verbs"].isdisjoint({endpoint["port"], scheduler["port"]}), "the verbs: no metrics"
    for service in ("tfjob-extender-observe", "tfjob-extender-loops"):
        assert endpoint["port"] in ports[service]
    assert endpoint["path"] == scheduler["path"] == "/metrics"
    assert ports["tfjob-extender-kube-scheduler"] == {scheduler["port"]}, "kube-scheduler's own metrics"


def test_disruption_budgets_cover_each_deployment_unless_turned_off() -> None:
    docs = render()
    budgets = of_kind(docs, "PodDisruptionBudget")
    assert len(budgets) == 3
    for template in pod_templates(docs).values():
        (budget,) = [
            b for b in budgets if b["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
        ]
        assert budget["spec"]["maxUnavailable"] == 1
        assert "minAvailable" not in budget["spec"]
    assert not of_kind(render({"podDisruptionBudget": {"enabled": False}}), "PodDisruptionBudget")


def test_network_policies_let_in_only_the_observe_ports_and_kube_scheduler_to_the_verbs() -> None:
    docs = render()
    policies = of_kind(docs, "NetworkPolicy")
    ports = {"tfjob-extender-scheduler": [], "tfjob-extender-verbs": [8890, 8888], "tfjob-extender-loops": [8889]}
    templates = pod_templates(docs)
    assert len(policies) == len(templates) == 3

    def policy_of(template: dict[str, Any], found: list[dict[str, Any]]) -> dict[str, Any]:
        (policy,) = [
            p
            for p in found
            if p["spec"]["podSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
        ]
        return policy

    for name, template in templates.items():
        policy = policy_of(template, policies)
        assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        rules = policy["spec"]["ingress"]
        assert [rule["ports"][0]["port"] for rule in rules] == ports[name], name
        assert policy["spec"]["egress"] == [{}], "to the API server, wherever it is"
    observe, verbs = policy_of(templates["tfjob-extender-verbs"], policies)["spec"]["ingress"]
    assert "from" not in observe, "from anywhere by default"
    (scheduler,) = verbs["from"]
    assert scheduler["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "scheduler"
    assert (
        scheduler["podSelector"]["matchLabels"].items()
        <= templates["tfjob-extender-scheduler"]["metadata"]["labels"].items()
    )
    narrowed = of_kind(render(EVERY_OPTION), "NetworkPolicy")
    for policy in narrowed:
        rule = policy["spec"]["ingress"][0]
        if policy["metadata"]["name"] == "tfjob-extender-scheduler":
            assert (
                rule["ports"] == [{"port": 10259, "protocol": "TCP"}]
                and rule["from"] == EVERY_OPTION["networkPolicy"]["from"]
            )
            continue
        *peers, tester = rule["from"]
        assert peers == EVERY_OPTION["networkPolicy"]["from"]
        assert tester["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "test", "helm test's pod"
    assert not of_kind(render({"networkPolicy": {"enabled": False}}), "NetworkPolicy")


def test_names_follow_the_release_and_the_overrides() -> None:
    other = render(release="ml")
    assert {d["metadata"]["name"] for d in of_kind(other, "Deployment")} == {
        "ml-tfjob-extender-scheduler",
        "ml-tfjob-extender-verbs",
        "ml-tfjob-extender-loops",
    }
    assert {d["metadata"]["name"] for d in of_kind(render({"fullnameOverride": "gangs"}), "Deployment")} == {
        "gangs-scheduler",
        "gangs-verbs",
        "gangs-loops",
    }
    renamed = render({"nameOverride": "gangs"}, release="ml")
    assert {d["metadata"]["labels"]["app.kubernetes.io/name"] for d in renamed} == {"gangs"}


def test_every_object_carries_the_standard_labels_and_its_namespace() -> None:
    cluster_scoped = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
    for doc in render(EVERY_OPTION):
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "tfjob-extender", doc["metadata"]["name"]
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/version"] == extender.__version__
        if doc["kind"] in cluster_scoped:
            assert "namespace" not in doc["metadata"]
        elif doc["metadata"]["name"] != f"{RELEASE}-scheduler-authentication-reader":
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]["name"]
        else:
            assert doc["metadata"]["namespace"] == "kube-system"


def test_the_loops_may_patch_kueue_workloads_only_with_the_priority_boost_on() -> None:
    def kueue_verbs(docs: list[Document]) -> set[str]:
        rules = named(docs, "ClusterRole", f"{RELEASE}-loops")["rules"]
        return {
            verb
            for rule in rules
            if rule["apiGroups"] == ["kueue.x-k8s.io"] and rule["resources"] == ["workloads"]
            for verb in rule["verbs"]
        }

    assert kueue_verbs(render()) == set()
    assert kueue_verbs(render({"policy": {"kueue_priority_boost": True}})) == {"list", "patch"}
