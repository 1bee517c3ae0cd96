"""The end-to-end scenarios more than one form of the extender runs through: the shared control plane (the
extender and kube-scheduler as local processes with the administrator's credentials) and the chart's
installed form (`test_installed.py`: every process as rendered, under its own ServiceAccount). Each scenario
takes a `LocalControlPlane` and a `Scene` (the test's namespace and nodes), drives TFJobs through
training-operator and asserts what the extender must do; what differs between the forms — which process to
restart, where a debug view is read — the caller passes in or checks itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extender.devcluster import LocalControlPlane
from extender.state.gang_annotations import CHECKPOINT_INTERVAL_ANNOTATION
from tests.e2e.conftest import Scene
from tests.e2e.waits import OBSERVE_S, stays, wait_until
from tests.e2e.workloads import (
    JOB,
    bound,
    declare_gang,
    filter_summaries,
    gang_tfjob,
    job_events,
    job_pods,
    low_priority_batch_filling,
    not_failed,
    placement,
    pod,
    podgroup,
    ps_and_workers_by_node,
    ps_uid,
    running_workers,
    tfjob,
    tfjob_object,
    wait_bound,
    workers,
)

SUSPENDABLE = "tfjob-extender.io/suspendable"
RUN_TIME = "tfjob-extender.io/run-s"
BATCH_PODS = 12
"""The low-priority TFJob `batch` that fills three 4-CPU nodes: a PS and 11 workers of 1 CPU."""


def placed(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods holding a node and not being deleted."""
    return [p for p in pods if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]


