"""`manifests/` is the chart rendered with its default values (`hack/render-manifests.sh`), split so that
`kubectl apply -k manifests/` installs the app and `kubectl apply -k manifests/crds/` the CRDs: rendering
again changes nothing, and kubectl's kustomize builds each half as described."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.helm import (
    MANIFESTS,
    NAMESPACE,
    RENDER_SCRIPT,
    REPO,
    Document,
    built_tool,
    helm,
    manifest_documents,
    render,
)

HAND_WRITTEN = {"README.md"}


def files_under(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name not in HAND_WRITTEN
    }


def test_manifests_are_the_charts_defaults_rendered(tmp_path: Path) -> None:
    helm()
    out = tmp_path / "manifests"
    done = subprocess.run(["bash", str(RENDER_SCRIPT), str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    fresh, committed = files_under(out), files_under(MANIFESTS)
    assert sorted(fresh) == sorted(committed), "run `bash hack/render-manifests.sh`"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"{stale} differ from the chart's render: run `bash hack/render-manifests.sh`"


def test_manifests_hold_what_helm_renders_and_the_namespace() -> None:
    def identities(docs: list[Document]) -> list[str]:
        return sorted(f"{doc['kind']}/{doc['metadata']['name']}" for doc in docs)

    namespace: Document = {"kind": "Namespace", "metadata": {"name": NAMESPACE}}
    assert identities(manifest_documents()) == identities([*installed_objects(render()), namespace])


def installed_objects(docs: list[Document]) -> list[Document]:
    """What an install applies: the render without `helm test`'s hook pod."""
    return [doc for doc in docs if "helm.sh/hook" not in (doc["metadata"].get("annotations") or {})]


def test_one_file_per_supported_minor_holds_the_namespace_and_everything_at_that_minors_tested_release() -> None:
    chart_values = yaml.safe_load((REPO / "charts" / "tfjob-extender" / "values.yaml").read_text())
    tested = chart_values["kubeScheduler"]["testedReleases"]
    version = yaml.safe_load((REPO / "charts" / "tfjob-extender" / "Chart.yaml").read_text())["version"]
    files = sorted((MANIFESTS / "install").glob("*.yaml"))
    assert [path.name for path in files] == [f"tfjob-extender-{version}-k8s-{minor}.yaml" for minor in sorted(tested)]
    for path, minor in zip(files, sorted(tested), strict=True):
        assert f"kubectl apply --server-side -f {path.name}" in path.read_text()
        docs = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
        assert docs[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        expected = installed_objects(render(kube_version=minor))
        assert sorted(map(str, docs[1:])) == sorted(map(str, expected))
        images = [
            c["image"] for d in docs if d["kind"] == "Deployment" for c in d["spec"]["template"]["spec"]["containers"]
        ]
        assert f"registry.k8s.io/kube-scheduler:{tested[minor]}" in images


def kubectl() -> Path:
    printed = subprocess.run(
        ["bash", str(REPO / "hack" / "build-control-plane.sh"), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    reason = "the kustomize checks need kubectl of the local control plane (bash hack/build-control-plane.sh)"
    return built_tool(Path(printed.stdout.strip()) / "bin" / "kubectl", reason)


def kustomize(folder: Path) -> list[str]:
    done = subprocess.run([str(kubectl()), "kustomize", str(folder)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return sorted(f"{doc['kind']}/{doc['metadata']['name']}" for doc in yaml.safe_load_all(done.stdout) if doc)


def test_the_app_and_the_crds_are_applied_and_deleted_apart() -> None:
    app, crds = kustomize(MANIFESTS), kustomize(MANIFESTS / "crds")
    assert crds == sorted(
        f"CustomResourceDefinition/{name}"
        for name in (
            "podgroups.scheduling.x-k8s.io",
            "podgroups.scheduling.sigs.k8s.io",
            "clusternetworktopologies.scheduling.koordinator.sh",
        )
    )
    assert not any(item.startswith("CustomResourceDefinition/") for item in app), "delete -k never deletes a CRD"
    assert f"Namespace/{NAMESPACE}" in app
    everything = sorted(f"{doc['kind']}/{doc['metadata']['name']}" for doc in manifest_documents())
    assert sorted(app + crds) == everything
