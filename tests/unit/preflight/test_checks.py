"""The pure checks of `tfjob-extender preflight` on hand-written objects: a healthy install passes, and each
thing broken fails (or warns) with the exact fix."""

from __future__ import annotations

import pytest

from extender.preflight.checks import (
    CHART_CRDS,
    TFJOB_CRD,
    any_failed,
    check_crds,
    check_scheduler_skew,
    check_training_operator,
    image_tag,
    run_checks,
)
from extender.preflight.install import FAIL, OK, WARN, Install, fullname
from tests.unit.preflight.objects import INSTALL, SERVER_VERSION, crd, healthy, operator, patched, scheduler


def test_names_follow_the_charts_fullname_rule() -> None:
    assert fullname("tfjob-extender") == "tfjob-extender"
    assert fullname("team-tfjob-extender-2") == "team-tfjob-extender-2"
    assert fullname("prod") == "prod-tfjob-extender"
    assert fullname("b" * 49) == "b" * 49 + "-tfjob-extende"  # cut to 63 characters
    assert fullname("tfjob-extender-" + "c" * 47 + "-x") == "tfjob-extender-" + "c" * 47  # and its dash
    install = Install(release="prod", namespace="ml")
    assert (install.scheduler_account, install.extender_account, install.loops_account) == (
        "prod-tfjob-extender-scheduler",
        "prod-tfjob-extender",
        "prod-tfjob-extender-loops",
    )


def test_a_healthy_install_passes_every_check() -> None:
    findings = run_checks(INSTALL, healthy())
    assert [f.status for f in findings] == [OK] * len(findings), [f.line() for f in findings]
    checks = [f.check for f in findings]
    assert checks[:6] == [
        "training-operator",
        *(f"crd {name}" for name in (TFJOB_CRD, *CHART_CRDS)),
        "kube-scheduler skew",
    ]
    assert not any_failed(findings)
    assert findings[0].line() == (
        "ok    training-operator: Deployment kubeflow/training-operator, container training-operator runs with "
        "--gang-scheduler-name=tfjob-scheduler"
    )


@pytest.mark.parametrize("args", [None, [], ["--enable-scheme=tfjob"]], ids=["no args", "empty args", "other args"])
def test_training_operator_without_the_flag_fails_with_the_patch_that_adds_it(args: list[str] | None) -> None:
    deployment = operator(args)
    (finding,) = check_training_operator(INSTALL, [deployment])
    assert (finding.status, finding.found) == (
        FAIL,
        "Deployment kubeflow/training-operator, container training-operator runs without --gang-scheduler-name",
    )
    assert finding.fix.startswith("give container training-operator --gang-scheduler-name=tfjob-scheduler: kubectl")
    assert "kubectl patch -n kubeflow deployment training-operator --type json -p " in finding.fix
    (fixed,) = check_training_operator(INSTALL, [patched(deployment, finding.fix)])
    assert fixed.status == OK, fixed.line()
    assert any_failed([finding])


@pytest.mark.parametrize(
    "args",
    [["--gang-scheduler-name=volcano"], ["-gang-scheduler-name", "volcano", "--x"]],
    ids=["one word", "two words"],
)
def test_training_operator_naming_another_scheduler_fails_with_the_patch_that_replaces_it(args: list[str]) -> None:
    deployment = operator(args)
    (finding,) = check_training_operator(INSTALL, [deployment])
    assert finding.status == FAIL and finding.found.endswith("names 'volcano'")
    (fixed,) = check_training_operator(INSTALL, [patched(deployment, finding.fix)])
    assert fixed.status == OK, fixed.line()


def test_training_operator_is_found_by_its_image_or_its_command_and_the_flag_in_either() -> None:
    by_command = operator(
        ["--gang-scheduler-name", "tfjob-scheduler"], image="example/manager:1", command=["/training-operator"]
    )
    (finding,) = check_training_operator(INSTALL, [by_command])
    assert finding.status == OK
    in_command = operator(None, command=["/manager", "--gang-scheduler-name=tfjob-scheduler"])
    assert [f.status for f in check_training_operator(INSTALL, [in_command])] == [OK]
    other_scheduler = Install(scheduler_name="gangs")
    (finding,) = check_training_operator(other_scheduler, [in_command])
    assert finding.status == FAIL and "--gang-scheduler-name=gangs" in finding.fix


def test_no_training_operator_is_a_warning_that_names_the_install() -> None:
    (finding,) = check_training_operator(INSTALL, [scheduler()])
    assert finding.status == WARN
    assert finding.fix == (
        "install training-operator v1.9.4 first, started with --gang-scheduler-name=tfjob-scheduler "
        "(docs/operations.md, 1)"
    )
    assert not any_failed([finding])


def test_a_missing_tfjob_crd_fails_with_training_operators_install() -> None:
    crds = {**healthy().crds, TFJOB_CRD: None}
    finding = check_crds(INSTALL, crds)[0]
    assert (finding.status, finding.check, finding.found) == (FAIL, f"crd {TFJOB_CRD}", "missing")
    assert "training-operator v1.9.4" in finding.fix


