"""What the Kueue end-to-end tests share: Kueue's API path, whether its build is cached, admission."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from extender.devcluster import LocalControlPlane
from extender.devcluster.resources import source
from tests.e2e.workloads import tfjob_object

KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"


def kueue_cached() -> bool:
    printed = subprocess.run(
        ["bash", str(source().kueue_build_script), "--print-dir"], check=True, capture_output=True, text=True
    )
    return (Path(printed.stdout.strip()) / "bin" / "kueue").exists()


def admitted_by_kueue(plane: LocalControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    """The TFJob once Kueue admitted it (Kueue's webhook suspends a queued TFJob; admission unsuspends it)."""
    job = tfjob_object(plane, namespace, name)
    return None if (job["spec"].get("runPolicy") or {}).get("suspend") else job
