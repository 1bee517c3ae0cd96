"""TFJobs, PodGroups (in each dialect, Kubernetes' own Workload API among them), PodDisruptionBudgets and pods
as a user would submit them, and what to read back from the cluster: the pods of a job (selected by the
`JOB` label), which are bound and where, a job's worker count and Events, why a pod or gang waits
(kube-scheduler's condition, the extender's /debug/gangs and /debug/decisions), and the waits the tests
share — for a job's pods to exist, for them to bind, and that a gang's pods never bind during an observation
window (through `tests.e2e.waits`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

from extender.devcluster import COMPLETE_AFTER, SCHEDULER_NAME, LocalControlPlane
from tests.e2e.waits import stays, wait_until

Obj = dict[str, Any]
JOB = "training.kubeflow.org/job-name"
"""The label training-operator puts on a TFJob's pods: `f"{JOB}={name}"` selects the pods of job `name`."""
RUN_LONG = "1h"
"""Pods that should keep running for the whole test."""


def replica(
    count: int, cpu: str, memory: str, run_for: str, node_selector: dict[str, str], priority_class: str = ""
) -> Obj:
    extra = {"priorityClassName": priority_class} if priority_class else {}
    return {
        "replicas": count,
        "restartPolicy": "Never",
        "template": {
            "metadata": {"annotations": {COMPLETE_AFTER: run_for}},
            "spec": {
                **extra,
                "nodeSelector": node_selector,
                "containers": [
                    {
                        "name": "tensorflow",
                        "image": "example.org/tf-train:2.16",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}},
                    }
                ],
            },
        },
    }


def tfjob(
    name: str,
    *,
    scene: str,
    ps: int = 1,
    workers: int = 4,
    cpu: str = "1",
    memory: str = "1Gi",
    ps_cpu: str | None = None,
    run_for: str = RUN_LONG,
    priority_class: str = "",
    min_workers: int | None = None,
    max_workers: int | None = None,
    dynamic: bool = False,
    scheduler_name: str = "",
) -> Obj:
    """A PS/worker TFJob whose pods may only use the nodes of `scene`; elastic when `min_workers` is set
    (between `min_workers` and `max_workers`, by default its `workers`); with `scheduler_name` its replica
    templates name that scheduler (otherwise training-operator's `--gang-scheduler-name` fills it in)."""
    selector = {"e2e-scene": scene}
    specs = {"Worker": replica(workers, cpu, memory, run_for, selector, priority_class)}
    if ps:
        specs["PS"] = replica(ps, ps_cpu or cpu, memory, run_for, selector, priority_class)
    if scheduler_name:
        for spec in specs.values():
            spec["template"]["spec"]["schedulerName"] = scheduler_name
    annotations = {}
    if min_workers is not None:
        annotations = {
            "tfjob-extender.io/min-workers": str(min_workers),
            "tfjob-extender.io/max-workers": str(workers if max_workers is None else max_workers),
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"tfReplicaSpecs": specs, "enableDynamicWorker": dynamic},
    }


def podgroup(name: str, *, min_member: int, legacy: bool = False, gang_group: list[str] | None = None) -> Obj:
    group = "scheduling.sigs.k8s.io" if legacy else "scheduling.x-k8s.io"
    meta: Obj = {"name": name}
    if gang_group:
        meta["annotations"] = {"gang.scheduling.koordinator.sh/groups": json.dumps(gang_group)}
    return {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 60},
    }


def declare_gang(plane: LocalControlPlane, namespace: str, name: str, *, min_count: int) -> None:
    """A Workload `name` with the gang template `training`, and the `scheduling.k8s.io` PodGroup `name` made
    from it (on a control plane started with `workload_api`)."""
    api = plane.workload_api_version
    policy = {"gang": {"minCount": min_count}}
    workload = {
        "apiVersion": api,
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroupTemplates": [{"name": "training", "schedulingPolicy": policy}]},
    }
    if api.endswith("/v1alpha2"):
        reference: Obj = {
            "podGroupTemplateRef": {"workload": {"workloadName": name, "podGroupTemplateName": "training"}}
        }
    else:
        reference = {"workloadRef": {"workloadName": name, "templateName": "training"}}
    group = {
        "apiVersion": api,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": policy, **reference},
    }
    plane.post(f"/apis/{api}/namespaces/{namespace}/workloads", workload)
    plane.post(f"/apis/{api}/namespaces/{namespace}/podgroups", group)


