"""Every object the chart renders passes kube-apiserver's own validation, strictly (an unknown or duplicated
field is refused, as are bad names, ports, selectors, RBAC rules and CRD schemas): `manifests/` through
kubectl's kustomize, and renders with every option on, each applied as a server-side dry run, so nothing
is created or changed on the shared control plane."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from extender.devcluster import LocalControlPlane
from tests.helm import EVERY_OPTION, MANIFESTS, render

pytestmark = pytest.mark.e2e

NOT_SERVED_HERE = {"ServiceMonitor"}
"""Kinds whose CRDs belong to other projects (the Prometheus Operator's): the chart tests check their shape."""


def dry_run(plane: LocalControlPlane, *source: str, manifest: str | None = None) -> None:
    command = [str(plane.bin / "kubectl"), "--kubeconfig", str(plane.kubeconfig), "apply", "--dry-run=server"]
    command += ["--validate=strict", *source]
    done = subprocess.run(command, input=manifest, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "(server dry run)" in done.stdout


def test_the_manifests_validate(plane: LocalControlPlane) -> None:
    dry_run(plane, "-k", str(MANIFESTS / "crds"))
    dry_run(plane, "-k", str(MANIFESTS))


@pytest.mark.parametrize(
    "values",
    [
        EVERY_OPTION,
        {"observe": {"debug": {"enabled": True, "auth": "tokenFile", "tokenFile": {"secretName": "tokens"}}}},
    ],
    ids=["every-option", "token-file"],
)
def test_every_option_validates(plane: LocalControlPlane, values: dict[str, Any]) -> None:
    docs = [doc for doc in render(values) if doc["kind"] not in NOT_SERVED_HERE]
    dry_run(plane, "-f", "-", manifest=yaml.safe_dump_all(docs))
