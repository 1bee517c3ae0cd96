"""End to end with Kueue: Kueue admits a queued TFJob, the extender places it, and the loops leave it alone.

The module starts a control plane of its own with Kueue (`hack/build-kueue.sh`, the `kubeflow.org/tfjob`
integration on, its webhooks called at https://127.0.0.1) and the extender with the preemption loop and the
scaler ticking fast. Three kwok nodes of 4 CPU: two carry `pool=kueue`, the label of the one
ResourceFlavor, the third does not. The extender first learns a heavy-tailed run-time history from
TFJobs that carry their recorded run times, so any suspendable job running for more than a few seconds
is worth suspending for a fresh gang. A suspendable, elastic TFJob queued in a LocalQueue is admitted by
Kueue (which unsuspends it and adds the flavor's node selector), and the extender binds its whole gang
at once, PS beside its workers, on the flavor's nodes. While it runs, its twin outside Kueue (as
suspendable and elastic) is grown by the scaler, then suspended for a fresh 7-pod gang that starts in
its room; the Kueue job, with room to grow and as long a runner, is never suspended, resized or evicted,
and completes normally.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import ApiError, LocalControlPlane
from extender.devcluster.kueue import KUEUE_NAMESPACE
from extender.explain import explain
from extender.policy.core.views import KUEUE_LEFT_ALONE
from extender.state.kueue import QUEUE_NAME_LABEL
from tests.e2e.kueue import KUEUE_API, admitted_by_kueue, kueue_plane
from tests.e2e.waits import stays, wait_until
from tests.e2e.workloads import bind_times, bound, job_pods, not_failed, ps_and_workers_by_node, tfjob
from tests.e2e.workloads import tfjob_object as read_tfjob

pytestmark = pytest.mark.e2e

NAMESPACE = "kueue-e2e"
FLAVOR_LABEL = {"pool": "kueue"}
RUN_TIMES_S = (5.0, 5.0, 5.0, 3000.0)
"""The run times the extender recalls: after 5 s a running job is expected to run on for far longer than a
fresh job runs in all (mean residual life 2995 s against a mean of 754 s)."""
LOOP_ARGS = (
    "--starvation-limit-s",
    "600",
    "--suspension-min-history",
    str(len(RUN_TIMES_S)),
    "--suspension-newcomer-s",
    "0",
    "--with-scaler",
    "--scaler-interval-s",
    "1",
    "--scale-cooldown-s",
    "2",
    "--consolidation-interval-s",
    "2",
)
MAX_EXEC_TIME = "kueue.x-k8s.io/max-exec-time-seconds"
"""A label Kueue's validating webhook checks: it must be a positive number of seconds."""
RUN_FOR = "40s"
"""How long the queued job's pods run before they succeed."""
OBSERVE_S = 15.0
"""How long the running Kueue job is watched for a loop action: seven preemption ticks (2 s) and fifteen
scaler ticks (1 s) past every cooldown, long enough for any of them to have acted."""
ADMIT_TIMEOUT_S = 60.0
BIND_TIMEOUT_S = 90.0
TOGETHER_S = 3.0
"""The most a gang's pods' bind times may spread when the extender binds the gang at once, seconds."""


@pytest.fixture(scope="module")
def plane() -> Iterator[LocalControlPlane]:
    with kueue_plane(LOOP_ARGS) as control_plane:
        yield control_plane


def queues(plane: LocalControlPlane) -> None:
    """A ResourceFlavor of the `pool=kueue` nodes, a ClusterQueue of 8 CPU on it, a LocalQueue in NAMESPACE."""
    plane.post(
        f"{KUEUE_API}/resourceflavors",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "pool"},
         "spec": {"nodeLabels": FLAVOR_LABEL}},
    )  # fmt: skip
    quota = [{"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "64Gi"}]
    plane.post(
        f"{KUEUE_API}/clusterqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "team"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "pool", "resources": quota}]}
                ],
            },
        },
    )
    plane.post(
        f"{KUEUE_API}/namespaces/{NAMESPACE}/localqueues",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "team-a"},
         "spec": {"clusterQueue": "team"}},
    )  # fmt: skip


def recalled_history(plane: LocalControlPlane) -> None:
    """Suspended TFJobs carrying the run times a loop recorded; the extender is restarted to read them."""
    for index, ran in enumerate(RUN_TIMES_S):
        done = tfjob(f"done-{index}", scene=NAMESPACE, ps=0, workers=1)
        done["metadata"]["annotations"]["tfjob-extender.io/run-s"] = f"{ran:.3f}"
        done["spec"]["runPolicy"] = {"suspend": True}
        plane.create_tfjob(NAMESPACE, done)
    plane.stop_extender()
    plane.start_extender()


def webhooks_answer(plane: LocalControlPlane, job: dict[str, Any]) -> None:
    """Kueue's webhooks, called at https://127.0.0.1, answer for TFJobs (in dry runs): the mutating one
    suspends a queued TFJob on creation, the validating one refuses a bad Kueue label."""
    path = f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/tfjobs?dryRun=All"
    assert plane.post(path, job)["spec"]["runPolicy"]["suspend"] is True
    bad = {**job, "metadata": {**job["metadata"], "labels": {**job["metadata"]["labels"], MAX_EXEC_TIME: "0"}}}
    with pytest.raises(ApiError, match=r"vtfjob\.kb\.io"):
        plane.post(path, bad)


def debug_jobs(plane: LocalControlPlane) -> dict[str, Any]:
    with urllib.request.urlopen(f"{plane.observe_url}/debug/jobs", timeout=5) as response:
        body: dict[str, Any] = json.loads(response.read())
    return body


