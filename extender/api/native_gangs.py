"""HTTP for the native gangs: `/debug/native-gangs` beside the loops' routes, the summary `/readyz` carries, and
the admission answer the webhook's listener gives.

`/debug/native-gangs` says whether native gangs are given here and why (the setting, what the API server
serves), the webhook's certificate, whether this instance leads, and for every TFJob naming the scheduler who
holds its barrier and why (`loops.native_gangs.barrier_of`: a job created while the webhook was not reached
keeps the extender's own), then the Workloads made and the latest writes. Read-only, on the event loop, in
steps (`extender.api.pacing`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Response

from extender.api.admission import Patch, native_gang_patch, review_reply
from extender.api.pacing import Steps, in_steps
from extender.api.read_routes import json_reply, read_route
from extender.loops.native_gang_loop import NativeGangLoop, NativeGangRecord
from extender.loops.native_gangs import barrier_of
from extender.policy.core.settings import in_managed_namespaces


@dataclass(frozen=True, slots=True)
class NativeGangsView:
    """What the native gangs' routes read: the controller, and the webhook's certificate keeper's status."""

    loop: NativeGangLoop
    certificates: Callable[[], Mapping[str, Any]] | None = None
    """None: no webhook listener in this process."""


def admission_answer(view: NativeGangsView) -> Callable[[bytes], tuple[int, bytes]]:
    """The webhook listener's answer to an AdmissionReview body: a patch only while native gangs are given
    here and the loops act (not in shadow mode)."""
    loop = view.loop

    def patch_for(request: Mapping[str, Any]) -> tuple[Patch, str]:
        status = loop.mode.status()
        if not status.active:
            return [], f"native gangs are not given here: {status.why}"
        if loop.dry_run:
            return [], "shadow mode (--dry-run): nothing is changed"
        namespace = str(request.get("namespace") or "")
        if not in_managed_namespaces(loop.managed_namespaces, namespace):
            return [], f"namespace {namespace} is not one the extender manages"
        return native_gang_patch(request, loop.scheduler_name)

    return lambda body: review_reply(body, patch_for)


def native_gangs_summary(view: NativeGangsView) -> dict[str, Any]:
    """The mode, the webhook's certificate and the controller's standing (also in `/readyz`)."""
    status = view.loop.mode.status()
    summary: dict[str, Any] = {
        "setting": status.setting,
        "active": status.active,
        "why": status.why,
        "barrier": "kube-scheduler for TFJobs the webhook gave a native gang" if status.active else "extender",
        "leading": view.loop.leading,
    }
    if view.certificates is not None:
        summary["webhook"] = dict(view.certificates())
    if view.loop.last_error:
        summary["error"] = view.loop.last_error
    return summary


def make_native_gangs_router(view: NativeGangsView) -> APIRouter:
    router = APIRouter()

    @read_route(router, "/debug/native-gangs")
    async def native_gangs() -> Response:
        return json_reply(await in_steps(native_gangs_steps(view)))

    return router


def native_gangs_steps(view: NativeGangsView) -> Steps[dict[str, Any]]:
    """What `/debug/native-gangs` shows, pausing between jobs and between records."""
    loop = view.loop
    summary = native_gangs_summary(view)
    status = loop.mode.status()
    jobs = []
    for job in loop.state.snapshot().jobs.values():
        if loop.scheduler_name in job.scheduler_names or job.native_gang:
            barrier = barrier_of(job, loop.scheduler_name, status)
            jobs.append(
                {
                    "job": barrier.job,
                    "barrier": barrier.barrier,
                    "podGroup": barrier.pod_group or None,
                    "why": barrier.why,
                }
            )
            yield None
    kept = {
        key: {"jobUid": gang.job_uid, "minCount": gang.min_count} for key, gang in sorted((loop.kept or {}).items())
    }
    yield None
    writes = [render_write(record) for record in tuple(loop.records)]
    return {
        **summary,
        "jobs": sorted(jobs, key=lambda entry: entry["job"]),
        "kept": kept,
        "writes": writes,
        "counts": {f"{kind}/{outcome}": count for (kind, outcome), count in sorted(loop.counts.items())},
    }


def render_write(record: NativeGangRecord) -> dict[str, Any]:
    action = record.action
    rendered: dict[str, Any] = {
        "at": round(record.at, 3),
        "kind": action.kind,
        "gang": action.key,
        "job": action.job,
        "minCount": action.min_count,
        "reason": action.reason,
        "outcome": record.outcome,
    }
    if record.error:
        rendered["error"] = record.error
    return rendered
