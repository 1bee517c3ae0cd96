"""The native gangs' decisions: which Workloads and PodGroups to make, resize and delete, and who holds each
TFJob's barrier."""

from __future__ import annotations

from dataclasses import replace

from extender.loops.native_gangs import (
    JobBarrier,
    KeptGang,
    NativeGangAction,
    NativeModeStatus,
    barrier_of,
    plan_native_gangs,
)
from extender.policy.core.views import JobView, Role

SCHEDULER = "tfjob-scheduler"
ACTIVE = NativeModeStatus("auto", True, "served")


def job(name: str = "mnist", *, uid: str = "u1", ps: int = 1, workers: int = 4, **fields: object) -> JobView:
    """A TFJob the webhook gave a native gang named after it."""
    defaults: dict[str, object] = {
        "scheduler_names": (SCHEDULER,),
        "scheduling_group": name,
        "native_gang": name,
    }
    return JobView(
        namespace="team",
        name=name,
        uid=uid,
        replicas={Role.PS: ps, Role.WORKER: workers},
        **(defaults | fields),  # type: ignore[arg-type]
    )


def jobs(*views: JobView) -> dict[str, JobView]:
    return {view.key: view for view in views}


def kept(name: str = "mnist", *, uid: str = "u1", min_count: int = 5) -> dict[str, KeptGang]:
    return {f"team/{name}": KeptGang("team", name, uid, min_count)}


def kinds(actions: list[NativeGangAction]) -> list[tuple[str, str, int]]:
    return [(action.kind, action.key, action.min_count) for action in actions]


def test_a_new_job_gets_its_workload_and_podgroup_with_every_pod_in_the_gang() -> None:
    actions = plan_native_gangs(jobs(job()), {}, {}, SCHEDULER)
    assert kinds(actions) == [("create", "team/mnist", 5)]
    (action,) = actions
    assert (action.job, action.job_uid) == ("team/mnist", "u1")


def test_the_gang_takes_the_priority_class_its_job_names() -> None:
    (action,) = plan_native_gangs(jobs(job(priority_class="high")), {}, {}, SCHEDULER)
    assert action.priority_class == "high"
    (resize,) = plan_native_gangs(jobs(job(priority_class="high")), kept(min_count=3), {"team/mnist": 3}, SCHEDULER)
    assert (resize.kind, resize.priority_class) == ("resize", "high")


def test_a_gang_in_step_with_its_job_needs_nothing() -> None:
    assert plan_native_gangs(jobs(job()), kept(), {"team/mnist": 5}, SCHEDULER) == []


def test_a_workload_without_its_podgroup_is_made_again() -> None:
    assert kinds(plan_native_gangs(jobs(job()), kept(), {}, SCHEDULER)) == [("create", "team/mnist", 5)]


def test_scaled_workers_resize_the_gang_to_the_pods_the_job_has_now() -> None:
    grown = job(workers=6)
    assert kinds(plan_native_gangs(jobs(grown), kept(), {"team/mnist": 5}, SCHEDULER)) == [("resize", "team/mnist", 7)]
    shrunk = job(workers=2)
    assert kinds(plan_native_gangs(jobs(shrunk), kept(), {"team/mnist": 5}, SCHEDULER)) == [("resize", "team/mnist", 3)]


def test_a_workload_written_with_another_count_is_resized_even_when_the_podgroup_agrees() -> None:
    assert kinds(plan_native_gangs(jobs(job()), kept(min_count=9), {"team/mnist": 5}, SCHEDULER)) == [
        ("resize", "team/mnist", 5)
    ]


def test_a_finished_failed_or_suspended_job_loses_its_gang() -> None:
    ended_jobs = (
        ("succeeded", replace(job(), succeeded=True)),
        ("failed", replace(job(), failed=True)),
        ("suspended", replace(job(), suspended=True)),
    )
    for word, ended in ended_jobs:
        actions = plan_native_gangs(jobs(ended), kept(), {"team/mnist": 5}, SCHEDULER)
        assert kinds(actions) == [("delete", "team/mnist", 0)], word
        assert word in actions[0].reason


def test_a_deleted_job_loses_its_gang() -> None:
    (action,) = plan_native_gangs({}, kept(), {"team/mnist": 5}, SCHEDULER)
    assert (action.kind, action.key, action.job_uid) == ("delete", "team/mnist", "u1")
    assert "gone" in action.reason


def test_a_job_created_again_under_the_same_name_gets_a_new_gang_once_the_old_one_is_deleted() -> None:
    again = job(uid="u2")
    actions = plan_native_gangs(jobs(again), kept(uid="u1"), {"team/mnist": 5}, SCHEDULER)
    assert kinds(actions) == [("delete", "team/mnist", 0)]
    assert "replaced" in actions[0].reason
    assert kinds(plan_native_gangs(jobs(again), {}, {}, SCHEDULER)) == [("create", "team/mnist", 5)]


def test_jobs_without_a_native_gang_from_the_webhook_are_left_alone() -> None:
    created_while_the_webhook_was_down = job(scheduling_group="", native_gang="")
    declared_by_their_owner = job("wide", native_gang="")
    of_another_scheduler = job("other", scheduler_names=("default-scheduler",))
    no_replicas = job("empty", ps=0, workers=0)
    views = jobs(created_while_the_webhook_was_down, declared_by_their_owner, of_another_scheduler, no_replicas)
    assert plan_native_gangs(views, {}, {}, SCHEDULER) == []


def test_a_job_whose_templates_no_longer_name_its_gang_loses_it() -> None:
    changed = job(scheduling_group="")
    (action,) = plan_native_gangs(jobs(changed), kept(), {"team/mnist": 5}, SCHEDULER)
    assert action.kind == "delete" and "no longer names it" in action.reason


def test_deletions_come_before_creations() -> None:
    actions = plan_native_gangs(jobs(job("new", uid="n")), kept("old", uid="o"), {}, SCHEDULER)
    assert kinds(actions) == [("delete", "team/old", 0), ("create", "team/new", 5)]


def test_who_holds_each_barrier_and_why() -> None:
    native = barrier_of(job(), SCHEDULER, ACTIVE)
    assert (native.barrier, native.pod_group) == ("kube-scheduler", "mnist")
    declared = barrier_of(job(native_gang=""), SCHEDULER, ACTIVE)
    assert declared.barrier == "kube-scheduler" and "its owner declared" in declared.why
    missed = barrier_of(job(scheduling_group="", native_gang=""), SCHEDULER, ACTIVE)
    assert missed == JobBarrier("team/mnist", "extender", missed.why)
    assert "webhook was not reached" in missed.why and "immutable" in missed.why
    off = barrier_of(job(scheduling_group="", native_gang=""), SCHEDULER, NativeModeStatus("on", False, "1.36"))
    assert off.barrier == "extender" and off.why.endswith("1.36")
