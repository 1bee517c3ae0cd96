"""The commands and values the operator docs give, taken from the doc text and checked against the chart as the
repository's Helm renders it: a doc that regresses (an unescaped comma in `--set`, a float through `--set`,
`--reuse-values`, an adoption without Helm's label) fails here."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from extender.devcluster import kueue
from tests.helm import CHART, NAMESPACE, RELEASE, REPO, Document, RenderRefused, containers, helm, of_kind, render

README = REPO / "README.md"
OPERATIONS = REPO / "docs" / "operations.md"
CHART_README = CHART / "README.md"
KUEUE = REPO / "docs" / "kueue.md"
DOCS = [README, CHART_README, *sorted((REPO / "docs").glob("*.md"))]
TESTED: dict[str, str] = yaml.safe_load((CHART / "values.yaml").read_text())["kubeScheduler"]["testedReleases"]

FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)


def blocks(path: Path, language: str) -> list[str]:
    """The fenced blocks of `language` in a Markdown file, unindented."""
    return [
        "\n".join(line[len(indent) :] for line in body.splitlines())
        for indent, lang, body in FENCE.findall(path.read_text())
        if lang == language
    ]


def commands(path: Path) -> list[list[str]]:
    """Every command of the file's `sh` blocks, continuation lines joined, comments dropped, as argv."""
    lines = [line for block in blocks(path, "sh") for line in block.replace("\\\n", " ").splitlines()]
    return [argv for argv in (shlex.split(line, comments=True) for line in lines) if argv]


def helm_commands(path: Path, verb: str) -> list[list[str]]:
    return [argv for argv in commands(path) if argv[:2] == ["helm", verb]]


UPGRADE_ONLY = {"--install", "--reset-then-reuse-values"}


