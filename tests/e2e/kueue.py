"""What the Kueue end-to-end tests share: a control plane with Kueue, Kueue's API path, admission."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from extender.devcluster import LocalControlPlane, build_control_plane
from extender.devcluster.resources import source
from tests.e2e.workloads import tfjob_object

KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"


@contextmanager
def kueue_plane(extender_args: tuple[str, ...] = ()) -> Iterator[LocalControlPlane]:
    """A control plane with Kueue and the extender run with `extender_args`; the test is skipped where Kueue
    can be neither built (no Go) nor found built."""
    if shutil.which("go") is None and not kueue_cached():
        pytest.skip("the Kueue end-to-end test needs Go (to build Kueue) or a cached build")
    with LocalControlPlane(build_control_plane(), with_kueue=True, extender_args=extender_args) as plane:
        yield plane


def kueue_cached() -> bool:
    printed = subprocess.run(
        ["bash", str(source().kueue_build_script), "--print-dir"], check=True, capture_output=True, text=True
    )
    return (Path(printed.stdout.strip()) / "bin" / "kueue").exists()


def admitted_by_kueue(plane: LocalControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    """The TFJob once Kueue admitted it (Kueue's webhook suspends a queued TFJob; admission unsuspends it)."""
    job = tfjob_object(plane, namespace, name)
    return None if (job["spec"].get("runPolicy") or {}).get("suspend") else job
