"""End to end with Kueue v0.17: the priority boost makes Kueue take the job that loses less.

The module starts a control plane of its own with Kueue, its alpha gate `PriorityBoost` on. Each run has
its ClusterQueue of 4 CPU (preemption within it of lower priorities), its LocalQueue, its two nodes, and
two TFJobs of the PriorityClass `boost-low`, 2 CPU each, filling the quota: `cheap`, admitted first, whose
pods report a checkpoint moments before the decision, and `costly`, admitted after it, which declares an
hour between checkpoints and has reported none, so it would lose all it ran. Then `urgent`, of
`boost-high`, needs 2 CPU of the quota and Kueue preempts one of them. Without the boost (the control
run) Kueue takes the more recently admitted one of equal priority, `costly`; with the extender writing
`kueue.x-k8s.io/priority-boost` from what taking each would cost, it takes `cheap`. Kueue's own choice
decides in both: the extender touches nothing of Kueue's but the annotation on the Workloads. A third run
gives the jobs Kueue's WorkloadPriorityClasses instead (`kueue.x-k8s.io/priority-class`): their Workloads'
priority is that class's value, and the boost stays below the next WorkloadPriorityClass, not the next
PriorityClass.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import LocalControlPlane
from extender.loops.priority_booster import PRIORITY_BOOST_ANNOTATION
from extender.state.gang_annotations import CHECKPOINT_INTERVAL_ANNOTATION, LAST_CHECKPOINT_ANNOTATION
from extender.state.kueue import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from tests.e2e.kueue import KUEUE_API, admitted_by_kueue, kueue_plane
from tests.e2e.waits import wait_until
from tests.e2e.workloads import bound, job_pods, tfjob
from tests.e2e.workloads import tfjob_object as read_tfjob

pytestmark = pytest.mark.e2e

LOW, HIGH = "boost-low", "boost-high"
BOOST_ARGS = (
    "--kueue-priority-boost",
    "--priority-boost-resource-s",
    "1",
    "--preemption-priority-boost-interval-s",
    "1",
)
"""One boost point per CPU-second of cost, rewritten every second: a few seconds of running tell the jobs apart."""
RAN_BEFORE_URGENT_S = 8.0
"""How long both jobs run before `urgent` arrives: `costly` then stands to lose at least this much more."""
TIMEOUT_S = 90.0
ADMISSIONS_APART_S = 2.0
"""Between the two admissions: Kueue orders victims by admission time, which it stores to the second."""


@pytest.fixture(scope="module")
def plane() -> Iterator[LocalControlPlane]:
    with kueue_plane() as control_plane:
        for name, value in ((LOW, 0), (HIGH, 1000)):
            control_plane.post(
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                 "value": value},
            )  # fmt: skip
        yield control_plane


def queue_of_four_cpu(plane: LocalControlPlane, run: str) -> None:
    """A ResourceFlavor, a ClusterQueue of 4 CPU that preempts lower priorities within it, and a LocalQueue in
    the run's namespace, with two nodes of 4 CPU for it."""
    plane.create_namespace(run)
    for index in range(2):
        plane.create_node(f"{run}-n{index}", cpu="4", memory="16Gi", labels={"e2e-scene": run})
    plane.wait_nodes_ready([f"{run}-n{index}" for index in range(2)])
    plane.post(
        f"{KUEUE_API}/resourceflavors",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": run}, "spec": {}},
    )
    quota = [{"name": "cpu", "nominalQuota": "4"}, {"name": "memory", "nominalQuota": "64Gi"}]
    plane.post(
        f"{KUEUE_API}/clusterqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": run},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": run}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {"coveredResources": ["cpu", "memory"], "flavors": [{"name": run, "resources": quota}]}
                ],
            },
        },
    )
    plane.post(
        f"{KUEUE_API}/namespaces/{run}/localqueues",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"},
         "spec": {"clusterQueue": run}},
    )  # fmt: skip


def queued_job(run: str, name: str, priority_class: str, workload_priority_class: str = "") -> dict[str, Any]:
    job = tfjob(name, scene=run, ps=1, workers=1, priority_class=priority_class)
    job["metadata"]["labels"] = {QUEUE_NAME_LABEL: "q"}
    if workload_priority_class:
        job["metadata"]["labels"][PRIORITY_CLASS_LABEL] = workload_priority_class
    job["metadata"]["annotations"][CHECKPOINT_INTERVAL_ANNOTATION] = "3600"
    return job


def started(plane: LocalControlPlane, run: str, name: str, priority_class: str, workload_class: str = "") -> None:
    plane.create_tfjob(run, queued_job(run, name, priority_class, workload_class))
    wait_until(f"Kueue admitted {name}", lambda: admitted_by_kueue(plane, run, name), TIMEOUT_S)
    wait_until(f"{name} bound", lambda: len(bound(job_pods(plane, run, name))) == 2, TIMEOUT_S)


