"""Payloads shaped as kube-scheduler sends them, and a settable clock: shared by the contract tests."""

from __future__ import annotations

from typing import Any

import orjson

from extender.state.store import ClusterState
from tests.builders import cluster, in_scheduling_group, make_k8s_podgroup, make_node, make_tfjob, tfjob_pods
from tests.contract.listeners import ListenerClient

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


NODES = ["node-0", "node-1", "node-2"]


def gang_with_members_unseen(workers: int, unseen: int) -> tuple[ClusterState, list[dict[str, Any]]]:
    """A model of three 4-CPU nodes and the gang `mnist` (one PS, `workers` workers, Kubernetes' own
    PodGroup) whose last `unseen` members the watch has not delivered yet; all its pods."""
    pods = in_scheduling_group(tfjob_pods("mnist", ps=1, workers=workers, cpu="1", memory="2Gi"), "mnist")
    state = cluster(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *pods[: len(pods) - unseen],
        make_k8s_podgroup("mnist", min_count=len(pods)),
        make_tfjob("mnist", workers=workers),
    )
    return state, pods


def post(client: ListenerClient, verb: str, payload: Any) -> Any:
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
