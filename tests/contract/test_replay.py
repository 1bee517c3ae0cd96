"""`tfjob-extender replay --state FILE` on what `/debug/state` writes: a model holding finished TFJobs (their run
times recorded by the preemption loop), a running gang with its pods and PodGroup, and a PriorityClass, dumped
as the route dumps it and replayed by the command as a user runs it. The table names ours and default and the
ratios of what ours would gain; the JSON says the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from extender.state.manifests import dump_state
from tests.builders import bound_job, cluster, cpu_nodes, make_priority_class, make_sized_tfjob

FINISHED = (("resnet", 600.0, 2, "10:00:00"), ("vgg", 240.0, 3, "10:00:40"), ("bert", 900.0, 2, "10:01:30"))
"""(name, seconds it ran, workers, when it was created) of the jobs that finished."""


def finished_job(name: str, run_s: float, workers: int, at: str) -> dict[str, Any]:
    job = make_sized_tfjob(name, workers=workers, cpu="2", memory="4Gi", created=f"2026-03-01T{at}Z")
    job["metadata"]["uid"] = f"uid-{name}"
    job["metadata"]["annotations"]["tfjob-extender.io/run-s"] = f"{run_s:.3f}"
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    return job


def test_a_debug_state_dump_replays_through_every_policy_and_says_what_ours_gains(tmp_path: Path) -> None:
    running = bound_job("mnist", placement=["node-0", "node-0", "node-1"], cpu="2", created="2026-03-01T10:02:00Z")
    model = cluster(
        *cpu_nodes(3, cpu="8"),
        *(finished_job(*job) for job in FINISHED),
        *running,
        make_priority_class("high", 1000),
    )
    dump = tmp_path / "state.json"
    dump.write_text(json.dumps(dump_state(model.snapshot())))
    out = tmp_path / "replay.json"

    command = [sys.executable, "-m", "extender", "replay", "--state", str(dump), "--seeds", "2", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=100, check=False)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"replay of {dump}: 4 TFJob(s) on 3 node(s), 0 TFJob(s) skipped, seeds 1..2"
    assert "3 recorded by the preemption loop (tfjob-extender.io/run-s)" in lines[1]
    assert "1 assumed to run 600 s (the median of the 3 known run time(s))" in lines[1]
    per_policy, _, gained = done.stdout.partition("What the team would gain with ours")
    policies = rows(per_policy)
    assert list(policies) == ["policy", "ours", "default", "gang-fifo", "kod2", "tiresias", "optimus"]
    assert policies["policy"][:4] == ["avg JCT s", "p95 JCT s", "makespan s", "avg queue s"]
    report = json.loads(out.read_text())
    best = report["gains"]["best_baseline"]
    ratios = rows(gained)
    assert list(ratios) == ["against", "default", f"{best} (best honest baseline)"]
    assert ratios["against"] == ["avg JCT", "p95 JCT", "makespan", "avg wait"]
    assert all(cell for cell in ratios["default"])
    against_default = report["gains"]["against_default"]
    expected = report["policies"]["ours"]["avg_jct_s"] / report["policies"]["default"]["avg_jct_s"]
    assert against_default["avg_jct_s"] == round(expected, 3)
    assert any(line.startswith("against default: avg JCT ") for line in lines)
    assert report["seeds"] == [1, 2] and len(report["per_seed"]) == 2
    assert report["jobs"]["mnist"]["run_time"] == "assumed"
    assert [report["jobs"][name]["run_s"] for name, *_ in FINISHED] == [600.0, 240.0, 900.0]


def rows(text: str) -> dict[str, list[str]]:
    """A Markdown table's rows in `text`: first cell → the others (the separator line left out)."""
    cells = [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("| ")]
    return {row[0]: row[1:] for row in cells}
