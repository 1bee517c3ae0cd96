"""Managed namespaces (`PolicySettings.managed_namespaces`): the model leaves every other namespace's TFJobs
and PodGroups out and keeps its pods without their gang, so they hold their nodes, are placed as pods of no
gang, and are never a victim; none listed, every namespace is managed."""

from __future__ import annotations

from typing import Any

from extender.policy.core.settings import PolicySettings
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.policy.rank.queue import queue_of
from extender.state.store import ClusterState
from tests.builders import cluster, cpu_nodes, make_pod, make_podgroup, make_tfjob, waiting_job

NOW = 1_800_000_000.0
TEAM_A = PolicySettings(managed_namespaces=("team-a",))


def model(settings: PolicySettings, *objects: dict[str, Any]) -> ClusterState:
    return cluster(*objects, settings=settings)


def gang(namespace: str, name: str, node: str = "") -> list[dict[str, Any]]:
    pods = [
        make_pod(
            f"{name}-ps-0",
            namespace=namespace,
            job=name,
            role="ps",
            group=name,
            node=node,
            phase="Running" if node else "Pending",
        ),
        make_pod(
            f"{name}-worker-0",
            namespace=namespace,
            job=name,
            role="worker",
            index=0,
            group=name,
            node=node,
            phase="Running" if node else "Pending",
        ),
    ]
    return [
        *pods,
        make_podgroup(name, namespace=namespace, min_member=2),
        make_tfjob(name, namespace=namespace, workers=1),
    ]


def test_a_tfjob_and_podgroup_outside_are_not_modelled_and_their_pods_keep_no_gang() -> None:
    snap = model(TEAM_A, *cpu_nodes(1), *gang("team-a", "inside"), *gang("team-b", "outside")).snapshot()
    assert set(snap.jobs) == {"team-a/inside"} and set(snap.groups) == {"team-a/inside"}
    assert snap.pods["team-a/inside-ps-0"].group and snap.pods["team-a/inside-worker-0"].group
    assert not snap.pods["team-b/outside-ps-0"].group and not snap.pods["team-b/outside-worker-0"].group
    assert set(queue_of(snap, TEAM_A).summaries) == {"team-a/inside"}
    every = model(PolicySettings(), *cpu_nodes(1), *gang("team-a", "inside"), *gang("team-b", "outside")).snapshot()
    assert set(every.jobs) == {"team-a/inside", "team-b/outside"}, "none listed: every namespace"


def test_a_pod_outside_holds_its_node_but_is_never_a_victim() -> None:
    hog = [make_pod(f"hog-{i}", namespace="team-b", node="node-0", phase="Running", cpu="1") for i in range(4)]
    waiting = [{**obj, "metadata": {**obj["metadata"], "namespace": "team-a"}} for obj in waiting_job("urgent", pods=2)]
    for settings, victims in ((PolicySettings(), True), (TEAM_A, False)):
        snap = model(settings, *cpu_nodes(1), *hog, *waiting).snapshot()
        assert snap.nodes["node-0"].free.get("cpu") == 0, "the pods outside hold their node"
        plan = plan_preemption(snap, "team-a/urgent", settings, NOW)
        assert isinstance(plan, PreemptionPlan) is victims, plan
