"""The standing fields of the debug routes: weights are Equation (1) of the shown inputs, and the rank order
of `/debug/queue` is the order in which admission lets gangs start."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import orjson
import pytest

from extender.api.app import make_service
from extender.config import Settings
from extender.explain import describe
from extender.policy.core.settings import PolicySettings
from extender.policy.rank.weights import cluster_capacity, job_weight
from extender.state.convert import timestamp
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_podgroup, make_sized_tfjob, tfjob_pods
from tests.contract import listeners
from tests.contract.listeners import ListenerClient

CREATED = "2026-03-01T10:00:00Z"
BUSY_PODS = ("ps-0", "worker-0", "worker-1", "worker-2")
GANGS = {"small": 3, "medium": 5, "large": 7}
"""TFJob → workers (1 PS each, 1 CPU per pod): any two together overflow the one 9-CPU node."""


def jobs_cluster() -> ClusterState:
    objects: list[dict[str, Any]] = [make_node("node-0", cpu="9", memory="64Gi")]
    for name, workers in GANGS.items():
        objects += tfjob_pods(name, ps=1, workers=workers, cpu="1", memory="2Gi")
        objects += [make_podgroup(name, min_member=workers + 1)]
        objects += [make_sized_tfjob(name, workers=workers, cpu="1", memory="2Gi", created=CREATED)]
    return cluster(*objects)


def client_of(state: ClusterState) -> contextlib.AbstractContextManager[ListenerClient]:
    now = timestamp(CREATED) + 60
    return listeners.client_of(make_service(Settings(), state, lambda: now))


def test_job_weights_are_equation_1_of_the_shown_inputs() -> None:
    state = jobs_cluster()
    settings = PolicySettings()
    snapshot = state.snapshot()
    capacity = cluster_capacity(snapshot)
    with client_of(state) as client:
        jobs = client.get("/debug/jobs").json()["jobs"]
        gangs = {g["podGroup"]: g for g in client.get("/debug/gangs").json()["gangs"]}
    assert [job["job"] for job in jobs] == [f"default/{name}" for name in sorted(GANGS)]
    for job in jobs:
        standing = job["standing"]
        inputs = standing["weightInputs"]
        assert inputs["minWorkers"] == GANGS[job["job"].split("/")[1]]
        assert inputs["cpuShare"] == (inputs["minWorkers"] + 1) / 9
        assert inputs["memoryShare"] == 2 * (inputs["minWorkers"] + 1) / 64
        share = max(inputs["cpuShare"] + inputs["memoryShare"], settings.weight_min_share)
        raw = settings.weight_scale * inputs["minWorkers"] / share
        assert math.isclose(standing["baseWeight"], 1 / (1 + math.exp(-(raw - settings.weight_offset))))
        assert standing["baseWeight"] == job_weight(snapshot.jobs[job["job"]], capacity, settings)
        assert standing["agedWeight"] == standing["baseWeight"]
        assert standing["starvation"] == {"waitedSeconds": 60.0, "limitSeconds": 600.0, "starving": False}
        assert standing["priority"] == 0
        assert gangs[job["job"]]["standing"]["baseWeight"] == standing["baseWeight"]
        assert gangs[job["job"]]["standing"]["rank"] == standing["rank"]
    assert sorted(job["standing"]["rank"] for job in jobs) == [1, 2, 3]


def filter_first_pending(client: ListenerClient, state: ClusterState, gang: str) -> bool:
    """Ask filter about the gang's first pending member; True when it was admitted (a node offered)."""
    snapshot = state.snapshot()
    pending = sorted(key for key in snapshot.group_members[gang] if snapshot.pods[key].pending)
    name = pending[0].split("/", 1)[1]
    workers = GANGS[gang.split("/")[1]]
    pod = next(
        p
        for p in tfjob_pods(gang.split("/")[1], workers=workers, cpu="1", memory="2Gi")
        if p["metadata"]["name"] == name
    )
    reply = client.post("/filter", content=orjson.dumps({"Pod": pod, "NodeNames": ["node-0"]})).json()
    return bool(reply["NodeNames"])


def finish(state: ClusterState, gang: str) -> None:
    name = gang.split("/")[1]
    for pod in tfjob_pods(name, workers=GANGS[name], cpu="1", memory="2Gi"):
        state.apply(Kind.POD, "DELETED", pod)


def test_rank_order_of_the_queue_is_the_order_admission_lets_gangs_start() -> None:
    state = jobs_cluster()
    admitted: list[str] = []
    with client_of(state) as client:
        queue = client.get("/debug/queue").json()["queue"]
        ranked = [row["gang"] for row in queue]
        assert [row["rank"] for row in queue] == [1, 2, 3]
        order = [(row["sizeClass"], -row["baseWeight"]) for row in queue]
        assert order == sorted(order), "smaller size class first, then the heavier weight"
        assert queue[0]["waitsFor"] == "GangSchedulable"
        assert {row["waitsFor"] for row in queue[1:]} == {"GangWaitingForHigherRanked"}
        assert all(ranked[0] in row["blockers"] for row in queue[1:])
        for _ in GANGS:
            waiting = [row["gang"] for row in client.get("/debug/queue").json()["queue"] if row["rank"]]
            starts = [gang for gang in reversed(waiting) if filter_first_pending(client, state, gang)]
            assert len(starts) == 1, starts
            admitted += starts
            reserved = client.get("/debug/queue").json()["queue"][0]
            assert (reserved["gang"], reserved["rank"], reserved["waitsFor"]) == (starts[0], None, "GangReserved")
            finish(state, starts[0])
    assert admitted == ranked


