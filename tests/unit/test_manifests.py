"""The install manifests, the scheduler configuration and the Dockerfile parse, agree with each other, and ask
for no more than needed."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
SCHEDULER_CONFIG = REPO / "scheduler-config" / "kube-scheduler-config.yaml"
DOCKERFILE = REPO / "Dockerfile"
CRDS = {
    "scheduling.x-k8s.io": MANIFESTS / "crds" / "podgroups.scheduling.x-k8s.io.yaml",
    "scheduling.sigs.k8s.io": MANIFESTS / "crds" / "podgroups.scheduling.sigs.k8s.io.yaml",
}
# Configuration files, not API objects: they carry no metadata.
NOT_API_OBJECTS = ("Kustomization", "KubeSchedulerConfiguration")


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


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS.rglob("*.yaml") for doc in documents(path) if doc["kind"] == kind]


def the_deployment(name: str = "tfjob-scheduler") -> dict[str, Any]:
    (deployment,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == name]
    return deployment


def container(name: str) -> dict[str, Any]:
    (found,) = [
        c for d in of_kind("Deployment") for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == name
    ]
    assert isinstance(found, dict)
    return found


ACCOUNTS = {"tfjob-scheduler", "tfjob-extender", "tfjob-extender-loops"}


def granted_to(account: str) -> set[tuple[str, str, str, str]]:
    """(api group, resource, verb, resource name or "*") every binding gives `account`, cluster-wide or in a
    namespace; built-in roles (system:*) stand for themselves as ("system", role, "*", "*")."""
    roles = {(r["kind"], r["metadata"]["name"]): r for kind in ("ClusterRole", "Role") for r in of_kind(kind)}
    found: set[tuple[str, str, str, str]] = set()
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in of_kind(kind):
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


def scheduler_config() -> dict[str, Any]:
    (config,) = documents(SCHEDULER_CONFIG)
    return config


def the_extender() -> dict[str, Any]:
    (extender,) = scheduler_config()["extenders"]
    assert isinstance(extender, dict)
    return extender


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


def test_the_mounted_scheduler_config_is_the_documented_one() -> None:
    assert documents(MANIFESTS / "kube-scheduler-config.yaml") == documents(SCHEDULER_CONFIG)


def test_the_config_map_is_mounted_where_kube_scheduler_reads_it() -> None:
    (kustomization,) = documents(MANIFESTS / "kustomization.yaml")
    (generator,) = kustomization["configMapGenerator"]
    assert generator["files"] == ["kube-scheduler-config.yaml"]
    assert generator["namespace"] == the_deployment()["metadata"]["namespace"]
    assert kustomization["generatorOptions"]["disableNameSuffixHash"] is True
    scheduler = container("kube-scheduler")
    (config_flag,) = [arg for arg in scheduler["command"] if arg.startswith("--config=")]
    config_path = PurePosixPath(config_flag.removeprefix("--config="))
    assert config_path.name == "kube-scheduler-config.yaml"
    (mount,) = [m for m in scheduler["volumeMounts"] if PurePosixPath(m["mountPath"]) == config_path.parent]
    (volume,) = [v for v in the_deployment()["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == generator["name"]


def test_the_extender_block_is_safe_for_gangs() -> None:
    config = scheduler_config()
    (profile,) = config["profiles"]
    extender = the_extender()
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
    assert config["leaderElection"]["resourceName"] == "tfjob-scheduler"


def test_kube_scheduler_calls_the_extender_where_it_listens() -> None:
    url = urlsplit(the_extender()["urlPrefix"])
    args = container("tfjob-extender")["args"]
    assert args[:5] == ["serve", "--host", url.hostname, "--port", str(url.port)]
    assert args == dockerfile_instruction("CMD")
    assert dockerfile_instruction("ENTRYPOINT") == ["tfjob-extender"]
    extender = container("tfjob-extender")
    for probe in ("readinessProbe", "livenessProbe"):
        (script,) = [arg for arg in extender[probe]["exec"]["command"] if "urlopen" in arg]
        assert f"http://{url.hostname}:{url.port}/" in script


def test_every_container_runs_restricted() -> None:
    for deployment in of_kind("Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["serviceAccountName"] in ACCOUNTS
        for each in pod["containers"]:
            context = each["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, each["name"]
            assert context["allowPrivilegeEscalation"] is False, each["name"]
            assert context["capabilities"]["drop"] == ["ALL"], each["name"]
            assert each["resources"]["requests"] and each["resources"]["limits"], each["name"]
            assert each["livenessProbe"], each["name"]
            assert each["name"] == "tfjob-extender-loops" or each["readinessProbe"], each["name"]
    user = re.search(r"^USER (\d+)", DOCKERFILE.read_text(), re.MULTILINE)
    assert user is not None and int(user.group(1)) != 0


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


def test_rbac_grants_no_wildcards() -> None:
    rules = [rule for kind in ("ClusterRole", "Role") for doc in of_kind(kind) for rule in doc.get("rules") or []]
    assert rules
    for rule in rules:
        for field in ("verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs"):
            assert not any("*" in item for item in rule.get(field) or []), rule


def test_kube_scheduler_may_hold_its_own_lease() -> None:
    election = scheduler_config()["leaderElection"]
    bindings = [b for b in of_kind("RoleBinding") if b["metadata"]["namespace"] == election["resourceNamespace"]]
    roles = {role["metadata"]["name"]: role for role in of_kind("ClusterRole")}
    granted = {
        verb
        for binding in bindings
        if binding["roleRef"]["kind"] == "ClusterRole" and binding["roleRef"]["name"] in roles
        for rule in roles[binding["roleRef"]["name"]]["rules"]
        if rule["resources"] == ["leases"] and election["resourceName"] in rule.get("resourceNames", [])
        for verb in rule["verbs"]
    }
    assert {"get", "update"} <= granted


def test_every_binding_names_one_of_the_service_accounts() -> None:
    assert {account["metadata"]["name"] for account in of_kind("ServiceAccount")} == ACCOUNTS
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        for binding in of_kind(kind):
            (subject,) = binding["subjects"]
            assert subject["kind"] == "ServiceAccount" and subject["namespace"] == "tfjob-system"
            assert subject["name"] in ACCOUNTS, binding["metadata"]["name"]


def test_the_two_containers_of_the_scheduler_pod_hold_different_identities() -> None:
    pod = the_deployment()["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False, "no token of the pod's account in every container"
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    token_path = "/var/run/secrets/kubernetes.io/serviceaccount"
    mounted = {
        each["name"]: [m["name"] for m in each.get("volumeMounts", []) if m["mountPath"] == token_path]
        for each in pod["containers"]
    }
    (scheduler_volume,) = mounted["kube-scheduler"]
    (extender_volume,) = mounted["tfjob-extender"]
    (secret,) = [
        s for s in of_kind("Secret") if s["metadata"]["name"] == volumes[scheduler_volume]["secret"]["secretName"]
    ]
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == "tfjob-scheduler"
    sources = volumes[extender_volume]["projected"]["sources"]
    assert any("serviceAccountToken" in source for source in sources), "the pod's own account: tfjob-extender"
    assert pod["serviceAccountName"] == "tfjob-extender"
    assert the_deployment("tfjob-extender-loops")["spec"]["template"]["spec"]["serviceAccountName"] == (
        "tfjob-extender-loops"
    )


def test_the_verb_serving_extender_may_only_watch_and_publish_plans() -> None:
    rights = granted_to("tfjob-extender")
    assert {verb for group, resource, verb, _ in rights if verb not in ("get", "list", "watch")} == {"patch"}
    assert {resource for _, resource, verb, _ in rights if verb == "patch"} == {"podgroups"}
    assert not any(group == "system" for group, *_ in rights), "never kube-scheduler's built-in roles"


def test_only_the_loops_evict_and_only_through_the_eviction_api() -> None:
    for account in ACCOUNTS:
        rights = granted_to(account)
        assert ("", "pods", "delete", "*") not in rights, account
        assert (("", "pods/eviction", "create", "*") in rights) == (account == "tfjob-extender-loops"), account
    assert ("", "pods/status", "patch", "*") not in granted_to("tfjob-extender-loops")
    assert ("system", "system:kube-scheduler", "*", "*") in granted_to("tfjob-scheduler")


def test_leases_are_granted_by_name() -> None:
    for account in ACCOUNTS:
        for _group, resource, verb, name in granted_to(account):
            if resource == "leases" and verb != "create":
                assert name != "*", (account, verb)
    assert {("coordination.k8s.io", "leases", verb, "tfjob-extender-scaler") for verb in ("get", "update")} <= (
        granted_to("tfjob-extender-loops")
    )


def test_images_are_pinned_by_version_or_digest() -> None:
    for deployment in of_kind("Deployment"):
        for each in deployment["spec"]["template"]["spec"]["containers"]:
            image = each["image"]
            name, _, digest = image.partition("@")
            assert not digest or re.fullmatch(r"sha256:[0-9a-f]{64}", digest), image
            assert re.search(r":v?\d+\.\d+\.\d+$", name), f"{image}: a release tag, never latest"


def test_kustomization_lists_every_manifest() -> None:
    (kustomization,) = documents(MANIFESTS / "kustomization.yaml")
    listed = set(kustomization["resources"]) | {"kube-scheduler-config.yaml", "kustomization.yaml"}
    present = {path.relative_to(MANIFESTS).as_posix() for path in MANIFESTS.rglob("*.yaml")}
    assert listed == present


def test_nothing_points_outside_the_repository() -> None:
    for path in [*MANIFESTS.rglob("*"), *SCHEDULER_CONFIG.parent.rglob("*"), DOCKERFILE, REPO / ".dockerignore"]:
        if path.is_file():
            assert "/work/" not in path.read_text(), path


def test_the_loops_may_do_what_the_preemption_loop_and_the_scaler_do() -> None:
    rights = granted_to("tfjob-extender-loops")
    assert {("kubeflow.org", "tfjobs", verb, "*") for verb in ("get", "patch")} <= rights
    assert ("", "events", "create", "*") in rights
    assert ("scheduling.x-k8s.io", "podgroups", "patch", "*") in rights, "gang plans on PodGroups"
    assert ("coordination.k8s.io", "leases", "create", "*") in rights
    containers = {c["name"]: c for d in of_kind("Deployment") for c in d["spec"]["template"]["spec"]["containers"]}
    assert "--no-loops" in containers["tfjob-extender"]["args"]
    assert containers["tfjob-extender-loops"]["args"][0] == "loops", "the loops run in their own Deployment"


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
    (role,) = [r for r in of_kind("ClusterRole") if r["metadata"]["name"] == "tfjob-extender"]
    assert {
        "apiGroups": ["scheduling.koordinator.sh"],
        "resources": ["clusternetworktopologies"],
        "verbs": [
            "get",
            "list",
            "watch",
        ],
    } in role["rules"]


def test_the_extender_and_the_loops_may_watch_every_kind_the_model_follows() -> None:
    from extender.state.kinds import RESOURCE_TYPES

    for account in ("tfjob-extender", "tfjob-extender-loops"):
        rights = granted_to(account)
        for kind in RESOURCE_TYPES:
            group = kind.api_version.rpartition("/")[0]
            for verb in ("list", "watch"):
                assert (group, kind.plural, verb, "*") in rights, (account, kind.plural, group)


def test_the_observe_listener_is_scraped_and_reachable_through_a_service_while_the_verbs_stay_local() -> None:
    extender = container("tfjob-extender")
    args = extender["args"]
    assert args[:5] == ["serve", "--host", "127.0.0.1", "--port", "8888"]
    observe_host = args[args.index("--observe-host") + 1]
    observe_port = int(args[args.index("--observe-port") + 1])
    assert observe_host == "0.0.0.0" and observe_port != 8888
    (port,) = [p for p in extender["ports"] if p["name"] == "observe"]
    assert port["containerPort"] == observe_port
    template = the_deployment()["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(observe_port),
        "prometheus.io/path": "/metrics",
    }
    (service,) = [s for s in of_kind("Service") if s["metadata"]["name"] == "tfjob-extender-observe"]
    assert service["metadata"]["namespace"] == the_deployment()["metadata"]["namespace"]
    assert service["spec"]["selector"] == template["metadata"]["labels"]
    (exposed,) = service["spec"]["ports"]
    assert exposed["targetPort"] in ("observe", observe_port)
    assert [s["metadata"]["name"] for s in of_kind("Service")] == ["tfjob-extender-observe"], "only it is exposed"
