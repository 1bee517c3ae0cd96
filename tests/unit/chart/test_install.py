"""What the install asks for: the chart's objects as `manifests/` holds them (its default render, which
test_rendered_manifests.py keeps equal to a fresh one) and, where a check holds for any values, the render with
every option on. They parse, agree with each other, with the scheduler configuration and the Dockerfile, and
ask for no more than needed: one identity per pod with short-lived projected credentials, kube-scheduler
calling the verbs over mutual TLS, narrow RBAC, the loops apart."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.helm import (
    CHART,
    EVERY_OPTION,
    MANIFESTS,
    NAMESPACE,
    REPO,
    Document,
    containers,
    manifest_documents,
    named,
    of_kind,
    render,
)

SCHEDULER_CONFIG = REPO / "scheduler-config" / "kube-scheduler-config.yaml"
DOCKERFILE = REPO / "Dockerfile"
CRDS = {
    "scheduling.x-k8s.io": MANIFESTS / "crds" / "podgroups.scheduling.x-k8s.io.yaml",
    "scheduling.sigs.k8s.io": MANIFESTS / "crds" / "podgroups.scheduling.sigs.k8s.io.yaml",
}
# Configuration files, not API objects: they carry no metadata.
NOT_API_OBJECTS = ("Kustomization", "KubeSchedulerConfiguration")
SCHEDULER_ACCOUNT = "tfjob-extender-scheduler"
EXTENDER_ACCOUNT = "tfjob-extender"
LOOPS_ACCOUNT = "tfjob-extender-loops"
ACCOUNTS = {SCHEDULER_ACCOUNT, EXTENDER_ACCOUNT, LOOPS_ACCOUNT}
SCHEDULER_POD = "tfjob-extender-scheduler"
VERBS_POD = "tfjob-extender-verbs"
LOOPS_POD = "tfjob-extender-loops"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"

INSTALLS: dict[str, Callable[[], list[Document]]] = {
    "manifests": manifest_documents,
    "every-option": lambda: render(EVERY_OPTION),
}


@pytest.fixture(params=sorted(INSTALLS))
def install(request: pytest.FixtureRequest) -> list[Document]:
    """The objects of one install: `manifests/`, or the chart rendered with every option on."""
    return INSTALLS[request.param]()


def documents(path: Path) -> list[dict[str, Any]]:
    docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    assert all(isinstance(doc, dict) for doc in docs), path
    return docs


def yaml_files() -> list[Path]:
    return sorted(
        path
        for folder in (MANIFESTS, SCHEDULER_CONFIG.parent)
        for pattern in ("*.yaml", "*.yml")
        for path in folder.rglob(pattern)
    )


def manifests() -> list[Document]:
    return manifest_documents()


def pod_spec(docs: list[Document], deployment: str) -> dict[str, Any]:
    spec = named(docs, "Deployment", deployment)["spec"]["template"]["spec"]
    assert isinstance(spec, dict)
    return spec


def granted_to(docs: list[Document], account: str) -> set[tuple[str, str, str, str]]:
    """(api group, resource, verb, resource name or "*") every binding gives `account`, cluster-wide or in a
    namespace; built-in roles (system:*, extension-*) stand for themselves as ("system", role, "*", "*")."""
    roles = {(r["kind"], r["metadata"]["name"]): r for kind in ("ClusterRole", "Role") for r in of_kind(docs, kind)}
    found: set[tuple[str, str, str, str]] = set()
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in of_kind(docs, kind):
            if not any(s["name"] == account for s in binding["subjects"]):
                continue
            ref = binding["roleRef"]
            role = roles.get((ref["kind"], ref["name"]))
            if role is None:
                found.add(("system", ref["name"], "*", "*"))
                continue
            for rule in role["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        for verb in rule["verbs"]:
                            for name in rule.get("resourceNames") or ["*"]:
                                found.add((group, resource, verb, name))
    return found


def lease_rights(docs: list[Document], account: str, namespace: str) -> dict[str, set[str]]:
    """Verbs on Leases that RoleBindings in `namespace` give `account`, by Lease name ("*": any)."""
    roles = {r["metadata"]["name"]: r for r in of_kind(docs, "Role") if r["metadata"]["namespace"] == namespace}
    rights: dict[str, set[str]] = {}
    for binding in of_kind(docs, "RoleBinding"):
        if binding["metadata"]["namespace"] != namespace or binding["roleRef"]["kind"] != "Role":
            continue
        if not any(s["name"] == account for s in binding["subjects"]):
            continue
        for rule in roles[binding["roleRef"]["name"]]["rules"]:
            if rule["apiGroups"] == ["coordination.k8s.io"] and rule["resources"] == ["leases"]:
                for name in rule.get("resourceNames") or ["*"]:
                    rights.setdefault(name, set()).update(rule["verbs"])
    return rights


def mounted_scheduler_config(docs: list[Document]) -> dict[str, Any]:
    """The KubeSchedulerConfiguration kube-scheduler reads: the file its --config names, in the ConfigMap
    mounted at that file's folder."""
    pod = pod_spec(docs, SCHEDULER_POD)
    scheduler = containers(docs)["kube-scheduler"]
    (config_flag,) = [arg for arg in scheduler["command"] if arg.startswith("--config=")]
    config_path = PurePosixPath(config_flag.removeprefix("--config="))
    (mount,) = [m for m in scheduler["volumeMounts"] if PurePosixPath(m["mountPath"]) == config_path.parent]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    config_map = named(docs, "ConfigMap", volume["configMap"]["name"])
    config = yaml.safe_load(config_map["data"][config_path.name])
    assert isinstance(config, dict)
    return config


