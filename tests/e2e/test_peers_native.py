"""The peer benchmark against Kubernetes' own gang, small: `benchmarks/peers.py` on a control plane of its own
(the Workload API served), the `native` scheduler alone draining two gangs of 8 and one of 64 on 20 nodes.
Every gang binds whole, and the JSON records say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.peer_records import RECORD_KEYS
from benchmarks.peers import main
from tests.e2e.conftest import skip_without_control_plane

pytestmark = pytest.mark.e2e


def test_native_gangs_drain_whole_and_every_run_is_recorded(tmp_path: Path) -> None:
    skip_without_control_plane()
    path = tmp_path / "runs.json"
    main(
        [
            "--workloads=drain",
            "--schedulers=native",
            "--drain-nodes=20",
            "--drain-phases=gang8,gang64",
            "--pods=16",
            "--settle-s=1",
            "--stall-s=60",
            f"--json={path}",
        ]
    )
    records = json.loads(path.read_text())
    assert [(r["scheduler"], r["workload"]) for r in records] == [
        ("native", "drain-20-gang8"),
        ("native", "drain-20-gang64"),
    ]
    assert all(list(record) == list(RECORD_KEYS) for record in records)
    assert [(r["completed"], r["jobs"]) for r in records] == [(2, 2), (1, 1)]
    assert all(r["pods_per_s"] > 0 and r["max_partial_s"] is not None for r in records)