def template(argv: list[str], kube_version: str = "1.37") -> list[Document]:
    """`helm template` with the arguments of a doc's `helm install`, `upgrade` or `template` (the flags only an
    upgrade takes left out), from the repository's root as the docs' `charts/tfjob-extender` means."""
    args = [arg for arg in argv[2:] if arg not in UPGRADE_ONLY]
    if "--kube-version" not in args:
        args += ["--kube-version", kube_version]
    done = subprocess.run(
        [str(helm()), "template", *args], cwd=REPO, capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 0:
        raise RenderRefused(done.stderr.strip())
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


def policy_file(docs: list[Document]) -> dict[str, object]:
    (config_map,) = [doc for doc in of_kind(docs, "ConfigMap") if doc["metadata"]["name"].endswith("-policy")]
    loaded: dict[str, object] = yaml.safe_load(config_map["data"]["policy.yaml"])
    return loaded


def test_the_136_gates_given_with_set_reach_kube_scheduler_as_one_argument() -> None:
    given = [match for doc in DOCS for match in re.findall(r"--set '([^']*GangScheduling[^']*)'", doc.read_text())]
    assert len(given) >= 3, "operations.md (table and section) and the chart's README give the 1.36 gates"
    for value in given:
        scheduler = containers(template(["helm", "template", RELEASE, "charts/tfjob-extender", "--set", value], "1.36"))
        gates = [arg for arg in scheduler["kube-scheduler"]["command"] if "GangScheduling" in arg or "feature" in arg]
        assert gates == ["--feature-gates=GenericWorkload=true,GangScheduling=true"], value


def test_every_doc_upgrade_renders_and_reuses_values_only_by_resetting_first() -> None:
    upgrades = [(doc, argv) for doc in (OPERATIONS, CHART_README) for argv in helm_commands(doc, "upgrade")]
    assert len(upgrades) >= 5
    for doc, argv in upgrades:
        assert "--install" in argv or "--reset-then-reuse-values" in argv, (doc.name, argv)
        template(argv, "1.36" if any("GangScheduling" in arg for arg in argv) else "1.37")
    for doc in DOCS:
        shown = [*blocks(doc, "sh"), *re.findall(r"`(helm upgrade[^`]*)`", doc.read_text())]
        assert not [text for text in shown if re.search(r"(?<!then-)--reuse-values", text)], doc.name
    assert (
        "--reset-then-reuse-values"
        in subprocess.run([str(helm()), "upgrade", "--help"], capture_output=True, text=True, check=True).stdout
    )


def test_fractional_policy_values_go_through_set_json_and_render_as_floats() -> None:
    for doc in DOCS:
        for block in blocks(doc, "sh"):
            assert not re.search(r"--set[ =]'?(policy|settings)\.[\w.]+=-?\d*\.\d", block), doc.name
    given = re.findall(r"--set-json '(policy\.(\w+)=([\d.]+))'", OPERATIONS.read_text())
    assert given, "operations.md shows a fractional policy value with --set-json"
    for value, key, number in given:
        policy = policy_file(template(["helm", "template", RELEASE, "charts/tfjob-extender", "--set-json", value]))
        assert isinstance(policy[key], float) and policy[key] == float(number)
    with pytest.raises(RenderRefused, match="got string, want number"):
        template(["helm", "template", RELEASE, "charts/tfjob-extender", "--set", given[0][0]])


def test_the_crd_adoption_gives_every_chart_crd_helms_label_and_both_annotations() -> None:
    (block,) = [block for block in blocks(OPERATIONS, "sh") if "kubectl label crd" in block]
    listed = re.search(r"for crd in ([^;]+);", block)
    assert listed is not None
    crds = {doc["metadata"]["name"] for doc in of_kind(render(), "CustomResourceDefinition")}
    assert set(listed.group(1).split()) == crds
    words = set(block.split())
    assert "app.kubernetes.io/managed-by=Helm" in words
    assert {f"meta.helm.sh/release-name={RELEASE}", f"meta.helm.sh/release-namespace={NAMESPACE}"} <= words


def test_the_gitops_renders_pick_the_tested_patch_and_leave_out_what_the_toggles_say() -> None:
    renders = [argv for doc in (OPERATIONS, CHART_README) for argv in helm_commands(doc, "template")]
    by_version = [argv for argv in renders if argv[argv.index("--kube-version") + 1] == "1.35"]
    assert by_version, "the GitOps subsection renders for a MAJOR.MINOR version"
    image = containers(template(by_version[0]))["kube-scheduler"]["image"]
    assert image == f"registry.k8s.io/kube-scheduler:{TESTED['1.35']}"
    (toggled,) = [argv for argv in renders if "rbac.clusterScoped=false" in argv]
    assert "rbac.kubeSystem=false" in toggled
    docs = template([*toggled, "--set", "nativeGangs=on"])
    assert not [doc for doc in docs if doc["kind"] in {"ClusterRole", "ClusterRoleBinding"}]
    assert not of_kind(docs, "MutatingWebhookConfiguration")
    assert not [doc for doc in docs if doc["metadata"].get("namespace") == "kube-system"]
    for argv in renders:
        template(argv)
    one_file = "manifests/install/tfjob-extender-<version>-k8s-<minor>.yaml"
    assert one_file in OPERATIONS.read_text() and one_file in (REPO / "hack" / "render-manifests.sh").read_text()


def test_the_docs_agree_on_the_supported_releases_and_their_tested_patches() -> None:
    minors = list(TESTED)
    assert f'kubeVersion: ">={minors[0]}.0-0"' in (CHART / "Chart.yaml").read_text()
    supported = f"Kubernetes {', '.join(minors[:-1])} or {minors[-1]}"
    for doc in (OPERATIONS, CHART_README):
        text = " ".join(doc.read_text().split())
        assert supported in text, doc.name
        assert all(f"{minor} → {patch}" in text for minor, patch in TESTED.items()), doc.name


def test_the_kueue_page_turns_on_the_tfjob_integration_as_the_local_kueue_is_configured() -> None:
    (configuration,) = [yaml.safe_load(block) for block in blocks(KUEUE, "yaml") if "kind: Configuration" in block]
    assert kueue.TFJOB_FRAMEWORK in configuration["integrations"]["frameworks"]
    assert f'"apiVersion": "{configuration["apiVersion"]}"' in Path(kueue.__file__).read_text()
