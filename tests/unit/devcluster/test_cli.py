"""`dev-cluster down` and `status` act only on the processes recorded for their run directory."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from extender.devcluster.cli import STATE_FILE, down, status


def record(run_dir: Path, pids: dict[str, int]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    state = {"pids": pids, "kubeconfig": str(run_dir / "admin.kubeconfig"), "page": "http://127.0.0.1:1/ui"}
    (run_dir / STATE_FILE).write_text(json.dumps(state))


def test_status_and_down_without_a_dev_cluster() -> None:
    out = io.StringIO()
    assert status(Path("/nonexistent/dev"), out=out) == 1
    assert "no dev cluster" in out.getvalue()
    assert down(Path("/nonexistent/dev"), out=io.StringIO()) == 0


def test_down_stops_the_recorded_process_naming_the_run_dir_and_leaves_any_other(tmp_path: Path) -> None:
    run_dir = tmp_path / "dev"
    run_dir.mkdir()
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(run_dir)])
    try:
        started_by = time.monotonic() + 10
        while not Path(f"/proc/{ours.pid}/cmdline").read_bytes() and time.monotonic() < started_by:
            time.sleep(0.02)
        record(run_dir, {"etcd": ours.pid, "stranger": os.getpid()})
        out = io.StringIO()
        assert status(run_dir, out=out) == 1
        assert "etcd: running" in out.getvalue() and "stranger: stopped" in out.getvalue()
        out = io.StringIO()
        assert down(run_dir, out=out) == 0
        assert ours.wait(timeout=15) != 0
        assert out.getvalue().splitlines() == [f"stopped etcd (pid {ours.pid})"]
        assert not run_dir.exists()
    finally:
        if ours.poll() is None:
            ours.kill()
            ours.wait()