def wide_job_takes_the_fewest_nodes_with_its_ps_beside_its_workers(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(3)
    # 1 PS + 4 workers of 1 CPU = 5 CPU; a node has 4: two nodes, the PS with three workers
    plane.create_tfjob(scene.namespace, tfjob("wide", scene=scene.namespace, ps=1, workers=4, cpu="1"))
    pods = wait_bound(plane, scene.namespace, f"{JOB}=wide", 5)
    ps, on_nodes = ps_and_workers_by_node(pods)
    assert len(set(placement(pods).values())) == 2, placement(pods)
    (ps_node,) = ps
    assert on_nodes[ps_node] == 3, placement(pods)


EVERY_DIALECT = {
    "upstream": f"{JOB}=upstream",
    "classic": f"{JOB}=classic",
    "koord": "pod-group.scheduling.sigs.k8s.io=koord",
}
"""The gangs of `submit_gangs_of_every_dialect` → the selector of their pods."""


def gangs_of_every_dialect_start_whole(plane: LocalControlPlane, scene: Scene) -> None:
    submit_gangs_of_every_dialect(plane, scene)
    gangs_of_every_dialect_started_whole(plane, scene)


def submit_gangs_of_every_dialect(plane: LocalControlPlane, scene: Scene) -> None:
    """A gang in each PodGroup dialect at once, on three 4-CPU nodes of a control plane serving Kubernetes'
    own gang API: a TFJob `upstream` in a `scheduling.k8s.io` PodGroup, a TFJob `classic` whose PodGroup
    training-operator makes (`scheduling.x-k8s.io`), and three plain pods of a Koordinator
    (`scheduling.sigs.k8s.io`) PodGroup `koord`."""
    namespace = scene.namespace
    scene.add_nodes(3)
    declare_gang(plane, namespace, "upstream", min_count=4)
    plane.create_tfjob(namespace, gang_tfjob("upstream", scene=namespace, pod_group="upstream", workers=3))
    plane.create_tfjob(namespace, tfjob("classic", scene=namespace, workers=3))
    plane.create_podgroup(namespace, podgroup("koord", min_member=3, legacy=True))
    label = {"pod-group.scheduling.sigs.k8s.io": "koord"}
    for index in range(3):
        plane.create_pod(namespace, pod(f"koord-{index}", scene=namespace, labels=label))


def every_dialect_podgroup_paths(plane: LocalControlPlane, namespace: str) -> dict[str, str]:
    """The gangs of `submit_gangs_of_every_dialect` → the API path of their PodGroup."""
    return {
        "upstream": f"/apis/{plane.workload_api_version}/namespaces/{namespace}/podgroups/upstream",
        "classic": f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/classic",
        "koord": f"/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/{namespace}/podgroups/koord",
    }


def gangs_of_every_dialect_started_whole(plane: LocalControlPlane, scene: Scene) -> dict[str, dict[str, str]]:
    """After `submit_gangs_of_every_dialect`: every gang binds whole, each TFJob on one node; returns gang →
    its placement (pod name → node)."""
    namespace, placements = scene.namespace, {}
    for gang, selector in EVERY_DIALECT.items():
        size = 3 if gang == "koord" else 4
        pods = wait_bound(plane, namespace, selector, size)
        placements[gang] = placement(pods)
        if gang != "koord":
            assert len(set(placement(pods).values())) == 1, (
                gang,
                placement(pods),
                filter_summaries(plane, namespace, pods),
            )
    assert len(placements["koord"]) == 3
    return placements


def fill_with_a_low_priority_batch(plane: LocalControlPlane, scene: Scene) -> None:
    """Three 4-CPU nodes, full with the low-priority TFJob `batch` (see `low_priority_batch_filling`)."""
    scene.add_nodes(3)
    low_priority_batch_filling(plane, scene.namespace)


def preempt_the_batch_whole_for_a_higher_priority_gang(plane: LocalControlPlane, scene: Scene) -> None:
    """After `fill_with_a_low_priority_batch`: a high-priority gang arrives and binds; the batch gang is
    evicted whole, and none of its recreated pods runs alone."""
    ns = scene.namespace
    plane.create_tfjob(ns, tfjob("urgent", scene=ns, workers=3, priority_class=f"{ns}-high"))
    wait_bound(plane, ns, f"{JOB}=urgent", 4, timeout_s=120)
    still_placed: list[str] = []

    def evicted_whole() -> bool:
        still_placed[:] = [
            f"{p['metadata']['name']} on {p['spec']['nodeName']}" for p in placed(job_pods(plane, ns, "batch"))
        ]
        return not still_placed

    try:
        wait_until("the victim gang evicted whole", evicted_whole, 30, interval_s=0.3)
    except TimeoutError as error:
        raise AssertionError(f"{error}; batch pods still placed: {still_placed}") from error
    # training-operator recreates the evicted pods; with 8 CPU free the 12-pod gang must wait whole
    stays("no pod of the evicted gang runs alone", lambda: not placed(job_pods(plane, ns, "batch")), OBSERVE_S)


def succeeded(plane: LocalControlPlane, namespace: str, name: str) -> bool:
    conditions = (tfjob_object(plane, namespace, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions)


def suspended_then_resumed_waiting(plane: LocalControlPlane, namespace: str, name: str, pods: int) -> dict[str, str]:
    """Wait until the loop has suspended and resumed the TFJob `name` and its `pods` pods are back; check
    they stay pending while the gang it was suspended for runs and the job is never Failed; return its
    annotations."""

    def resumed() -> dict[str, Any] | None:
        job = tfjob_object(plane, namespace, name)
        annotations = job["metadata"].get("annotations") or {}
        suspended = (job["spec"].get("runPolicy") or {}).get("suspend")
        return job if "tfjob-extender.io/resumed-at" in annotations and not suspended else None

    job = wait_until(f"{name} suspended and resumed", resumed, 60, interval_s=0.5)
    wait_until(f"{name}'s pods recreated", lambda: len(job_pods(plane, namespace, name)) == pods, 60)
    stays(
        f"the resumed {name} waits while the gang it was suspended for runs",
        lambda: not bound(job_pods(plane, namespace, name)),
        OBSERVE_S,
    )
    final = tfjob_object(plane, namespace, name)
    assert not_failed(final), final.get("status")
    annotations: dict[str, str] = job["metadata"]["annotations"]
    return annotations


def suspend_a_long_runner_for_a_fresh_gang(
    plane: LocalControlPlane, scene: Scene, restart_deciders: Callable[[], None]
) -> None:
    """Needs the preemption loop run with a suspension history of 5 jobs, no newcomer suspension and a
    restart that costs nothing, never waiting for a checkpoint (`suspension_min_history` 5,
    `suspension_newcomer_s` 0, `restart_cost_s` 0, `max_checkpoint_wait_s` 0: these jobs run seconds, where
    a restart of minutes would never pay). Five jobs finish first, one of them six times
    later than the others, and their run times are recorded on their TFJobs; `restart_deciders` restarts the
    processes running the loop, so what it knows of them it has read back from the cluster. Then a
    suspendable job starts and a fresh gang arrives that only fits without it: the runner is suspended
    through `spec.runPolicy.suspend`, resumed once its pods are gone, and waits, never failed."""
    scene.add_nodes(3)
    ns = scene.namespace
    finished = [(f"short-{i}", "5s") for i in range(4)] + [("medium", "30s")]
    for name, run_for in finished:
        plane.create_tfjob(ns, tfjob(name, scene=ns, ps=0, workers=1, run_for=run_for))
    wait_until("the first jobs succeeded", lambda: all(succeeded(plane, ns, n) for n, _ in finished), 90)

    def recorded() -> dict[str, float] | None:
        annotations = {n: tfjob_object(plane, ns, n)["metadata"].get("annotations") or {} for n, _ in finished}
        times = {n: float(a[RUN_TIME]) for n, a in annotations.items() if RUN_TIME in a}
        return times if len(times) == len(finished) else None

    times = wait_until("the run times recorded on the TFJobs", recorded, 30)
    assert times["medium"] > max(times[f"short-{i}"] for i in range(4)), times
    restart_deciders()
    runner = tfjob("runner", scene=ns, workers=3)
    runner["metadata"]["annotations"][SUSPENDABLE] = "true"
    runner["metadata"]["annotations"][CHECKPOINT_INTERVAL_ANNOTATION] = "1"
    plane.create_tfjob(ns, runner)
    wait_bound(plane, ns, f"{JOB}=runner", 4)
    # 1 PS + 8 workers: 9 of the 12 CPU, and the runner holds 4
    plane.create_tfjob(ns, tfjob("fresh", scene=ns, workers=8))
    wait_bound(plane, ns, f"{JOB}=fresh", 9, timeout_s=120)

    annotations = suspended_then_resumed_waiting(plane, ns, "runner", 4)
    assert float(annotations["tfjob-extender.io/attained-s"]) > 0, annotations
    assert float(annotations["tfjob-extender.io/suspended-at"]) <= float(annotations["tfjob-extender.io/resumed-at"])


def grow_an_elastic_job_as_capacity_frees(plane: LocalControlPlane, scene: Scene) -> tuple[str, list[str]]:
    """Needs the scaler with a short cooldown (a few seconds). Two 4-CPU nodes: `blocker` (PS + 3 workers,
    done after 8 s) and `elastic` (PS + 2 workers, may grow to 7): the scaler grows `elastic` into the idle
    room to its maximum, in steps it reports as `ScaledOut` Events. Returns the elastic job's PS UID and
    those Events' messages."""
    scene.add_nodes(2)
    ns = scene.namespace
    plane.create_tfjob(ns, tfjob("blocker", scene=ns, workers=3, run_for="8s"))
    wait_bound(plane, ns, f"{JOB}=blocker", 4)
    plane.create_tfjob(ns, tfjob("elastic", scene=ns, workers=2, min_workers=1, max_workers=7, dynamic=True))
    wait_bound(plane, ns, f"{JOB}=elastic", 3)
    ps = ps_uid(plane, ns, "elastic")
    wait_until("the elastic job at its maximum", lambda: running_workers(plane, ns, "elastic") == 7, 60)
    assert workers(plane, ns, "elastic") == 7
    grown = job_events(plane, ns, "elastic", "ScaledOut")
    assert len(grown) >= 2, grown
    assert all("idle capacity" in message for message in grown)
    return ps, grown