def gang_tfjob(name: str, *, scene: str, pod_group: str, **shape: Any) -> Obj:
    """`tfjob(name, ...)` whose every replica joins the `scheduling.k8s.io` PodGroup `pod_group`."""
    job = tfjob(name, scene=scene, **shape)
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
    return job


def disruption_budget_allowing(plane: LocalControlPlane, namespace: str, job: str, pods: int) -> Obj:
    """A PodDisruptionBudget over the pods of TFJob `job` that allows all `pods` of them to be disrupted,
    with the status the disruption controller would give it once they run (no controller-manager runs
    here, and the Eviction API refuses every eviction under a budget whose status is not observed yet)."""
    base = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    created = plane.post(
        base,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": job},
            "spec": {"maxUnavailable": pods, "selector": {"matchLabels": {JOB: job}}},
        },
    )
    status = {
        "observedGeneration": created["metadata"]["generation"],
        "disruptionsAllowed": pods,
        "currentHealthy": pods,
        "desiredHealthy": 0,
        "expectedPods": pods,
    }
    result: Obj = plane.merge_patch(f"{base}/{job}/status", {"status": status})
    return result


def pod(name: str, *, scene: str, cpu: str = "1", memory: str = "1Gi", labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}, "annotations": {COMPLETE_AFTER: RUN_LONG}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "nodeSelector": {"e2e-scene": scene},
            "containers": [
                {
                    "name": "main",
                    "image": "example.org/app:1",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
        },
    }


def tfjob_object(plane: LocalControlPlane, namespace: str, name: str) -> Obj:
    """The TFJob `namespace/name` as the API server has it."""
    result: Obj = plane.get(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}")
    return result


def crash(plane: LocalControlPlane, namespace: str, pod_name: str) -> None:
    """The pod's container exits 1, as a crashing trainer's would (its status written as a kubelet would)."""
    terminated = {"terminated": {"exitCode": 1, "reason": "Error"}}
    container = {"name": "tensorflow", "ready": False, "restartCount": 0, "image": "", "imageID": ""}
    status = {"phase": "Failed", "containerStatuses": [{**container, "state": terminated}]}
    plane.merge_patch(f"/api/v1/namespaces/{namespace}/pods/{pod_name}/status", {"status": status})


def not_failed(job: Obj) -> bool:
    """Whether the TFJob has no `Failed` condition that is True."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return not any(c["type"] == "Failed" and c["status"] == "True" for c in conditions)


def workers(plane: LocalControlPlane, namespace: str, name: str) -> int:
    """The TFJob's `Worker.replicas`."""
    return int(tfjob_object(plane, namespace, name)["spec"]["tfReplicaSpecs"]["Worker"]["replicas"])


def running_workers(plane: LocalControlPlane, namespace: str, name: str) -> int:
    """The TFJob's workers holding a node and not being deleted."""
    return sum(
        1
        for p in job_pods(plane, namespace, name)
        if p["metadata"]["labels"].get("training.kubeflow.org/replica-type") == "worker"
        and p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
    )


def ps_uid(plane: LocalControlPlane, namespace: str, name: str) -> str:
    """The UID of the TFJob's PS pod (a new UID: the PS was replaced)."""
    (ps,) = [p for p in job_pods(plane, namespace, name) if p["metadata"]["name"] == f"{name}-ps-0"]
    return str(ps["metadata"]["uid"])


def job_events(plane: LocalControlPlane, namespace: str, name: str, reason: str) -> list[str]:
    """The messages of the Events with `reason` on the TFJob `name`."""
    return [
        str(e["message"])
        for e in plane.events(namespace)
        if e["involvedObject"]["kind"] == "TFJob" and e["involvedObject"]["name"] == name and e["reason"] == reason
    ]


def job_pods(plane: LocalControlPlane, namespace: str, job: str) -> list[Obj]:
    return plane.pods(namespace, f"{JOB}={job}")


def bound(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if p["spec"].get("nodeName")]


def placement(pods: list[Obj]) -> dict[str, str]:
    """Pod name → node name, for the bound pods."""
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in bound(pods)}


def ps_and_workers_by_node(pods: list[Obj]) -> tuple[Counter[str], Counter[str]]:
    roles = [
        (p["metadata"]["labels"].get("training.kubeflow.org/replica-type"), p["spec"].get("nodeName"))
        for p in bound(pods)
    ]
    return Counter(n for r, n in roles if r == "ps"), Counter(n for r, n in roles if r == "worker")