def admitted(plane: LocalControlPlane, name: str) -> dict[str, Any] | None:
    """The TFJob once Kueue admitted it: unsuspended, its templates narrowed to the flavor's nodes."""
    job = admitted_by_kueue(plane, NAMESPACE, name)
    if job is None:
        return None
    selectors = [spec["template"]["spec"].get("nodeSelector") or {} for spec in job["spec"]["tfReplicaSpecs"].values()]
    return job if all(selector.get("pool") == "kueue" for selector in selectors) else None


def untouched(plane: LocalControlPlane, name: str, uids: set[str]) -> bool:
    """Still running as placed: not suspended, its Worker replicas unchanged, the same pods all bound."""
    job = read_tfjob(plane, NAMESPACE, name)
    annotations = job["metadata"].get("annotations") or {}
    assert not (job["spec"].get("runPolicy") or {}).get("suspend"), "suspended"
    assert "tfjob-extender.io/suspended-at" not in annotations, annotations
    assert job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3, "resized"
    pods = job_pods(plane, NAMESPACE, name)
    return {pod["metadata"]["uid"] for pod in bound(pods)} == uids


def succeeded(plane: LocalControlPlane, name: str) -> bool:
    conditions = (read_tfjob(plane, NAMESPACE, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


def test_kueue_admits_the_extender_places_and_the_loops_leave_the_job_to_kueue(plane: LocalControlPlane) -> None:
    plane.create_namespace(NAMESPACE)
    for index in range(3):
        labels = {"e2e-scene": NAMESPACE, **(FLAVOR_LABEL if index < 2 else {})}
        plane.create_node(f"kueue-n{index}", cpu="4", memory="16Gi", labels=labels)
    plane.wait_nodes_ready([f"kueue-n{index}" for index in range(3)])
    flavor_nodes = {"kueue-n0", "kueue-n1"}
    recalled_history(plane)
    queues(plane)

    queued = tfjob("queued", scene=NAMESPACE, workers=3, run_for=RUN_FOR, min_workers=1, max_workers=6, dynamic=True)
    queued["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team-a"}
    queued["metadata"]["annotations"]["tfjob-extender.io/suspendable"] = "true"
    webhooks_answer(plane, queued)
    plane.create_tfjob(NAMESPACE, queued)
    wait_until("Kueue admitted the queued TFJob", lambda: admitted(plane, "queued"), ADMIT_TIMEOUT_S)

    def all_bound() -> list[dict[str, Any]] | None:
        pods = job_pods(plane, NAMESPACE, "queued")
        return pods if len(pods) == 4 and len(bound(pods)) == 4 else None

    pods = wait_until("the queued job's gang bound", all_bound, BIND_TIMEOUT_S)
    nodes = {pod["spec"]["nodeName"] for pod in pods}
    assert nodes <= flavor_nodes, nodes
    ps_nodes, worker_nodes = ps_and_workers_by_node(pods)
    assert all(worker_nodes[node] > 0 for node in ps_nodes), (ps_nodes, worker_nodes)
    times = bind_times(plane, NAMESPACE, pods).values()
    assert max(times) - min(times) <= TOGETHER_S, sorted(times)

    uids = {pod["metadata"]["uid"] for pod in pods}
    stays("the scaler leaves the Kueue job as it is, with room to grow", lambda: untouched(plane, "queued", uids), 5)

    twin = tfjob("twin", scene=NAMESPACE, workers=3, min_workers=1, max_workers=6, dynamic=True)
    twin["metadata"]["annotations"]["tfjob-extender.io/suspendable"] = "true"
    plane.create_tfjob(NAMESPACE, twin)

    def twin_grown() -> bool:
        assert untouched(plane, "queued", uids), "the Kueue job's pods changed"
        return int(read_tfjob(plane, NAMESPACE, "twin")["spec"]["tfReplicaSpecs"]["Worker"]["replicas"]) > 3

    wait_until("the scaler grew the same job outside Kueue", twin_grown, BIND_TIMEOUT_S)
    plane.create_tfjob(NAMESPACE, tfjob("fresh", scene=NAMESPACE, workers=6))

    def fresh_started_in_the_twins_room() -> bool:
        assert untouched(plane, "queued", uids), "the Kueue job's pods changed"
        annotations = read_tfjob(plane, NAMESPACE, "twin")["metadata"].get("annotations") or {}
        return "tfjob-extender.io/suspended-at" in annotations and len(bound(job_pods(plane, NAMESPACE, "fresh"))) == 7

    wait_until(
        "the fresh gang started in the room of the suspended twin", fresh_started_in_the_twins_room, BIND_TIMEOUT_S
    )
    stays("the loops leave the Kueue job running", lambda: untouched(plane, "queued", uids), OBSERVE_S)

    rows = {row["job"]: row for row in debug_jobs(plane)["jobs"]}
    standing = rows[f"{NAMESPACE}/queued"]["standing"]
    assert (standing["admittedBy"], standing["loops"]) == ("Kueue", KUEUE_LEFT_ALONE), standing
    assert "loops" not in rows[f"{NAMESPACE}/fresh"]["standing"]
    answer = explain(f"{NAMESPACE}/queued", plane.observe_url)
    assert KUEUE_LEFT_ALONE in answer.text, answer.text

    wait_until("the Kueue job completed", lambda: succeeded(plane, "queued"), 90)
    assert not_failed(read_tfjob(plane, NAMESPACE, "queued"))
    workloads = plane.get(f"{KUEUE_API}/namespaces/{NAMESPACE}/workloads")["items"]
    assert [w["metadata"]["ownerReferences"][0]["name"] for w in workloads] == ["queued"], "only the queued job"
    assert plane.get(f"/api/v1/namespaces/{KUEUE_NAMESPACE}")
