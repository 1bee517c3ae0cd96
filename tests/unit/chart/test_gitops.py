"""The chart renders the same way wherever it is rendered — `helm install` against a cluster, `helm template`
in a GitOps controller, or the one-file manifests — and never for a kube-scheduler newer than the API server:
the Kubernetes releases it accepts (`kubeVersion`), kube-scheduler's tag from any form of the cluster's
version (or a refusal naming `kubeScheduler.image.tag`), toggles for the objects outside the release
namespace, names scoped to the release, and `helm test`'s pod."""

from __future__ import annotations

import subprocess

import pytest

from tests.helm import CHART, NAMESPACE, RELEASE, Document, RenderRefused, containers, helm, named, of_kind, render

TESTED = {"1.35": "v1.35.4", "1.36": "v1.36.4", "1.37": "v1.37.1"}
"""kubeScheduler.testedReleases' defaults: the patch hack/test-matrix.sh runs for each supported minor."""


def scheduler_image(docs: list[Document]) -> str:
    return str(containers(docs)["kube-scheduler"]["image"])


@pytest.mark.parametrize(
    ("kube_version", "tag"),
    [
        ("1.35", "v1.35.4"),
        ("v1.36", "v1.36.4"),
        ("1.37", "v1.37.1"),
        ("v1.36.4-gke.1", "v1.36.4"),
        ("v1.35.2", "v1.35.2"),
    ],
)
def test_any_form_of_the_clusters_version_gives_a_release_no_newer_than_it(kube_version: str, tag: str) -> None:
    assert scheduler_image(render(kube_version=kube_version)) == f"registry.k8s.io/kube-scheduler:{tag}"


def test_a_minor_without_a_tested_patch_is_refused_naming_the_tag_and_a_tag_or_an_entry_is_enough() -> None:
    with pytest.raises(
        RenderRefused, match=r"1\.38 is not in kubeScheduler\.testedReleases.*kubeScheduler\.image\.tag"
    ):
        render(kube_version="1.38")
    tagged = render({"kubeScheduler": {"image": {"tag": "v1.38.2"}}}, kube_version="1.38")
    assert scheduler_image(tagged).endswith(":v1.38.2")
    listed = render({"kubeScheduler": {"testedReleases": {"1.38": "v1.38.1"}}}, kube_version="1.38")
    assert scheduler_image(listed).endswith(":v1.38.1")


def test_without_a_cluster_or_a_kube_version_the_render_is_refused_rather_than_guessed() -> None:
    command = [str(helm()), "template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode != 0
    assert "the cluster's version is unknown" in done.stderr and "kubeScheduler.image.tag" in done.stderr
    with pytest.raises(RenderRefused, match="unknown"):
        render(kube_version="v1.37.0")
    assert scheduler_image(render({"kubeScheduler": {"image": {"tag": "v1.37.0"}}}, kube_version="v1.37.0"))


def test_a_release_older_than_the_oldest_tested_is_refused_by_kube_version() -> None:
    with pytest.raises(RenderRefused, match="kubeVersion"):
        render(kube_version="v1.34.3")


def test_the_tested_releases_are_the_ones_the_matrix_runs() -> None:
    matrix = (CHART.parent.parent / "hack" / "test-matrix.sh").read_text()
    assert f"versions=${{K8S_VERSIONS:-{' '.join(reversed(TESTED.values()))}}}" in matrix


CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"}


def test_objects_outside_the_release_namespace_each_have_a_toggle() -> None:
    def identities(docs: list[Document]) -> set[tuple[str, str]]:
        return {(doc["kind"], doc["metadata"]["name"]) for doc in docs}

    native = {"nativeGangs": "on"}
    every = render(native)
    cluster_wide = [doc for doc in every if doc["kind"] in CLUSTER_SCOPED]
    in_kube_system = [doc for doc in every if doc["metadata"].get("namespace") == "kube-system"]
    assert {doc["kind"] for doc in cluster_wide} == CLUSTER_SCOPED and len(in_kube_system) == 1
    off = render({**native, "rbac": {"clusterScoped": False, "kubeSystem": False}})
    assert identities(off) == identities(every) - identities(cluster_wide) - identities(in_kube_system)


def test_the_loops_lease_is_named_after_the_release() -> None:
    docs = render(release="team-a")
    lease = "team-a-tfjob-extender-loops"
    args = containers(docs)["tfjob-extender-loops"]["args"]
    assert args[args.index("--lease-name") + 1] == lease
    role = named(docs, "Role", f"{lease}-lease")
    assert any(rule.get("resourceNames") == [lease] for rule in role["rules"])


def test_helm_test_asks_both_processes_whether_they_are_ready_with_no_rights() -> None:
    (pod,) = of_kind(render(), "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["spec"]["automountServiceAccountToken"] is False
    (container,) = pod["spec"]["containers"]
    assert container["args"] == [
        "probe",
        f"http://{RELEASE}-observe.{NAMESPACE}.svc:8890",
        f"http://{RELEASE}-loops.{NAMESPACE}.svc:8889",
    ]