def test_a_missing_chart_crd_fails_with_the_upgrade_that_installs_it() -> None:
    crds = {**healthy().crds, CHART_CRDS[1]: None}
    (finding,) = [f for f in check_crds(INSTALL, crds) if f.status != OK]
    assert finding.check == f"crd {CHART_CRDS[1]}"
    assert finding.fix.startswith(
        "helm upgrade tfjob-extender charts/tfjob-extender -n tfjob-system --reset-then-reuse-values "
        "--set crds.install=true"
    )


def test_a_chart_crd_the_release_does_not_own_fails_with_the_commands_that_adopt_it() -> None:
    name = CHART_CRDS[0]
    install = Install(namespace="ml", release="prod")
    crds = {n: crd(n, release="prod", namespace="ml") for n in (TFJOB_CRD, *CHART_CRDS)} | {
        name: crd(name, owned=False)
    }
    (finding,) = [f for f in check_crds(install, crds) if f.status != OK]
    assert finding.status == FAIL
    assert "label app.kubernetes.io/managed-by missing" in finding.found
    assert (
        f"kubectl label crd {name} --overwrite app.kubernetes.io/managed-by=Helm && kubectl annotate crd {name} "
        "--overwrite meta.helm.sh/release-name=prod meta.helm.sh/release-namespace=ml"
    ) in finding.fix
    other = crds | {name: crd(name, release="other")}
    (finding,) = [f for f in check_crds(install, other) if f.status != OK]
    assert finding.found.endswith(
        "annotation meta.helm.sh/release-name is 'other', annotation meta.helm.sh/release-namespace is 'tfjob-system'"
    )
    external = Install(namespace="ml", release="prod", crds_external=True)
    assert {f.status for f in check_crds(external, crds)} == {OK}


@pytest.mark.parametrize(
    ("server", "image", "status"),
    [
        ("v1.37.1", "registry.k8s.io/kube-scheduler:v1.37.1", OK),
        ("v1.37.1", "registry.k8s.io/kube-scheduler:v1.36.4", OK),
        ("v1.37.1+k3s1", "registry.k8s.io/kube-scheduler:v1.35.4", WARN),
        ("v1.36.2", "registry.k8s.io/kube-scheduler:v1.37.1", FAIL),
        ("v1.36.2", "localhost:5000/kube-scheduler:v1.36.2@sha256:" + "0" * 64, OK),
        ("v1.36.2", "registry.k8s.io/kube-scheduler@sha256:" + "0" * 64, WARN),
        ("v1.36.2", "registry.k8s.io/kube-scheduler:latest", WARN),
    ],
)
def test_kube_scheduler_may_trail_the_api_server_by_one_minor_and_never_lead_it(
    server: str, image: str, status: str
) -> None:
    finding = check_scheduler_skew(INSTALL, server, [scheduler(image)])
    assert finding.status == status, finding.line()
    if status != OK:
        patch = server.partition("+")[0]
        assert finding.fix.endswith(f"--reset-then-reuse-values --set kubeScheduler.image.tag={patch}")


def test_a_newer_kube_scheduler_fails_naming_both_versions() -> None:
    finding = check_scheduler_skew(INSTALL, "v1.36.2", [scheduler("registry.k8s.io/kube-scheduler:v1.37.1")])
    assert finding.line() == (
        "fail  kube-scheduler skew: API server v1.36.2, kube-scheduler registry.k8s.io/kube-scheduler:v1.37.1: "
        "kube-scheduler is newer than the API server — fix: helm upgrade tfjob-extender charts/tfjob-extender "
        "-n tfjob-system --reset-then-reuse-values --set kubeScheduler.image.tag=v1.36.2"
    )


def test_the_skew_check_fails_without_the_releases_scheduler_deployment() -> None:
    finding = check_scheduler_skew(Install(release="prod"), SERVER_VERSION, [scheduler()])
    assert finding.status == FAIL
    assert finding.found == "no Deployment tfjob-system/prod-tfjob-extender-scheduler"


def test_image_tags() -> None:
    assert image_tag("registry.k8s.io/kube-scheduler:v1.37.1") == "v1.37.1"
    assert image_tag("localhost:5000/kube-scheduler") == ""
    assert image_tag("localhost:5000/k/kube-scheduler:v1.36.0@sha256:abc") == "v1.36.0"


def test_what_cannot_be_read_fails_the_checks_that_need_it() -> None:
    observed = healthy(unreadable={"deployments": "GET /apis/apps/v1/deployments: HTTP 403", "access": "HTTP 403"})
    failed = [f for f in run_checks(INSTALL, observed) if f.status == FAIL]
    assert [f.check for f in failed] == ["training-operator", "kube-scheduler skew", "rights"]
    assert failed[0].found == "cannot read Deployments: GET /apis/apps/v1/deployments: HTTP 403"
    assert any_failed(failed)
