"""Job-level preemption and the scaler treat gangs of Kubernetes' own PodGroup as they treat the PodGroup CRDs.

Each scenario of `test_preemptor` / `test_scaler` is run twice: as written (`scheduling.x-k8s.io`), and with
every PodGroup rewritten as a `scheduling.k8s.io/v1beta1` PodGroup of the same minimum and every member
joining it by `spec.schedulingGroup.podGroupName`. The loops must ask the actuator for the same things.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.loops.scaler import ScalerLoop
from extender.policy.core.settings import PolicySettings
from tests.builders import Obj, cluster, cpu_nodes, make_k8s_podgroup, placed_job, running_gang, waiting_job

SETTINGS = PolicySettings()

NOW = 1_800_000_000.0
NAMES = ["node-0", "node-1", "node-2"]

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def as_written(objects: list[Obj]) -> list[Obj]:
    return objects


def in_kubernetes_dialect(objects: list[Obj]) -> list[Obj]:
    """The same cluster with its gangs declared through `scheduling.k8s.io` PodGroups."""
    rewritten = []
    for obj in copy.deepcopy(objects):
        if obj["kind"] == "PodGroup":
            meta = obj["metadata"]
            rewritten.append(make_k8s_podgroup(meta["name"], min_count=obj["spec"]["minMember"]))
            continue
        if obj["kind"] == "Pod":
            group = obj["metadata"]["labels"].pop(POD_GROUP_LABEL, "")
            if group:
                obj["spec"]["schedulingGroup"] = {"podGroupName": group}
        rewritten.append(obj)
    return rewritten


DIALECTS = pytest.mark.parametrize(
    "dialect", [pytest.param(as_written, id="x-k8s"), pytest.param(in_kubernetes_dialect, id="k8s")]
)


def preemption(objects: list[Obj]) -> tuple[PreemptionLoop, RecordingActuator]:
    actuator = RecordingActuator()
    return PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW), actuator


@DIALECTS
def test_an_elastic_job_is_scaled_in_for_a_waiting_gang(dialect: Callable[[list[Obj]], list[Obj]]) -> None:
    running = running_gang("light", workers=11, nodes=NAMES, min_workers=3)
    loop, actuator = preemption(dialect([*cpu_nodes(3), *running, *waiting_job("heavy", pods=4)]))
    assert loop.tick(NOW) is not None
    assert [(job, replicas) for job, replicas, _ in actuator.scaled] == [("default/light", 7)]
    reserved = {r.pod for r in loop.state.snapshot().reservations.values()}
    assert reserved == {f"default/heavy-worker-{i}" for i in range(4)}


@DIALECTS
def test_a_non_elastic_gang_is_evicted_whole(dialect: Callable[[list[Obj]], list[Obj]]) -> None:
    running = running_gang("batch", workers=11, nodes=NAMES, dynamic=False)
    loop, actuator = preemption(dialect([*cpu_nodes(3), *running, *waiting_job("urgent", pods=4)]))
    assert loop.tick(NOW) is not None
    assert {key for key, _ in actuator.evicted} == {
        "default/batch-ps-0",
        *(f"default/batch-worker-{i}" for i in range(11)),
    }


@DIALECTS
def test_a_running_elastic_job_grows_into_idle_room(dialect: Callable[[list[Obj]], list[Obj]]) -> None:
    running = placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6)
    actuator = RecordingActuator()
    loop = ScalerLoop(cluster(*dialect([*cpu_nodes(3), *running])), actuator, SETTINGS, lambda: NOW)
    [record] = loop.tick(NOW)
    assert (record.kind, record.replicas_from, record.replicas_to, record.outcome) == ("scale-out", 2, 4, "done")
    assert [(job, replicas) for job, replicas, _ in actuator.scaled] == [("default/a", 4)]
