"""A small cluster as a snapshot file, with something in every part of the page: running jobs (one
elastic, with room to grow), a gang whose plan is reserved (ghosts), a gang too large for the room left
(it waits, with its best plan), and finished TFJobs whose run times the loops recall, so the waiting gang
gets a start-time forecast."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from extender.policy.core.resources import Resources
from extender.policy.core.snapshot import Reservation
from extender.state.gang_annotations import RUN_TIME_ANNOTATION
from extender.state.manifests import dump_state
from tests.builders import cluster, hold, make_node, make_podgroup, make_sized_tfjob, tfjob_pods

RESERVATION_LIFETIME_S = 3600.0
"""Seconds the scene's reservation stays valid after the file is written (a test serves it well within)."""
RECENTLY_S = 60.0
"""The waiting gang was submitted this long before the file is written: far from starving, so it ranks
by its (low) weight, below the elastic job the scaler would grow."""


def running(name: str, node: str, workers: int, **job: Any) -> list[dict[str, Any]]:
    names = [f"{name}-ps-0", *(f"{name}-worker-{i}" for i in range(workers))]
    pods = tfjob_pods(name, workers=workers, cpu="1", memory="2Gi", nodes=dict.fromkeys(names, node))
    return [*pods, make_podgroup(name, min_member=workers + 1), make_sized_tfjob(name, workers=workers, **job)]


FINISHED_RUN_S = (240.0, 420.0, 660.0, 900.0)
"""Run times of the finished TFJobs (seconds), as the loops wrote them on each (`tfjob-extender.io/run-s`)."""


def finished(name: str, run_s: float) -> dict[str, Any]:
    job = make_sized_tfjob(name, workers=2, cpu="1", memory="2Gi", created="2026-03-01T09:00:00Z")
    job["metadata"]["annotations"][RUN_TIME_ANNOTATION] = f"{run_s:g}"
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    return job


def write_scene(path: Path) -> Path:
    recently = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - RECENTLY_S))
    state = cluster(
        *(make_node(f"node-{i}", cpu="8", memory="32Gi") for i in range(4)),
        *running("resnet", "node-0", 5, cpu="1", memory="2Gi"),
        *running("elastic", "node-1", 2, cpu="1", memory="2Gi", min_workers=1, max_workers=6),
        *tfjob_pods("mnist", workers=3, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=4),
        make_sized_tfjob("mnist", workers=3, cpu="1", memory="2Gi"),
        *tfjob_pods("bert", workers=13, cpu="2", memory="4Gi"),
        make_podgroup("bert", min_member=14),
        make_sized_tfjob("bert", workers=13, cpu="2", memory="4Gi", created=recently),
        *(finished(f"done-{i}", run_s) for i, run_s in enumerate(FINISHED_RUN_S)),
    )
    expires = time.time() + RESERVATION_LIFETIME_S
    pods = ["mnist-ps-0", *(f"mnist-worker-{i}" for i in range(3))]
    requests = Resources.parse({"cpu": "1", "memory": "2Gi"})
    hold(state, reserve=[Reservation(f"default/{pod}", "default/mnist", "node-2", requests, expires) for pod in pods])
    path.write_bytes(orjson.dumps(dump_state(state.snapshot())))
    return path