def wait_for_pods(plane: LocalControlPlane, namespace: str, job: str, count: int, timeout_s: float = 60) -> list[Obj]:
    """Wait until the job has `count` pods (training-operator creates them asynchronously)."""

    def created() -> list[Obj] | None:
        pods = job_pods(plane, namespace, job)
        return pods if len(pods) >= count else None

    try:
        return wait_until(f"TFJob {job} to have {count} pods", created, timeout_s, interval_s=0.3)
    except TimeoutError as error:
        raise AssertionError(
            f"TFJob {job} has {len(job_pods(plane, namespace, job))} pods, expected {count}"
        ) from error


def wait_bound(plane: LocalControlPlane, namespace: str, selector: str, count: int, timeout_s: float = 90) -> list[Obj]:
    """Wait until `count` pods matching `selector` are bound; return all the pods matching it."""
    pods: list[Obj] = []

    def enough_bound() -> list[Obj] | None:
        nonlocal pods
        pods = plane.pods(namespace, selector)
        return pods if len(bound(pods)) >= count else None

    try:
        return wait_until(f"{count} pods bound for {selector!r}", enough_bound, timeout_s, interval_s=0.3)
    except TimeoutError as error:
        raise AssertionError(
            f"{len(bound(pods))}/{count} pods bound for {selector!r} after {timeout_s:.0f}s; "
            f"extender log:\n{plane.log_tail('extender', 15)}"
        ) from error


def never_bound(plane: LocalControlPlane, namespace: str, selector: str, seconds: float) -> list[Obj]:
    """Poll for `seconds`, failing at once if any pod matching `selector` gets a node; return the pods."""
    pods: list[Obj] = []

    def none_bound() -> bool:
        nonlocal pods
        pods = plane.pods(namespace, selector)
        assert not bound(pods), f"bound early: {placement(pods)}"
        return True

    stays(f"no pod bound for {selector!r}", none_bound, seconds, interval_s=0.25)
    return pods


def debug_gang(plane: LocalControlPlane, namespace: str, name: str) -> Obj:
    """The extender's /debug/gangs view of one gang: its status and why it waits."""
    url = f"{plane.observe_url}/debug/gangs/{namespace}/{name}"
    with urllib.request.urlopen(url, timeout=5) as response:
        result: Obj = json.load(response)
        return result


def filter_summaries(plane: LocalControlPlane, namespace: str, pods: list[Obj]) -> dict[str, list[str]]:
    """Pod name → the summaries of the extender's recent filter decisions on it (for failure messages; an
    observe listener that wants a token says so instead)."""
    summaries = {}
    for item in pods:
        name = item["metadata"]["name"]
        url = f"{plane.observe_url}/debug/decisions?pod={namespace}/{name}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                decisions = json.load(response)["decisions"]
        except urllib.error.HTTPError as error:
            summaries[name] = [f"/debug/decisions: HTTP {error.code}"]
            continue
        summaries[name] = [d.get("summary", "") for d in decisions if d.get("verb") == "filter"]
    return summaries


def scheduled_reason(pod_obj: Obj) -> str:
    """The message of the pod's PodScheduled=False condition (why kube-scheduler could not place it)."""
    for condition in (pod_obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return str(condition.get("message", ""))
    return ""


def bind_times(plane: LocalControlPlane, namespace: str, pods: list[Obj]) -> dict[str, float]:
    """Pod name → when its PodScheduled condition turned True (seconds since the epoch)."""
    from extender.state.convert import timestamp

    times = {}
    for item in pods:
        for condition in (item.get("status") or {}).get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition["status"] == "True":
                times[item["metadata"]["name"]] = timestamp(condition["lastTransitionTime"])
    return times


def low_priority_batch_filling(plane: LocalControlPlane, namespace: str) -> None:
    """PriorityClasses `{namespace}-low` (10) and `{namespace}-high` (1000), and the TFJob `batch` (PS and 11
    workers of 1 CPU, low priority) bound: three 4-CPU nodes full, so a high-priority gang can start only by
    preempting it."""
    for name, value in ((f"{namespace}-low", 10), (f"{namespace}-high", 1000)):
        plane.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value},
        )
    plane.create_tfjob(namespace, tfjob("batch", scene=namespace, workers=11, priority_class=f"{namespace}-low"))
    wait_bound(plane, namespace, f"{JOB}=batch", 12)
