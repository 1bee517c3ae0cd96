"""Payloads shaped as kube-scheduler sends them, and a settable clock: shared by the contract tests."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.testclient import TestClient

from tests.builders import tfjob_pods

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


NODES = ["node-0", "node-1", "node-2"]


def post(client: TestClient, verb: str, payload: Any) -> Any:
    body = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    response = client.post(f"/{verb}", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def worker(name: str = "mnist-worker-0") -> dict[str, Any]:
    index = int(name.rsplit("-", 1)[1])
    role = name.split("-")[-2]
    return next(
        p
        for p in tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi")
        if p["metadata"]["name"] == f"mnist-{role}-{index}"
    )


def filter_args(pod: dict[str, Any], names: list[str] | None = NODES) -> dict[str, Any]:
    return {"Pod": pod, "Nodes": None, "NodeNames": names}


def assert_partition(reply: dict[str, Any], candidates: list[str]) -> None:
    """A reply that keeps nodes names no per-node reason (kube-scheduler reads them only when no node is
    left); one that keeps none puts every candidate in exactly one of FailedNodes, FailedAndUnresolvableNodes."""
    kept = reply["NodeNames"] or []
    failed = reply["FailedNodes"] or {}
    unresolvable = reply["FailedAndUnresolvableNodes"] or {}
    assert set(kept) <= set(candidates)
    if kept:
        assert not failed and not unresolvable, "reasons sent beside kept nodes"
        return
    for node in candidates:
        assert [node in failed, node in unresolvable].count(True) == 1, node
