"""Gangs the extender holds nothing for: leftovers of finished jobs, and gangs that need DRA devices.

training-operator (and Trainer) leave PodGroups behind: of a TFJob that succeeded, failed or is suspended,
or of one deleted while its PodGroup outlived it. Such a PodGroup — or any pod still pending in it — is a
*leftover*: its gang gets no rank in the queue, no plan, no reserved room, no preemption, and it is never
a higher-ranked gang another one must yield to. A TFJob that is gone is only believed gone once every
TFJob has been listed (`ClusterSnapshot.jobs_synced`); until then a missing one may still arrive.

A pod with `spec.resourceClaims` needs devices that kube-scheduler's DRA plugin allocates from
ResourceSlices the extender does not watch: whatever the extender planned for it could be wrong. A gang
with such a member is *left to DRA*: `filter` passes its nodes through, `prioritize` has no preference,
and the gang is neither ranked nor planned by the extender.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView, JobView, PodView

LEFT_TO_DRA = "left to kube-scheduler's DRA plugin: a member has resource claims on devices the extender cannot see"
"""What `filter`, `prioritize`, `/debug/gangs` and `explain` say of a gang with resource claims."""


def job_finished_reason(job: JobView) -> str:
    """Why a TFJob's gang holds nothing any more (it succeeded, failed or is suspended), or ""."""
    if job.succeeded:
        return f"its TFJob {job.key} succeeded"
    if job.failed:
        return f"its TFJob {job.key} failed"
    if job.suspended:
        return f"its TFJob {job.key} is suspended"
    return ""


def group_left_over(
    group: GroupView | None, jobs: Mapping[str, JobView] | CowMap[str, JobView], jobs_synced: bool
) -> str:
    """Why a PodGroup is left over by its owner TFJob (gone, succeeded, failed, suspended), or ""."""
    if group is None or not group.owner_job:
        return ""
    job = jobs.get(group.owner_job)
    if job is None:
        return f"its TFJob {group.owner_job} is gone" if jobs_synced else ""
    return job_finished_reason(job)


def leftover_reason(
    snapshot: ClusterSnapshot, gang: str, groups: Sequence[GroupView], members: Iterable[PodView]
) -> str:
    """Why the gang is a leftover that must hold nothing, or "" when it is a live gang."""
    for group in groups:
        why = group_left_over(group, snapshot.jobs, snapshot.jobs_synced)
        if why:
            return f"gang {gang} is left over ({why}): it holds no room and blocks no gang"
    for job_key in sorted({pod.job for pod in members if pod.job}):
        job = snapshot.jobs.get(job_key)
        why = job_finished_reason(job) if job is not None else ""
        if why:
            return f"gang {gang} is left over ({why}): it holds no room and blocks no gang"
    return ""


def needs_dra(members: Iterable[PodView]) -> bool:
    """Some member has resource claims (`PodView.resource_claims`)."""
    return any(pod.resource_claims for pod in members)


def gang_needs_dra(snapshot: ClusterSnapshot, group: str) -> bool:
    """Some pod of `group`'s gang (every PodGroup of its GangGroup) has resource claims."""
    view = snapshot.groups.get(group)
    groups = view.gang_group if view is not None and view.gang_group else (group,)
    return needs_dra(
        pod
        for each in groups
        for key in snapshot.group_members.get(each, frozenset())
        if (pod := snapshot.pods.get(key)) is not None
    )