BUSY_NODE = (
    make_node("node-1", cpu="4", memory="16Gi"),
    *tfjob_pods("busy", ps=1, workers=3, cpu="1", memory="1Gi", nodes={f"busy-{r}": "node-1" for r in BUSY_PODS}),
    make_podgroup("busy", min_member=4),
)
"""A second 4-CPU node a running job fills: the cluster could hold a 6-pod gang, but not now."""


def test_a_gang_too_large_for_the_room_left_shows_its_best_plan_and_what_would_start_it() -> None:
    state = cluster(
        make_node("node-0", cpu="4", memory="16Gi"),
        *BUSY_NODE,
        *tfjob_pods("wide", ps=1, workers=5, cpu="1", memory="1Gi"),
        make_podgroup("wide", min_member=6),
        make_sized_tfjob("wide", workers=5, cpu="1", memory="1Gi", created=CREATED),
    )
    with client_of(state) as client:
        (row,) = client.get("/debug/queue").json()["queue"]
        explained = client.get("/debug/explain/default/wide").json()
        by_pod = client.get("/debug/explain/default/wide-worker-3").json()
        by_group = client.get("/debug/explain/default/wide").json()
    assert row["waitsFor"] == "GangWaitingForRoom"
    assert row["bestPlan"] == {"placed": 4, "needed": 6, "triedOn": "on every node"}
    assert "room for 2 more pod(s) of 1 CPU, 1 GiB" in row["wouldStart"]
    assert explained["status"] == "waiting"
    assert explained["kind"] == "TFJob"
    assert explained["waitsFor"]["why"] == row["why"]
    assert explained["summary"].startswith("default/wide waits: gang default/wide needs 6 pods")
    assert by_pod["kind"] == "Pod" and by_pod["job"] == "default/wide"
    assert by_group["podGroup"] == "default/wide"


@pytest.mark.parametrize(
    ("nodes", "cpu", "why"),
    [
        (1, "1", "its minimum asks more than the whole cluster has (6 CPU of 4 CPU on 1 schedulable nodes)"),
        (3, "3", "its pod default/wide-ps-0 asks 3 CPU, 1 GiB, more than any one schedulable node has"),
    ],
)
def test_a_gang_larger_than_the_cluster_is_told_it_can_never_start(nodes: int, cpu: str, why: str) -> None:
    workers = 5 if cpu == "1" else 1
    state = cluster(
        *[make_node(f"node-{i}", cpu="2" if cpu == "3" else "4", memory="16Gi") for i in range(nodes)],
        *tfjob_pods("wide", ps=1, workers=workers, cpu=cpu, memory="1Gi"),
        make_podgroup("wide", min_member=workers + 1),
        make_sized_tfjob("wide", workers=workers, cpu=cpu, memory="1Gi", created=CREATED),
    )
    with client_of(state) as client:
        (row,) = client.get("/debug/queue").json()["queue"]
        explained = describe(client.get("/debug/explain/default/wide").json())
    assert row["waitsFor"] == "GangBiggerThanCluster" and row["bestPlan"] is None
    assert row["why"] == f"gang default/wide: it can never start on this cluster: {why}"
    assert "never helps" in row["wouldStart"]
    assert (
        f"waits for: GangBiggerThanCluster — gang default/wide: it can never start on this cluster: {why}" in explained
    )


def test_bad_queries_and_unknown_objects_get_clear_json_errors() -> None:
    with client_of(jobs_cluster()) as client:
        for query in ("limit=0", "limit=many", "limit=100000"):
            response = client.get(f"/debug/queue?{query}")
            assert response.status_code == 400
            assert "limit" in response.json()["error"]
        unknown = client.get("/debug/explain/default/nothing-here")
        assert unknown.status_code == 404
        assert unknown.json()["status"] == "unknown"
        assert "default/nothing-here" in unknown.json()["error"]


def test_explain_words_a_waiting_and_a_started_job_for_a_person() -> None:
    state = cluster(
        make_node("node-0", cpu="4", memory="16Gi"),
        *BUSY_NODE,
        *tfjob_pods("wide", ps=1, workers=5, cpu="1", memory="1Gi"),
        make_podgroup("wide", min_member=6),
        make_sized_tfjob("wide", workers=5, cpu="1", memory="1Gi", created=CREATED),
        *tfjob_pods(
            "small", ps=1, workers=1, cpu="1", memory="1Gi", nodes={"small-ps-0": "node-0", "small-worker-0": "node-0"}
        ),
        make_podgroup("small", min_member=2),
        make_sized_tfjob("small", workers=1, cpu="1", memory="1Gi", created=CREATED),
    )
    with client_of(state) as client:
        waiting = describe(client.get("/debug/explain/default/wide").json())
        started = describe(client.get("/debug/explain/default/small").json())
        unknown = describe(client.get("/debug/explain/default/gone").json())
    assert waiting.splitlines()[0] == "default/wide (TFJob): WAITING"
    assert "rank 1 of 1 waiting gangs" in waiting
    assert "waits for: GangWaitingForRoom — gang default/wide needs 6 pods" in waiting
    assert "best plan found: places 2 of the 6 pods it needs" in waiting
    assert "would start with: room for 4 more pod(s)" in waiting
    assert started.splitlines()[0] == "default/small (TFJob): STARTED — default/small has started: 2/2 pods bound"
    assert "pods: 2/2 bound on node-0" in started
    assert unknown == "default/gone: unknown — the extender knows no default/gone"