def report_checkpoint(plane: LocalControlPlane, run: str, name: str) -> None:
    """The job's pods say it checkpointed now, as its training code would."""
    for pod in job_pods(plane, run, name):
        path = f"/api/v1/namespaces/{run}/pods/{pod['metadata']['name']}"
        plane.merge_patch(path, {"metadata": {"annotations": {LAST_CHECKPOINT_ANNOTATION: f"{time.time():.3f}"}}})


def boosts(plane: LocalControlPlane, run: str) -> dict[str, int]:
    """TFJob name → the priority boost on its Workload."""
    found = {}
    for workload in plane.get(f"{KUEUE_API}/namespaces/{run}/workloads")["items"]:
        owner = workload["metadata"]["ownerReferences"][0]["name"]
        value = (workload["metadata"].get("annotations") or {}).get(PRIORITY_BOOST_ANNOTATION)
        if value is not None:
            found[owner] = int(value)
    return found


def taken_by_kueue(plane: LocalControlPlane, run: str) -> str | None:
    """The one of `cheap` and `costly` Kueue suspended to admit `urgent`, once it did."""
    suspended = [
        name
        for name in ("cheap", "costly")
        if (read_tfjob(plane, run, name)["spec"].get("runPolicy") or {}).get("suspend")
    ]
    assert len(suspended) <= 1, suspended
    return suspended[0] if suspended else None


def kueue_takes(plane: LocalControlPlane, run: str, *, boosted: bool) -> str:
    queue_of_four_cpu(plane, run)
    started(plane, run, "cheap", LOW)
    time.sleep(ADMISSIONS_APART_S)
    started(plane, run, "costly", LOW)
    time.sleep(RAN_BEFORE_URGENT_S)
    report_checkpoint(plane, run, "cheap")
    if boosted:

        def ordered() -> dict[str, int] | None:
            found = boosts(plane, run)
            return found if found.keys() == {"cheap", "costly"} and found["costly"] > found["cheap"] else None

        written = wait_until("the boosts written, the costlier job's the larger", ordered, 30)
        assert all(0 < value < 1000 for value in written.values()), written
    else:
        assert boosts(plane, run) == {}, "the control run writes no boost"
    plane.create_tfjob(run, queued_job(run, "urgent", HIGH))
    victim = wait_until("Kueue preempted one job for the urgent one", lambda: taken_by_kueue(plane, run), TIMEOUT_S)
    wait_until("Kueue admitted the urgent job", lambda: admitted_by_kueue(plane, run, "urgent"), TIMEOUT_S)
    return victim


def test_kueue_takes_the_later_admitted_job_without_the_boost_and_the_cheaper_one_with_it(
    plane: LocalControlPlane,
) -> None:
    assert kueue_takes(plane, "boost-control", boosted=False) == "costly"
    plane.stop_extender()
    plane.extender_args = (*plane.extender_args, *BOOST_ARGS)
    plane.start_extender()
    assert kueue_takes(plane, "boost-on", boosted=True) == "cheap"


WORKLOAD_CLASSES = {"wpc-research": 100, "wpc-production": 110}
"""Kueue's WorkloadPriorityClasses of the third run: the jobs' own, and the next one above it."""


def test_the_boost_stays_below_the_next_workload_priority_class(plane: LocalControlPlane) -> None:
    """Both jobs of `wpc-research` (100) would lose far more than ten points (their restart alone), and the
    next class above theirs is the WorkloadPriorityClass `wpc-production` (110), far below the next
    PriorityClass (`boost-high`, 1000): each boost is 9, so neither Workload reaches `wpc-production`."""
    if BOOST_ARGS[0] not in plane.extender_args:
        plane.stop_extender()
        plane.extender_args = (*plane.extender_args, *BOOST_ARGS)
        plane.start_extender()
    for name, value in WORKLOAD_CLASSES.items():
        plane.post(
            f"{KUEUE_API}/workloadpriorityclasses",
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": name},
             "value": value},
        )  # fmt: skip
    run = "boost-classes"
    queue_of_four_cpu(plane, run)
    for name in ("cheap", "costly"):
        started(plane, run, name, LOW, "wpc-research")
    cap = WORKLOAD_CLASSES["wpc-production"] - WORKLOAD_CLASSES["wpc-research"] - 1
    wanted = {"cheap": cap, "costly": cap}
    wait_until(f"both boosts written at {cap}", lambda: boosts(plane, run) == wanted, 30)
    time.sleep(3.0)
    assert boosts(plane, run) == wanted, "rewritten every second, never higher"
    for workload in plane.get(f"{KUEUE_API}/namespaces/{run}/workloads")["items"]:
        assert workload["spec"]["priority"] == WORKLOAD_CLASSES["wpc-research"], workload["spec"]
