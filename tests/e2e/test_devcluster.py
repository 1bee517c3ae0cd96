"""End to end: `tfjob-extender dev-cluster up|status|down` starts a control plane of its own, says where its
kubeconfig and page are, reports it running, and stops exactly what it started."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from extender.devcluster import LocalControlPlane

pytestmark = pytest.mark.e2e
UP_TIMEOUT_S = 240


def dev_cluster(action: str, run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "extender", "dev-cluster", action, "--run-dir", str(run_dir), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=UP_TIMEOUT_S, check=False)


def test_dev_cluster_up_status_down(plane: LocalControlPlane, tmp_path: Path) -> None:
    run_dir = tmp_path / "dev"
    up = dev_cluster("up", run_dir, "--no-operator")
    try:
        assert up.returncode == 0, up.stderr
        lines = dict(line.split(": ", 1) for line in up.stdout.splitlines() if ": " in line)
        kubeconfig = Path(lines["kubeconfig"])
        assert kubeconfig.is_file() and kubeconfig.parent == run_dir
        with urllib.request.urlopen(lines["page"], timeout=5) as response:
            assert b"Queue, in rank order" in response.read()
        status = dev_cluster("status", run_dir)
        assert status.returncode == 0, status.stdout
        assert "kube-apiserver: running" in status.stdout
    finally:
        down = dev_cluster("down", run_dir)
    assert down.returncode == 0
    assert "stopped etcd" in down.stdout
    assert not run_dir.exists()
    assert dev_cluster("status", run_dir).returncode == 1
