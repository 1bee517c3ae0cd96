"""The scaler's plan as the extender reads it: where new or migrated workers go, from their TFJob.

The scaler writes each plan on the TFJob (annotation `tfjob-extender.io/worker-plan`, in the same patch
as the replicas), so an extender in any process steers those pods: `filter` steers a planned pod that has
no reservation yet (no race with kube-scheduler after a restart or a migration), and the preemption loop
reserves what is planned and not placed, so other pods do not take the room meanwhile. Pure.
"""

from __future__ import annotations

from extender.policy.core.resources import EMPTY
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.core.views import PodView, Role


def planned_reservation(snapshot: ClusterSnapshot, pod: PodView, now: float) -> Reservation | None:
    """Where a scaler planned `pod` (annotation `tfjob-extender.io/worker-plan` on its TFJob), while the
    plan lives: lets `filter` steer a new or migrated worker even before any loop reserved it."""
    job = snapshot.jobs.get(pod.job) if pod.job else None
    if job is None or not job.worker_plan or job.worker_plan_expires <= now:
        return None
    node = next((node for name, node in job.worker_plan if name == pod.name), None)
    if node is None or node not in snapshot.nodes:
        return None
    return Reservation(pod.key, pod.group or job.key, node, pod.requests, job.worker_plan_expires)


def imported_reservations(snapshot: ClusterSnapshot, now: float) -> list[Reservation]:
    """Reservations for the workers a scaler planned on a TFJob (annotation `tfjob-extender.io/worker-plan`)
    that are not placed yet: how an extender holds room for pods a scaler in another process counted on.

    A planned pod that is bound, terminating, finished or already reserved is skipped (a migrated worker's
    old pod is skipped until it is gone); a lapsed plan, or one naming an unknown node, holds nothing.
    """
    held: list[Reservation] = []
    for job in snapshot.jobs.values():
        if not job.worker_plan or job.worker_plan_expires <= now:
            continue
        pods = [snapshot.pods[key] for key in snapshot.job_members.get(job.key, frozenset()) if key in snapshot.pods]
        group = next((pod.group for pod in pods if pod.group), job.key)
        worker = next((pod for pod in pods if pod.role is Role.WORKER), None)
        requests = worker.requests if worker is not None else job.role_requests.get(Role.WORKER, EMPTY)
        for name, node in job.worker_plan:
            key = f"{job.namespace}/{name}"
            pod = snapshot.pods.get(key)
            if key in snapshot.reservations or node not in snapshot.nodes or requests.is_empty():
                continue
            if pod is not None and (pod.node_name or pod.terminating or pod.finished):
                continue
            held.append(Reservation(key, group, node, requests, job.worker_plan_expires))
    return held


__all__ = ["imported_reservations", "planned_reservation"]