def the_extender(config: dict[str, Any]) -> dict[str, Any]:
    (extender,) = config["extenders"]
    assert isinstance(extender, dict)
    return extender


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def dockerfile_instruction(name: str) -> list[str]:
    (line,) = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith(f"{name} ")]
    value = json.loads(line.removeprefix(f"{name} "))
    assert isinstance(value, list) and all(isinstance(item, str) for item in value), line
    return value


@pytest.mark.parametrize("path", yaml_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_every_document_is_a_kubernetes_object(path: Path) -> None:
    docs = documents(path)
    assert docs, path
    for doc in docs:
        assert isinstance(doc.get("apiVersion"), str) and doc["apiVersion"], path
        assert isinstance(doc.get("kind"), str) and doc["kind"], path
        if doc["kind"] not in NOT_API_OBJECTS:
            assert isinstance(doc["metadata"]["name"], str) and doc["metadata"]["name"], path


def test_kube_scheduler_reads_the_documented_configuration_but_for_the_lease_namespace_client_and_verbs_url() -> None:
    """scheduler-config/ is the local control plane's copy of what the chart mounts (see its README): there
    the extender listens on kube-scheduler's own loopback address, plain HTTP."""
    rendered = mounted_scheduler_config(manifests())
    documented = yaml.safe_load(SCHEDULER_CONFIG.read_text())
    assert rendered["leaderElection"]["resourceNamespace"] == NAMESPACE
    assert the_extender(documented)["urlPrefix"] == "http://127.0.0.1:8888"
    assert the_extender(documented)["enableHTTPS"] is False and "tlsConfig" not in the_extender(documented)
    for config in (rendered, documented):
        del config["leaderElection"]["resourceNamespace"]
        del config["clientConnection"]
        for key in ("urlPrefix", "enableHTTPS", "tlsConfig"):
            the_extender(config).pop(key, None)
    assert rendered == documented


def test_the_extender_block_is_safe_for_gangs() -> None:
    config = mounted_scheduler_config(manifests())
    (profile,) = config["profiles"]
    extender = the_extender(config)
    assert profile["schedulerName"] == "tfjob-scheduler"
    assert profile["percentageOfNodesToScore"] == 100
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is False
    assert (extender["filterVerb"], extender["prioritizeVerb"], extender["preemptVerb"]) == (
        "filter",
        "prioritize",
        "preempt",
    )
    assert type(extender["weight"]) is int and extender["weight"] > 0
    assert "bindVerb" not in extender
    assert config["leaderElection"]["resourceName"] == profile["schedulerName"]


def secret_mount(docs: list[Document], deployment: str, container: str, path: str) -> tuple[str, set[str]]:
    """(the Secret, its keys) mounted at the folder of `path` in `container` of `deployment`."""
    pod = pod_spec(docs, deployment)
    (mount,) = [
        m for m in containers(docs)[container]["volumeMounts"] if m["mountPath"] == str(PurePosixPath(path).parent)
    ]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return volume["secret"]["secretName"], {item["path"] for item in volume["secret"]["items"]}


def test_kube_scheduler_calls_the_verbs_through_their_service_over_mutual_tls(install: list[Document]) -> None:
    extender_block = the_extender(mounted_scheduler_config(install))
    url = urlsplit(extender_block["urlPrefix"])
    assert url.scheme == "https" and extender_block["enableHTTPS"] is True
    service_name, namespace, *_ = (url.hostname or "").split(".")
    service = named(install, "Service", service_name)
    assert namespace == NAMESPACE and service["spec"]["sessionAffinity"] == "ClientIP"
    (exposed,) = service["spec"]["ports"]
    assert exposed["port"] == url.port
    template = named(install, "Deployment", VERBS_POD)["spec"]["template"]
    assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    extender = containers(install)["tfjob-extender"]
    args = extender["args"]
    assert args[0] == "serve" and "--no-loops" in args
    (port,) = [p for p in extender["ports"] if p["name"] == exposed["targetPort"]]
    assert (flag(args, "--host"), flag(args, "--port")) == ("0.0.0.0", str(port["containerPort"]))
    tls = extender_block["tlsConfig"]
    assert tls["serverName"] == f"{service_name}.{NAMESPACE}.svc" and "insecure" not in tls
    client_secret, client_keys = secret_mount(install, SCHEDULER_POD, "kube-scheduler", tls["certFile"])
    assert client_keys == {"ca.crt", "client.crt", "client.key"}, "never the CAs' keys or the serving key"
    assert {PurePosixPath(tls[key]).name for key in ("caFile", "certFile", "keyFile")} == client_keys
    serving_secret, serving_keys = secret_mount(install, VERBS_POD, "tfjob-extender", flag(args, "--tls-cert-file"))
    assert serving_keys == {"ca.crt", "tls.crt", "tls.key"}
    assert {PurePosixPath(flag(args, f"--tls-{key}-file")).name for key in ("cert", "key", "client-ca")} == serving_keys
    loops = containers(install)[LOOPS_POD]["args"]
    assert flag(loops, "--verbs-tls-secret") == client_secret == serving_secret
    assert (flag(loops, "--verbs-tls-service"), flag(loops, "--verbs-tls-namespace")) == (service_name, NAMESPACE)
    assert dockerfile_instruction("ENTRYPOINT") == ["tfjob-extender"]
    image_default = dockerfile_instruction("CMD")
    assert image_default[0] == "serve" and flag(image_default, "--port") == str(url.port)


def test_the_probes_ask_the_listeners_the_kubelet_can_reach(install: list[Document]) -> None:
    """The verbs want kube-scheduler's client certificate, which the kubelet's probes do not have: the
    extender and the loops are probed on their observe ports, bound on every address."""
    by_name = containers(install)
    for name, command, port in (("tfjob-extender", "serve", "--observe-port"), (LOOPS_POD, "loops", "--port")):
        each = by_name[name]
        assert each["args"][0] == command
        (observe,) = [p for p in each["ports"] if p["name"] == "observe"]
        assert observe["containerPort"] == int(flag(each["args"], port))
        host = flag(each["args"], "--observe-host" if command == "serve" else "--host")
        assert host == "0.0.0.0"
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            assert each[probe]["httpGet"] == {"path": path, "port": observe["name"]}, (name, probe)
            assert "exec" not in each[probe]
    scheduler = by_name["kube-scheduler"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert scheduler[probe]["httpGet"] == {"path": "/healthz", "port": 10259, "scheme": "HTTPS"}


def test_every_container_runs_restricted(install: list[Document]) -> None:
    for deployment in of_kind(install, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 65532
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["serviceAccountName"] in ACCOUNTS
        for each in pod["containers"]:
            context = each["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, each["name"]
            assert context["allowPrivilegeEscalation"] is False, each["name"]
            assert context["capabilities"]["drop"] == ["ALL"], each["name"]
            assert context.get("runAsNonRoot", True) is True, each["name"]
            assert each["resources"]["requests"] and each["resources"]["limits"], each["name"]
            assert "cpu" not in each["resources"]["limits"], "CFS throttling would slow the serial scheduling path"
            assert each["livenessProbe"] and each["readinessProbe"], each["name"]
    user = re.search(r"^USER (\d+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert user is not None and int(user.group(1)) == 65532


def test_both_podgroup_dialects_are_installed() -> None:
    reference = None
    for group, path in CRDS.items():
        (crd,) = documents(path)
        assert crd["kind"] == "CustomResourceDefinition"
        assert crd["metadata"]["name"] == f"podgroups.{group}"
        assert crd["spec"]["group"] == group
        assert crd["spec"]["scope"] == "Namespaced"
        names = crd["spec"]["names"]
        assert (names["kind"], names["plural"], names["singular"]) == ("PodGroup", "podgroups", "podgroup")
        assert names["shortNames"] == ["pg", "pgs"]
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1alpha1" and version["served"] is True and version["storage"] is True
        assert version["subresources"] == {"status": {}}
        schema = version["schema"]["openAPIV3Schema"]["properties"]
        assert {"minMember", "minResources", "scheduleTimeoutSeconds"} <= set(schema["spec"]["properties"])
        assert {"phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime"} <= set(
            schema["status"]["properties"]
        )
        if reference is None:
            reference = version
        assert version == reference, "the two dialects share one schema"
    # A CRD in a *.k8s.io group is rejected without the API-approval annotation (x-k8s.io is exempt).
    (sigs,) = documents(CRDS["scheduling.sigs.k8s.io"])
    assert sigs["metadata"]["annotations"]["api-approved.kubernetes.io"]


def test_rbac_grants_no_wildcards(install: list[Document]) -> None:
    rules = [rule for kind in ("ClusterRole", "Role") for doc in of_kind(install, kind) for rule in doc["rules"]]
    assert rules
    for rule in rules:
        for field in ("verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs"):
            assert not any("*" in item for item in rule.get(field) or []), rule


def test_kube_scheduler_may_hold_its_own_lease_in_the_release_namespace(install: list[Document]) -> None:
    election = mounted_scheduler_config(install)["leaderElection"]
    assert election["leaderElect"] is True and election["resourceLock"] == "leases"
    namespace = named(install, "Deployment", SCHEDULER_POD)["metadata"]["namespace"]
    assert election["resourceNamespace"] == namespace
    rights = lease_rights(install, SCHEDULER_ACCOUNT, namespace)
    assert rights == {"*": {"create"}, election["resourceName"]: {"get", "update"}}


def test_the_loops_may_hold_their_own_lease_in_the_release_namespace(install: list[Document]) -> None:
    args = containers(install)[LOOPS_POD]["args"]
    namespace = named(install, "Deployment", LOOPS_POD)["metadata"]["namespace"]
    assert flag(args, "--lease-namespace") == namespace
    assert flag(args, "--lease-name") == LOOPS_ACCOUNT, "named after the release, as the Role names it"
    assert lease_rights(install, LOOPS_ACCOUNT, namespace) == {"*": {"create"}, LOOPS_ACCOUNT: {"get", "update"}}


def test_leases_are_granted_by_name(install: list[Document]) -> None:
    for account in ACCOUNTS:
        for _group, resource, verb, name in granted_to(install, account):
            if resource == "leases" and verb != "create":
                assert name != "*", (account, verb)
    namespaces = {doc["metadata"].get("namespace") for doc in of_kind(install, "Role")}
    assert namespaces == {named(install, "Deployment", SCHEDULER_POD)["metadata"]["namespace"]}, "no Lease elsewhere"


def test_every_binding_names_one_of_the_service_accounts(install: list[Document]) -> None:
    assert {account["metadata"]["name"] for account in of_kind(install, "ServiceAccount")} == ACCOUNTS
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        for binding in of_kind(install, kind):
            assert binding["subjects"], binding["metadata"]["name"]
            for subject in binding["subjects"]:
                assert subject["kind"] == "ServiceAccount" and subject["namespace"] == NAMESPACE
                assert subject["name"] in ACCOUNTS, binding["metadata"]["name"]


def test_each_pod_holds_one_identity_with_a_projected_token_of_at_most_an_hour(install: list[Document]) -> None:
    assert not [s for s in of_kind(install, "Secret") if s.get("type") == "kubernetes.io/service-account-token"]
    accounts = {SCHEDULER_POD: SCHEDULER_ACCOUNT, VERBS_POD: EXTENDER_ACCOUNT, LOOPS_POD: LOOPS_ACCOUNT}
    for deployment, account in accounts.items():
        pod = pod_spec(install, deployment)
        assert pod["serviceAccountName"] == account
        assert pod["automountServiceAccountToken"] is False, "the automatic token may be extended to a year"
        assert named(install, "ServiceAccount", account)["automountServiceAccountToken"] is False
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        for each in pod["containers"]:
            (mount,) = [m for m in each["volumeMounts"] if m["mountPath"] == TOKEN_PATH]
            (token,) = [
                s["serviceAccountToken"]
                for s in volumes[mount["name"]]["projected"]["sources"]
                if "serviceAccountToken" in s
            ]
            assert token["expirationSeconds"] <= 3600, deployment
            assert "audience" not in token, "the API server's audience"


def test_the_verb_serving_extender_may_only_watch_and_publish_plans() -> None:
    rights = granted_to(manifests(), EXTENDER_ACCOUNT)
    assert {verb for group, resource, verb, _ in rights if verb not in ("get", "list", "watch")} == {"patch"}
    assert {resource for _, resource, verb, _ in rights if verb == "patch"} == {"podgroups"}
    assert not any(group == "system" for group, *_ in rights), "never kube-scheduler's built-in roles"


def test_only_the_loops_evict_and_only_through_the_eviction_api(install: list[Document]) -> None:
    for account in ACCOUNTS:
        rights = granted_to(install, account)
        assert ("", "pods", "delete", "*") not in rights, account
        assert (("", "pods/eviction", "create", "*") in rights) == (account == LOOPS_ACCOUNT), account
    assert ("", "pods/status", "patch", "*") not in granted_to(install, LOOPS_ACCOUNT)
    assert ("system", "system:kube-scheduler", "*", "*") in granted_to(install, SCHEDULER_ACCOUNT)


def test_images_are_pinned_by_version_or_digest(install: list[Document]) -> None:
    for deployment in of_kind(install, "Deployment"):
        for each in deployment["spec"]["template"]["spec"]["containers"]:
            image = each["image"]
            name, _, digest = image.partition("@")
            assert not digest or re.fullmatch(r"sha256:[0-9a-f]{64}", digest), image
            assert re.search(r":v?\d+\.\d+\.\d+$", name), f"{image}: a release tag, never latest"


def test_the_kustomizations_list_every_manifest_and_keep_the_crds_apart() -> None:
    (app,) = documents(MANIFESTS / "kustomization.yaml")
    (crds,) = documents(MANIFESTS / "crds" / "kustomization.yaml")
    present = {
        path.relative_to(MANIFESTS).as_posix() for path in MANIFESTS.rglob("*.yaml") if path.parent.name != "install"
    }
    assert set(app["resources"]) | {f"crds/{name}" for name in crds["resources"]} == present - {
        "kustomization.yaml",
        "crds/kustomization.yaml",
    }
    assert not any(name.startswith("crds") for name in app["resources"]), "deleting the app never deletes a CRD"
    assert "namespace" not in app, "the RoleBinding in kube-system names its own namespace"
    kinds = {doc["kind"] for name in crds["resources"] for doc in documents(MANIFESTS / "crds" / name)}
    assert kinds == {"CustomResourceDefinition"}
    assert "CustomResourceDefinition" not in {
        doc["kind"] for name in app["resources"] for doc in documents(MANIFESTS / name)
    }


def test_nothing_points_outside_the_repository() -> None:
    for path in [
        *MANIFESTS.rglob("*"),
        *CHART.rglob("*"),
        *SCHEDULER_CONFIG.parent.rglob("*"),
        DOCKERFILE,
        REPO / ".dockerignore",
    ]:
        if path.is_file():
            assert "/work/" not in path.read_text(), path


def test_the_loops_may_do_what_the_preemption_loop_and_the_scaler_do(install: list[Document]) -> None:
    rights = granted_to(install, LOOPS_ACCOUNT)
    assert {("kubeflow.org", "tfjobs", verb, "*") for verb in ("get", "patch")} <= rights
    assert ("", "events", "create", "*") in rights
    assert ("scheduling.x-k8s.io", "podgroups", "patch", "*") in rights, "gang plans on PodGroups"
    assert ("coordination.k8s.io", "leases", "create", "*") in rights
    by_name = containers(install)
    assert "--no-loops" in by_name["tfjob-extender"]["args"]
    assert by_name[LOOPS_POD]["args"][0] == "loops", "the loops run in their own Deployment"


def test_the_network_topology_crd_is_installed_and_readable() -> None:
    (crd,) = documents(MANIFESTS / "crds" / "clusternetworktopologies.scheduling.koordinator.sh.yaml")
    assert crd["metadata"]["name"] == "clusternetworktopologies.scheduling.koordinator.sh"
    assert (crd["spec"]["group"], crd["spec"]["scope"]) == ("scheduling.koordinator.sh", "Cluster")
    names = crd["spec"]["names"]
    assert (names["kind"], names["plural"]) == ("ClusterNetworkTopology", "clusternetworktopologies")
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] is True and version["storage"] is True
    entry = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["networkTopologySpec"]["items"]
    assert set(entry["properties"]) == {"topologyLayer", "parentTopologyLayer", "labelKey"}
    role = named(manifests(), "ClusterRole", EXTENDER_ACCOUNT)
    assert {
        "apiGroups": ["scheduling.koordinator.sh"],
        "resources": ["clusternetworktopologies"],
        "verbs": ["list", "watch"],
    } in role["rules"]


def test_the_extender_and_the_loops_may_watch_every_kind_the_model_follows(install: list[Document]) -> None:
    from extender.state.kinds import RESOURCE_TYPES

    for account in (EXTENDER_ACCOUNT, LOOPS_ACCOUNT):
        rights = granted_to(install, account)
        for kind in RESOURCE_TYPES:
            group = kind.api_version.rpartition("/")[0]
            for verb in ("list", "watch"):
                assert (group, kind.plural, verb, "*") in rights, (account, kind.plural, group)


def test_the_observe_listeners_are_scraped_and_reachable_through_services() -> None:
    docs = manifests()
    by_name = containers(docs)
    services = {service["metadata"]["name"]: service for service in of_kind(docs, "Service")}
    assert set(services) == {"tfjob-extender-observe", "tfjob-extender-loops", "tfjob-extender-verbs"}
    for service_name, deployment, container, port_flag in (
        ("tfjob-extender-observe", VERBS_POD, "tfjob-extender", "--observe-port"),
        ("tfjob-extender-loops", LOOPS_POD, LOOPS_POD, "--port"),
    ):
        port = int(flag(by_name[container]["args"], port_flag))
        assert port != 8888
        template = named(docs, "Deployment", deployment)["spec"]["template"]
        annotations = template["metadata"]["annotations"]
        assert {key: annotations[key] for key in annotations if key.startswith("prometheus.io/")} == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(port),
            "prometheus.io/path": "/metrics",
        }
        service = services[service_name]
        assert service["metadata"]["namespace"] == NAMESPACE
        assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
        for other in {SCHEDULER_POD, VERBS_POD, LOOPS_POD} - {deployment}:
            other_labels = named(docs, "Deployment", other)["spec"]["template"]["metadata"]["labels"]
            assert not service["spec"]["selector"].items() <= other_labels.items(), "selects its own pods only"
        (exposed,) = service["spec"]["ports"]
        assert exposed["port"] == port
        (container_port,) = [p for p in by_name[container]["ports"] if p["containerPort"] == port]
        assert exposed["targetPort"] in (container_port["name"], port)


def test_no_identity_can_mint_or_read_another_identitys_credentials(install: list[Document]) -> None:
    """No token lives in a Secret, and no identity of the chart may request a token for a ServiceAccount or
    read any Secret but the certificates the loops keep (by name)."""
    for account in ACCOUNTS:
        rights = granted_to(install, account)
        assert not [r for r in rights if r[1] == "serviceaccounts/token"], account
        secrets = {(verb, name) for _, resource, verb, name in rights if resource == "secrets"}
        if account != LOOPS_ACCOUNT:
            assert not secrets, account
            continue
        assert {name for verb, name in secrets if verb in ("get", "list", "watch")} <= {
            "tfjob-extender-verbs-tls",
            "tfjob-extender-webhook-tls",
        }, secrets
