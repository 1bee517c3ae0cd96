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


def the_deployment() -> dict[str, Any]:
    (deployment,) = of_kind("Deployment")
    return deployment


def container(name: str) -> dict[str, Any]:
    (found,) = [c for c in the_deployment()["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    assert isinstance(found, dict)
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
    pod = the_deployment()["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["serviceAccountName"] == "tfjob-extender"
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


def test_every_binding_names_the_service_account() -> None:
    (account,) = of_kind("ServiceAccount")
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        for binding in of_kind(kind):
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "tfjob-system"}
            ], binding["metadata"]["name"]


def test_kustomization_lists_every_manifest() -> None:
    (kustomization,) = documents(MANIFESTS / "kustomization.yaml")
    listed = set(kustomization["resources"]) | {"kube-scheduler-config.yaml", "kustomization.yaml"}
    present = {path.relative_to(MANIFESTS).as_posix() for path in MANIFESTS.rglob("*.yaml")}
    assert listed == present


def test_nothing_points_outside_the_repository() -> None:
    for path in [*MANIFESTS.rglob("*"), *SCHEDULER_CONFIG.parent.rglob("*"), DOCKERFILE, REPO / ".dockerignore"]:
        if path.is_file():
            assert "/work/" not in path.read_text(), path


def test_the_extender_may_do_what_the_scaler_does() -> None:
    roles = {role["metadata"]["name"]: role for role in of_kind("ClusterRole")}

    def granted(role: str, group: str, resource: str) -> set[str]:
        return {
            verb
            for rule in roles[role]["rules"]
            if group in rule["apiGroups"] and resource in rule["resources"]
            for verb in rule["verbs"]
        }

    assert {"get", "patch"} <= granted("tfjob-extender", "kubeflow.org", "tfjobs")
    assert "delete" in granted("tfjob-extender", "", "pods")
    assert "create" in granted("tfjob-extender", "", "events")
    bound = {
        binding["roleRef"]["name"]
        for binding in of_kind("RoleBinding")
        if binding["metadata"]["namespace"] == "tfjob-system"
    }
    lease_roles = [
        name for name in bound if {"create", "get", "update"} <= granted(name, "coordination.k8s.io", "leases")
    ]
    assert lease_roles, "the scaler's Lease in tfjob-system"
    assert "patch" in granted("tfjob-extender", "scheduling.x-k8s.io", "podgroups"), "gang plans on PodGroups"
    (deployment,) = of_kind("Deployment")
    containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert "--no-loops" in containers["tfjob-extender"]["args"]
    assert containers["tfjob-extender-loops"]["args"][0] == "loops", "the loops run beside the extender"


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
