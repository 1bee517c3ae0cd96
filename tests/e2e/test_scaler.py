"""End to end: the scaler on a real control plane with training-operator.

The module runs the shared extender with `--with-scaler` (fast ticks, short cooldowns, a short Lease in
`default`) and puts the plain extender back afterwards. Two kwok nodes of 4 CPU and 16 GiB per test.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import Scene, extender_run_with
from tests.e2e.scenarios import grow_an_elastic_job_as_capacity_frees
from tests.e2e.waits import stays, wait_until
from tests.e2e.workloads import (
    JOB,
    job_events,
    job_pods,
    not_failed,
    pod,
    ps_uid,
    running_workers,
    tfjob,
    tfjob_object,
    wait_bound,
    workers,
)

pytestmark = pytest.mark.e2e
LEASE = ("--lease-namespace", "default", "--lease-name", "e2e-scaler", "--lease-duration-s", "4")
SCALER_ARGS = (
    "--scaler-interval-s",
    "1",
    "--scale-cooldown-s",
    "5",
    "--scale-in-step",
    "3",
    "--consolidation-interval-s",
    "10",
    *LEASE,
)
QUIET_S = 60.0
"""How long a steady cluster is watched for a scaler action: six consolidation intervals (10 s) and twelve
scale cooldowns (5 s) at one tick a second — any planning that would act has had its chance."""
NO_GROW_BACK_S = 15.0
"""How long a job shrunk for a heavier one is watched not growing back: three scale cooldowns (5 s) at one
tick a second."""


@pytest.fixture(scope="module", autouse=True)
def with_scaler(plane: LocalControlPlane) -> Iterator[None]:
    with extender_run_with(plane, "--with-scaler", *SCALER_ARGS):
        yield


def debug_scaler(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/scaler", timeout=5) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


def lease_holder(plane: LocalControlPlane) -> str:
    lease = plane.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/e2e-scaler")
    return str(lease["spec"].get("holderIdentity") or "")


def test_a_job_grows_as_capacity_frees_then_the_cluster_stays_quiet(plane: LocalControlPlane, scene: Scene) -> None:
    ns = scene.namespace
    ps, grown = grow_an_elastic_job_as_capacity_frees(plane, scene)
    scaler = debug_scaler(plane.observe_port)
    assert scaler["leading"] and [a["kind"] for a in scaler["actions"]].count("scale-out") >= 2
    actions_before = len(scaler["actions"])
    stays("the elastic job at 7 workers", lambda: workers(plane, ns, "elastic") == 7, QUIET_S, interval_s=2)
    assert len(debug_scaler(plane.observe_port)["actions"]) == actions_before, "a steady cluster stays quiet"
    assert job_events(plane, ns, "elastic", "ScaledOut") == grown
    assert ps_uid(plane, ns, "elastic") == ps, "the PS is never touched"
    assert not_failed(tfjob_object(plane, ns, "elastic"))


def test_an_elastic_job_shrinks_to_admit_a_heavier_one_and_keeps_training(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(2)
    ns = scene.namespace
    # light: PS + 7 workers of 1 CPU / 4 GiB fill 8 CPU and 32 GiB; heavy: PS + 2 workers of 1 CPU / 1 GiB
    # needs 3 CPU and weighs more (far less memory per minimum worker)
    plane.create_tfjob(ns, tfjob("light", scene=ns, workers=7, memory="4Gi", min_workers=3, dynamic=True))
    wait_bound(plane, ns, f"{JOB}=light", 8)
    ps = ps_uid(plane, ns, "light")
    plane.create_tfjob(ns, tfjob("heavy", scene=ns, workers=2, memory="1Gi"))
    wait_bound(plane, ns, f"{JOB}=heavy", 3, timeout_s=60)
    assert workers(plane, ns, "light") == 4, "three workers, the step, made room"
    (message,) = job_events(plane, ns, "light", "ScaledIn")
    assert "KOD2 scale-in" in message and "scale" in message

    def shrunk_and_training() -> bool:
        light = tfjob_object(plane, ns, "light")
        assert not_failed(light), "the light job keeps training"
        assert light["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 4, "no growing back into the heavy job"
        return True

    stays("the light job shrunk and training", shrunk_and_training, NO_GROW_BACK_S, interval_s=1)
    assert ps_uid(plane, ns, "light") == ps, "the PS is never touched"
    assert f"{ns}/light-worker-0" in {f"{ns}/{p['metadata']['name']}" for p in job_pods(plane, ns, "light")}
    assert job_events(plane, ns, "light", "ScaledOut") == []


def test_another_instance_takes_the_lease_and_continues_without_repeating(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(2)
    ns = scene.namespace
    standby_port = plane.start_scaler("scaler-standby", ("--identity", "standby", "--observe-debug", *SCALER_ARGS))
    try:
        first = wait_until("a Lease holder", lambda: lease_holder(plane), 20)
        assert first != "standby", "the extender's scaler came first"
        assert not debug_scaler(standby_port)["leading"]
        plane.create_tfjob(ns, tfjob("elastic", scene=ns, workers=2, min_workers=1, max_workers=6, dynamic=True))
        wait_until(
            "the first step, reported",
            lambda: workers(plane, ns, "elastic") == 4 and job_events(plane, ns, "elastic", "ScaledOut"),
            40,
        )
        plane.kill("extender")
        wait_until("the standby holding the Lease", lambda: lease_holder(plane) == "standby", 30)
        plane.start_extender()
        wait_until("the elastic job at its maximum", lambda: running_workers(plane, ns, "elastic") == 6, 60)
        standby = debug_scaler(standby_port)
        assert standby["leading"]
        (step,) = [a for a in standby["actions"] if a["kind"] == "scale-out"]
        planned = {p["pod"].split("/")[1]: p["node"] for p in step["plan"]}
        landed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in job_pods(plane, ns, "elastic")}
        assert {name: landed[name] for name in planned} == planned, "the extender steered by the standby's plan"
        steps = sorted(job_events(plane, ns, "elastic", "ScaledOut"))
        assert len(steps) == 2, steps
        assert "from 2 to 4" in steps[0] and "from 4 to 6" in steps[1]
        assert workers(plane, ns, "elastic") == 6
    finally:
        plane.stop_process("scaler-standby")


def test_workers_move_onto_their_ps_node_when_it_has_room(plane: LocalControlPlane, scene: Scene) -> None:
    nodes = scene.add_nodes(2)
    ns = scene.namespace
    for index, node in enumerate(nodes):  # 2 CPU taken on each node: the job must spread over both
        filler = pod(f"filler-{index}", scene=ns, cpu="2")
        filler["spec"]["nodeName"] = node
        plane.create_pod(ns, filler)
    plane.create_tfjob(ns, tfjob("spread", scene=ns, workers=3, min_workers=3, dynamic=True))
    pods = wait_bound(plane, ns, f"{JOB}=spread", 4)
    (ps_node,) = {p["spec"]["nodeName"] for p in pods if p["metadata"]["name"] == "spread-ps-0"}
    assert len({p["spec"]["nodeName"] for p in pods}) == 2
    ps = ps_uid(plane, ns, "spread")
    plane.delete(f"/api/v1/namespaces/{ns}/pods/filler-{nodes.index(ps_node)}?gracePeriodSeconds=0")

    def together() -> bool:
        placed = [p for p in job_pods(plane, ns, "spread") if not p["metadata"].get("deletionTimestamp")]
        return len(placed) == 4 and all(p["spec"].get("nodeName") == ps_node for p in placed)

    wait_until("every worker beside the PS", together, 60)
    moves = job_events(plane, ns, "spread", "WorkerMigrated")
    assert len(moves) == 2 and all(f"to its PS node {ps_node}" in m for m in moves), moves
    assert ps_uid(plane, ns, "spread") == ps, "the PS is never touched"
    assert workers(plane, ns, "spread") == 3
    assert not_failed(tfjob_object(plane, ns, "spread")), "a migrated worker does not fail the job"
