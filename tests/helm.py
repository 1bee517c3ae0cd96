"""The chart `charts/tfjob-extender` rendered by the repository's own Helm, for the tests.

Helm is built from its Go module into a cache outside the repository (`hack/build-helm.sh`, which
`bash hack/test.sh` runs before pytest). Without that build the tests that render are skipped with the
reason, except in CI (CI=true), where a missing Helm is a failure. Renders are cached per set of values:
each is a `helm template` process, and most tests read the same few.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "tfjob-extender"
BUILD_SCRIPT = REPO / "hack" / "build-helm.sh"
RENDER_SCRIPT = REPO / "hack" / "render-manifests.sh"
MANIFESTS = REPO / "manifests"
RELEASE = "tfjob-extender"
NAMESPACE = "tfjob-system"
KUBE_VERSION = "v1.37.1"
"""What `hack/render-manifests.sh` renders `manifests/` for."""

Document = dict[str, Any]


class RenderRefused(AssertionError):
    """`helm template` refused the values; the message is Helm's."""


@functools.cache
def helm_path() -> Path:
    printed = subprocess.run(["bash", str(BUILD_SCRIPT), "--print-path"], check=True, capture_output=True, text=True)
    return Path(printed.stdout.strip())


def built_tool(path: Path, reason: str) -> Path:
    """`path`, a binary one of the hack/ build scripts caches; without it the calling test is skipped with
    `reason` (failed in CI, where `hack/test.sh` builds it first)."""
    if not os.access(path, os.X_OK):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: {path}")
        pytest.skip(f"{reason}: {path}")
    return path


def helm() -> Path:
    """The cached Helm binary."""
    return built_tool(helm_path(), "the chart tests need Helm, built by `bash hack/build-helm.sh` (Go >= 1.26)")


@functools.cache
def _render(values_json: str, release: str, namespace: str, kube_version: str, api_versions: tuple[str, ...]) -> str:
    command = [
        str(helm()),
        "template",
        release,
        str(CHART),
        "--namespace",
        namespace,
        "--kube-version",
        kube_version,
        *[argument for api in api_versions for argument in ("--api-versions", api)],
        "--values",
        "-",
    ]
    done = subprocess.run(command, input=values_json, capture_output=True, text=True, check=False, timeout=60)
    if done.returncode != 0:
        raise RenderRefused(done.stderr.strip())
    return done.stdout


def render_text(
    values: dict[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    kube_version: str = KUBE_VERSION,
    api_versions: tuple[str, ...] = (),
) -> str:
    """`helm template` of the chart with `values` (JSON is YAML) over its defaults; `api_versions` are what the
    chart sees the cluster serve (`.Capabilities.APIVersions`, `group/version` or `group/version/Kind`)."""
    return _render(json.dumps(values or {}, sort_keys=True), release, namespace, kube_version, api_versions)


def render(
    values: dict[str, Any] | None = None,
    *,
    release: str = RELEASE,
    namespace: str = NAMESPACE,
    kube_version: str = KUBE_VERSION,
    api_versions: tuple[str, ...] = (),
) -> list[Document]:
    """The rendered objects, in Helm's install order."""
    text = render_text(
        values, release=release, namespace=namespace, kube_version=kube_version, api_versions=api_versions
    )
    docs = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    assert all(isinstance(doc, dict) for doc in docs)
    return docs


def manifest_documents() -> list[Document]:
    """Every object `manifests/` holds (the CRDs of `manifests/crds/` too), kustomizations and the one-file
    installs of `manifests/install/` (the same objects again, per Kubernetes minor) left out."""
    return [
        doc
        for path in sorted(MANIFESTS.rglob("*.yaml"))
        if path.name != "kustomization.yaml" and path.parent.name != "install"
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]


def of_kind(docs: list[Document], kind: str) -> list[Document]:
    return [doc for doc in docs if doc["kind"] == kind]


def named(docs: list[Document], kind: str, name: str) -> Document:
    (found,) = [doc for doc in docs if doc["kind"] == kind and doc["metadata"]["name"] == name]
    return found


def containers(docs: list[Document]) -> dict[str, Document]:
    """Every container of every Deployment, by name."""
    found = [c for d in of_kind(docs, "Deployment") for c in d["spec"]["template"]["spec"]["containers"]]
    by_name = {c["name"]: c for c in found}
    assert len(by_name) == len(found), "container names are unique across the Deployments"
    return by_name


EVERY_OPTION: dict[str, Any] = {
    "policy": {
        "starvation_limit_s": 300.0,
        "starving_hold": "block",
        "network_topology": [{"name": "SpineLayer", "labels": ["example.com/spine"]}],
    },
    "extender": {
        "replicas": 2,
        "priorityClassName": "tfjob-critical",
        "extraArgs": ["--own-barrier-for-gated-gangs"],
        "nodeSelector": {"node-role.kubernetes.io/control": ""},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "scheduler"}},
                        },
                    }
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "scheduler"}},
            }
        ],
        "podAnnotations": {"example.com/owner": "ml-platform"},
        "podLabels": {"example.com/team": "ml"},
    },
    "kubeScheduler": {
        "replicas": 2,
        "priorityClassName": "tfjob-critical",
        "extraArgs": ["--feature-gates=GenericWorkload=true"],
        "image": {"tag": "v1.37.1"},
        "podLabels": {"example.com/team": "ml"},
    },
    "loops": {"replicas": 2, "dryRun": True, "extraArgs": ["--scaler-interval-s", "5"], "priorityClassName": "x"},
    "image": {"digest": "sha256:" + "0" * 64},
    "imagePullSecrets": [{"name": "registry-credentials"}],
    "observe": {"debug": {"enabled": True, "allowedUsers": ["system:serviceaccount:monitoring:grafana"]}},
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
    "networkPolicy": {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]},
}
"""Values that turn every option of the chart on (debug behind TokenReview; the token file is another test's)."""
