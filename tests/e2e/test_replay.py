"""End to end: `tfjob-extender replay --kubeconfig` on the local control plane's own TFJob history.

Two 4-CPU kwok nodes; three short TFJobs (a PS and one or two workers of 1 CPU, 5 to 10 s) run to completion
through training-operator, kube-scheduler and the extender, and the preemption loop records each run time on
its TFJob (`tfjob-extender.io/run-s`). Then the command, run as a user runs it against the API server (read
only), replays the scene's TFJobs on the scene's nodes through every policy of the simulator and prints the
table with ours and default and what ours would gain; the JSON says where each run time came from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import Scene
from tests.e2e.scenarios import RUN_TIME, succeeded
from tests.e2e.waits import wait_until
from tests.e2e.workloads import tfjob, tfjob_object

pytestmark = pytest.mark.e2e

JOBS = (("short", 1, "5s"), ("pair", 2, "8s"), ("longer", 1, "10s"))
"""(name, workers, how long its pods run) of the jobs run to completion."""


def test_replay_reads_the_clusters_finished_tfjobs_and_prints_what_ours_would_gain(
    plane: LocalControlPlane, scene: Scene, tmp_path: Path
) -> None:
    scene.add_nodes(2)
    ns = scene.namespace
    for name, workers, run_for in JOBS:
        plane.create_tfjob(ns, tfjob(name, scene=ns, workers=workers, run_for=run_for))
    wait_until("the jobs succeeded", lambda: all(succeeded(plane, ns, name) for name, *_ in JOBS), 120)

    def recorded() -> dict[str, float] | None:
        annotations = {name: tfjob_object(plane, ns, name)["metadata"].get("annotations") or {} for name, *_ in JOBS}
        times = {name: float(found[RUN_TIME]) for name, found in annotations.items() if RUN_TIME in found}
        return times if len(times) == len(JOBS) else None

    times = wait_until("the run times recorded on the TFJobs", recorded, 30)

    out = tmp_path / "replay.json"
    command = [sys.executable, "-m", "extender", "replay", "--kubeconfig", str(plane.kubeconfig)]
    command += ["--namespace", ns, "--node-selector", f"e2e-scene={ns}", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(": 3 TFJob(s) on 2 node(s), 0 TFJob(s) skipped, seeds 1..1"), done.stdout
    assert "3 recorded by the preemption loop (tfjob-extender.io/run-s)" in lines[1], done.stdout
    assert "0 assumed" in lines[1], done.stdout
    first_cells = [line.split("|")[1].strip() for line in lines if line.startswith("| ")]
    assert {"ours", "default", "against"} <= set(first_cells), done.stdout
    assert any(line.startswith("against default: avg JCT ") for line in lines), done.stdout
    report = json.loads(out.read_text())
    assert {name: job["run_s"] for name, job in report["jobs"].items()} == {
        name: round(ran, 3) for name, ran in times.items()
    }
    assert report["policies"]["ours"]["censored_jobs"] == 0
    assert report["gains"]["against_default"]["avg_jct_s"] is not None
