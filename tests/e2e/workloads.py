"""TFJobs, PodGroups and pods as a user would submit them, and what to read back from the cluster: the pods
of a job (selected by the `JOB` label), which are bound and where, why a pod or gang waits (kube-scheduler's
condition, the extender's /debug/gangs), and the waits the tests share — for a job's pods to exist, for
them to bind, and that a gang's pods never bind during an observation window (through `tests.e2e.waits`)."""

from __future__ import annotations

import json
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
) -> Obj:
    """A PS/worker TFJob whose pods may only use the nodes of `scene`; elastic when `min_workers` is set
    (between `min_workers` and `max_workers`, by default its `workers`)."""
    selector = {"e2e-scene": scene}
    specs = {"Worker": replica(workers, cpu, memory, run_for, selector, priority_class)}
    if ps:
        specs["PS"] = replica(ps, ps_cpu or cpu, memory, run_for, selector, priority_class)
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


def not_failed(job: Obj) -> bool:
    """Whether the TFJob has no `Failed` condition that is True."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return not any(c["type"] == "Failed" and c["status"] == "True" for c in conditions)


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
    url = f"http://127.0.0.1:{plane.extender_port}/debug/gangs/{namespace}/{name}"
    with urllib.request.urlopen(url, timeout=5) as response:
        result: Obj = json.load(response)
        return result


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
