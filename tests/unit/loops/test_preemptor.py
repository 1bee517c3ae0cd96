"""The preemption loop on a model: what it asks the actuator to do, what it reserves, what it reports."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from extender.k8s.client import ApiCallError
from extender.loops.actuator import EvictionRefused, RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import GroupView, PodView
from extender.policy.preemption import choice, victims
from extender.policy.rank.jobstates import JobState, job_states
from extender.policy.rank.standing import Standing, WaitKind, explain_gang
from extender.policy.verbs.filtering import filter_pod
from extender.state.gang_annotations import GANG_PLAN_ANNOTATION, PREEMPTION_ANNOTATION
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import (
    bound_job,
    cluster,
    cpu_nodes,
    make_node,
    make_pod,
    make_podgroup,
    running_gang,
    waiting_job,
)

NOW = 1_800_000_000.0
NAMES = ["node-0", "node-1", "node-2"]


SETTINGS = PolicySettings()


def loop_over(*objects: dict[str, object]) -> tuple[PreemptionLoop, RecordingActuator]:
    actuator = RecordingActuator()
    return PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW), actuator


def test_an_elastic_job_is_scaled_in_and_the_freed_room_reserved_for_the_whole_gang() -> None:
    loop, actuator = loop_over(
        *cpu_nodes(3), *running_gang("light", workers=11, nodes=NAMES, min_workers=3), *waiting_job("heavy", pods=4)
    )
    plan = loop.tick(NOW)
    assert plan is not None
    assert [(job, replicas) for job, replicas, _ in actuator.scaled] == [("default/light", 7)]
    assert actuator.evicted == [], "surplus workers are removed by lowering replicas, never evicted"
    snapshot = loop.state.snapshot()
    assert {r.pod for r in snapshot.reservations.values()} == {f"default/heavy-worker-{i}" for i in range(4)}
    assert snapshot.preemptions["default/heavy"].scaled_in == ("default/light",)
    assert ("TFJob", "default/light", "ScaledIn", plan.reason) in actuator.events


def test_a_non_elastic_gang_is_evicted_whole_once() -> None:
    loop, actuator = loop_over(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    assert loop.tick(NOW) is not None
    assert len(actuator.evicted) == 12
    assert {key for key, _ in actuator.evicted} == {
        "default/batch-ps-0",
        *(f"default/batch-worker-{i}" for i in range(11)),
    }
    assert loop.tick(NOW + 2) is None, "no second preemption while the first one's victims terminate"
    assert len(actuator.evicted) == 12


def test_job_states_and_their_events() -> None:
    loop, actuator = loop_over(
        *cpu_nodes(3), *running_gang("light", workers=11, nodes=NAMES, min_workers=3), *waiting_job("heavy", pods=4)
    )
    loop.tick(NOW)
    statuses = {status.job: status for status in job_states(loop.state.snapshot(), NOW, SETTINGS)}
    assert {job: status.state for job, status in statuses.items()} == {
        "default/light": JobState.PREEMPTED,
        "default/heavy": JobState.WAITING,
    }
    assert (statuses["default/light"].placed, statuses["default/heavy"].placed) == (True, False), (
        "scaled in, the light job trains on fewer workers"
    )
    reported = {(key, reason) for kind, key, reason, _ in actuator.events if kind == "TFJob"}
    assert ("default/light", "Preempted") in reported
    assert ("default/heavy", "Waiting") in reported


def test_a_gang_that_fits_has_its_plan_reserved_and_published_ahead_of_its_pods() -> None:
    published: list[LedgerChange] = []
    loop = PreemptionLoop(
        cluster(*cpu_nodes(3), *waiting_job("small", pods=2)),
        actuator := RecordingActuator(),
        SETTINGS,
        lambda: NOW,
        publish=lambda change, snapshot: published.append(change),
    )
    assert loop.tick(NOW) is None, "no preemption"
    assert actuator.scaled == [] and actuator.evicted == []
    held = {r.pod for r in loop.state.snapshot().reservations.values()}
    assert held == {"default/small-worker-0", "default/small-worker-1"}
    assert [{r.pod for r in change.reserve} for change in published] == [held]
    assert loop.tick(NOW + 2) is None and len(published) == 1, "a reserved gang is not planned again"


def test_gangs_that_fit_are_reserved_in_rank_order_a_bounded_number_per_tick() -> None:
    jobs = [waiting_job(f"job-{i}", pods=1, priority=100 + i) for i in range(5)]
    knobs = PreemptionLoopSettings(max_admissions_per_tick=2)
    loop = PreemptionLoop(
        cluster(*cpu_nodes(1), *(obj for job in jobs for obj in job)), RecordingActuator(), SETTINGS, lambda: NOW, knobs
    )
    loop.tick(NOW)
    held = {r.group for r in loop.state.snapshot().reservations.values()}
    assert held == {"default/job-4", "default/job-3"}, "highest PriorityClass first, two a tick"
    loop.tick(NOW + 2)
    held = {r.group for r in loop.state.snapshot().reservations.values()}
    assert held == {"default/job-4", "default/job-3", "default/job-2", "default/job-1"}, "no room for the last"


def test_a_gang_that_fits_is_reserved_before_higher_ranked_gangs_that_need_room_are_searched() -> None:
    # three high-priority gangs need more than the running vip job (no victim) leaves; the small one fits
    bigger = [waiting_job(f"big-{i}", pods=4, priority=500) for i in range(3)]
    loop, actuator = loop_over(
        *cpu_nodes(2),
        *running_gang("vip", workers=5, nodes=["node-0", "node-1"], priority=1000, dynamic=False),
        *(obj for job in bigger for obj in job),
        *waiting_job("small", pods=1, created="2027-01-15T07:59:00Z"),
    )
    assert loop.tick(NOW) is None
    assert {r.group for r in loop.state.snapshot().reservations.values()} == {"default/small"}
    assert actuator.evicted == [] and actuator.scaled == []


def test_gangs_larger_than_all_free_room_do_not_use_up_the_checks_of_a_tick() -> None:
    # 2 CPU free in all: the three 4-pod gangs cannot start whatever the plan, so the one check a tick
    # allows goes to the small gang below them, as long as the walk reaches it
    bigger = [waiting_job(f"big-{i}", pods=4, priority=500) for i in range(3)]
    objects = (
        *cpu_nodes(2),
        *running_gang("vip", workers=5, nodes=["node-0", "node-1"], priority=1000, dynamic=False),
        *(obj for job in bigger for obj in job),
        *waiting_job("small", pods=1, created="2027-01-15T07:59:00Z"),
    )
    for walked, admitted in ((3, set()), (4, {"default/small"})):
        knobs = PreemptionLoopSettings(max_gangs_checked_per_tick=1, max_gangs_walked_per_tick=walked)
        loop = PreemptionLoop(cluster(*objects), RecordingActuator(), SETTINGS, lambda: NOW, knobs)
        loop.tick(NOW)
        assert {r.group for r in loop.state.snapshot().reservations.values()} == admitted, walked


def test_room_a_preemption_frees_beyond_its_gang_goes_to_the_next_gang_in_the_same_tick() -> None:
    # The victims leave at once (as when their pods are gone before the tick ends): the 12 CPU the evicted
    # batch gang frees hold the urgent gang (4) and leave room for the next one (4), reserved at once.
    class Deleting(RecordingActuator):
        def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
            super().evict(pod, reason, dry_run=dry_run)
            if not dry_run:
                namespace, name = pod.key.split("/")
                state.apply(Kind.POD, "DELETED", {"metadata": {"namespace": namespace, "name": name}})

    state = cluster(
        *cpu_nodes(3),
        *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
        *waiting_job("urgent", pods=4, priority=1000),
        *waiting_job("next", pods=4, priority=900),
    )
    loop = PreemptionLoop(state, Deleting(), SETTINGS, lambda: NOW)
    plan = loop.tick(NOW)
    assert plan is not None and plan.gang == "default/urgent"
    held = {r.group for r in state.snapshot().reservations.values()}
    assert held == {"default/urgent", "default/next"}


def test_a_gang_that_fits_only_in_room_held_for_a_starving_gang_is_not_reserved() -> None:
    # With blocking holds: node-0 runs a job no preemption may touch (2 of 4 CPU); the starving gang needs the
    # node once it clears, so the 2 CPU free now are held for it and the fresh small gang that fits them yields.
    actuator = RecordingActuator()
    objects = (
        *cpu_nodes(1),
        *running_gang("vip", workers=1, nodes=["node-0"], priority=1000, dynamic=False),
        *waiting_job("big", pods=4),
        *waiting_job("small", pods=2, created="2027-01-15T07:59:00Z"),
    )
    holding = replace(SETTINGS, starving_reservations=1, starving_hold="block")
    loop = PreemptionLoop(cluster(*objects), actuator, holding, lambda: NOW)
    assert loop.tick(NOW) is None
    assert loop.state.snapshot().reservations == {}
    assert actuator.evicted == [] and actuator.scaled == []


def test_in_shadow_mode_a_gang_that_fits_is_not_reserved() -> None:
    actuator = RecordingActuator()
    objects = (*cpu_nodes(3), *waiting_job("small", pods=2))
    loop = PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW, dry_run=True)
    assert loop.tick(NOW) is None
    assert loop.state.snapshot().reservations == {}


def test_a_refused_gang_is_not_searched_again_until_the_model_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # a high-priority gang that only a higher-priority job could make room for: every search is refused
    loop, actuator = loop_over(
        *cpu_nodes(3),
        *running_gang("vip", workers=11, nodes=NAMES, priority=1000, dynamic=False),
        *waiting_job("urgent", pods=4),
    )
    searches: list[str] = []
    real = victims.plan_preemption

    def counted(*args: Any, **kwargs: Any) -> Any:
        searches.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(choice, "plan_preemption", counted)  # the chooser's own reference
    assert loop.tick(NOW) is None
    assert loop.tick(NOW + 2) is None
    assert searches == ["default/urgent"], "the same model and weight give the same refusal"
    loop.state.apply(Kind.NODE, "ADDED", make_node("node-3", cpu="1", memory="64Gi"))
    assert loop.tick(NOW + 4) is None
    assert searches == ["default/urgent", "default/urgent"], "a changed model is searched again"
    assert actuator.evicted == [] and actuator.scaled == []


def half_placed(name: str, *, cpu: str, bound_at: str) -> list[dict[str, object]]:
    """A gang of 4 workers (minMember 4): two bound on node-0 since `bound_at`, two pending."""
    members = []
    for index in range(4):
        node = "node-0" if index < 2 else ""
        pod = make_pod(
            f"{name}-worker-{index}",
            job=name,
            role="worker",
            index=index,
            group=name,
            cpu=cpu,
            node=node,
            phase="Running" if node else "Pending",
        )
        if node:
            condition = {"type": "PodScheduled", "status": "True", "lastTransitionTime": bound_at}
            pod["status"]["conditions"] = [condition]
        members.append(pod)
    return [*members, make_podgroup(name, min_member=4)]


LONG_AGO = "2026-03-01T10:00:00Z"


def test_a_gang_left_half_placed_is_completed_when_it_fits() -> None:
    loop, actuator = loop_over(
        make_node("node-0", cpu="4"), make_node("node-1", cpu="4"), *half_placed("g", cpu="1", bound_at=LONG_AGO)
    )
    loop.tick(NOW)
    reserved = loop.state.snapshot().reservations
    assert set(reserved) == {"default/g-worker-2", "default/g-worker-3"}
    assert actuator.evicted == []


def test_a_gang_left_half_placed_that_cannot_be_completed_is_released_whole() -> None:
    # node-0 holds the two bound members (3 CPU each); nowhere else has room for the other two
    filler = make_pod("filler", cpu="4", node="node-1", phase="Running", priority=1000)
    loop, actuator = loop_over(
        make_node("node-0", cpu="8"),
        make_node("node-1", cpu="4"),
        filler,
        *half_placed("g", cpu="3", bound_at=LONG_AGO),
    )
    loop.tick(NOW)
    assert sorted(key for key, _ in actuator.evicted) == ["default/g-worker-0", "default/g-worker-1"]
    assert all("released whole" in reason for _, reason in actuator.evicted)
    assert any(reason == "ReleasedWhole" for _, _, reason, _ in actuator.events)


def test_a_gang_recently_half_placed_is_left_to_finish() -> None:
    just_now = datetime.fromtimestamp(NOW - 5, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    filler = make_pod("filler", cpu="4", node="node-1", phase="Running", priority=1000)
    loop, actuator = loop_over(
        make_node("node-0", cpu="8"),
        make_node("node-1", cpu="4"),
        filler,
        *half_placed("g", cpu="3", bound_at=just_now),
    )
    loop.tick(NOW)
    assert actuator.evicted == []


class FlakyActuator(RecordingActuator):
    """Fails its first eviction, as an API server answering 503 would."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
        if self.failures and not dry_run:
            self.failures -= 1
            raise ApiCallError(503, "service unavailable")
        super().evict(pod, reason, dry_run=dry_run)


def test_an_api_error_mid_preemption_is_never_followed_by_a_second_preemption_for_the_same_gang() -> None:
    actuator = FlakyActuator()
    objects = (
        *cpu_nodes(3),
        *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
        *waiting_job("urgent", pods=4),
    )
    loop = PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW)
    with pytest.raises(ApiCallError):
        loop.tick(NOW)
    for later in (2, 4, 6):
        loop.tick(NOW + later)
    assert actuator.evicted == [], "the room stays reserved for the gang meanwhile: nothing is evicted anew"
    assert "default/urgent" in loop.state.snapshot().preemptions
    loop.tick(NOW + SETTINGS.default_plan_timeout_s + 1)
    assert len(actuator.evicted) == 12, "once the plan lapses, the preemption is decided again and carried out"


def test_a_preemption_a_disruption_budget_refuses_is_abandoned_whole_and_retried_later() -> None:
    loop, actuator = loop_over(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    actuator.protected = {"default/batch-worker-7"}
    assert loop.tick(NOW) is None
    assert actuator.evicted == [], "the dry run found the refusal before anything was evicted"
    snapshot = loop.state.snapshot()
    assert not snapshot.reservations and not snapshot.preemptions, "nothing reserved, no victim counted as leaving"
    until, why = loop.blocked["default/urgent"]
    assert until == NOW + loop.loop_settings.pdb_retry_s and "default/batch-worker-7" in why
    assert "PreemptionBlocked" in [e[2] for e in actuator.events if e[1] == "default/urgent"]
    assert loop.tick(NOW + 2) is None and not actuator.dry_runs[12:], "not tried again before the retry time"
    actuator.protected = set()
    assert loop.tick(NOW + loop.loop_settings.pdb_retry_s) is not None
    assert len(actuator.evicted) == 12


class RefusesForReal(RecordingActuator):
    """A budget spent by another disruption between the dry run and the eviction."""

    def evict(self, pod: Any, reason: str, *, dry_run: bool = False) -> None:
        if not dry_run and len(self.evicted) == 3:
            raise EvictionRefused(f"Cannot evict pod as it would violate the pod's disruption budget: {pod.key}")
        super().evict(pod, reason, dry_run=dry_run)


def test_an_eviction_refused_after_the_dry_run_stops_the_preemption_and_releases_the_room() -> None:
    actuator = RefusesForReal()
    objects = (
        *cpu_nodes(3),
        *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
        *waiting_job("urgent", pods=4),
    )
    loop = PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW)
    assert loop.tick(NOW) is None
    assert len(actuator.evicted) == 3, "no eviction after the refused one"
    snapshot = loop.state.snapshot()
    assert not snapshot.reservations, "the room is not held as if the victims were gone"
    assert not snapshot.preemptions
    assert "default/urgent" in loop.blocked


class RecreatingOnEviction(RecordingActuator):
    """training-operator as it is on a real cluster: an evicted pod is gone at once and its controller
    recreates it under the same name (a new UID, pending); the model learns of both before the next
    eviction. `filtered` is what `filter` answered for each recreated pod."""

    def __init__(self, state: ClusterState) -> None:
        super().__init__()
        self.state = state
        self.order: list[str] = []
        self.filtered: list[str] = []
        self.explained: list[Standing | None] = []

    def annotate_group(self, group: GroupView, annotations: Mapping[str, str | None]) -> None:
        super().annotate_group(group, annotations)
        self.order.append("announce" if next(iter(annotations.values())) else "withdraw")

    def evict(self, pod: PodView, reason: str, *, dry_run: bool = False) -> None:
        super().evict(pod, reason, dry_run=dry_run)
        if dry_run:
            return
        self.order.append("evict")
        self.state.apply(Kind.POD, "DELETED", {"metadata": {"namespace": pod.namespace, "name": pod.name}})
        role, index = pod.name.rsplit("-", 2)[1:]
        group, job = pod.group.split("/")[1], pod.job.split("/")[1]
        again = make_pod(pod.name, group=group, job=job, role=role, index=int(index), uid=f"{pod.uid}-again")
        self.state.apply(Kind.POD, "ADDED", again)
        snapshot = self.state.snapshot()
        self.filtered.append(filter_pod(snapshot, snapshot.pods[pod.key], NAMES, SETTINGS, NOW).outcome)
        self.explained.append(explain_gang(snapshot, pod.group, SETTINGS, NOW))


def test_a_victim_recreated_while_the_rest_of_its_gang_is_evicted_is_not_placed_again() -> None:
    state = cluster(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    actuator = RecreatingOnEviction(state)
    loop = PreemptionLoop(state, actuator, SETTINGS, lambda: NOW)
    assert loop.tick(NOW) is not None
    assert actuator.order == ["announce"] + ["evict"] * 12, "the preemption is announced before any eviction"
    assert actuator.filtered[:11] == ["waiting"] * 11, "no recreated member joins while its gang is being evicted"
    assert actuator.filtered[11] == "unplannable", "the last victim gone, the gang is planned whole and does not fit"
    first = actuator.explained[0]
    assert first is not None and first.wait.kind is WaitKind.BEING_PREEMPTED
    assert first.wait.blockers == ("default/urgent",)
    assert "11 of its pods are being removed by the preemption for default/urgent" in first.wait.message
    group, annotations = actuator.annotated_groups[0]
    assert group == "default/urgent"
    announced = json.loads(annotations[PREEMPTION_ANNOTATION] or "")
    assert announced["victims"]["default/batch-ps-0"] == "uid-default-batch-ps-0"
    plan = json.loads(annotations[GANG_PLAN_ANNOTATION] or "")
    assert sorted(plan["pods"]) == [f"urgent-worker-{i}" for i in range(4)], "the room is held from the first eviction"
    assert not state.snapshot().leaving, "every victim is gone: the recreated gang waits like any other"


def test_an_abandoned_preemption_withdraws_its_announcement() -> None:
    actuator = RefusesForReal()
    state = cluster(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    loop = PreemptionLoop(state, actuator, SETTINGS, lambda: NOW)
    assert loop.tick(NOW) is None
    (announced, announcement), (withdrawn, withdrawal) = actuator.annotated_groups
    assert announced == withdrawn == "default/urgent"
    assert all(announcement.values()), "the preemption and the preemptor's plan, in one write"
    assert set(withdrawal) == set(announcement) and not any(withdrawal.values()), "both removed"
    assert not state.snapshot().leaving, "no victim counts as leaving once the preemption is abandoned"


def test_the_plan_written_with_the_announcement_is_not_published_again() -> None:
    published: list[LedgerChange] = []
    loop = PreemptionLoop(
        cluster(
            *cpu_nodes(3),
            *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
            *waiting_job("urgent", pods=4),
        ),
        actuator := RecordingActuator(),
        SETTINGS,
        lambda: NOW,
        publish=lambda change, snapshot: published.append(change),
    )
    assert loop.tick(NOW) is not None
    [(announced, announcement)] = actuator.annotated_groups
    assert announced == "default/urgent" and announcement[GANG_PLAN_ANNOTATION]
    assert not [r for change in published for r in change.reserve if r.group == "default/urgent"]


def test_why_a_preemptor_waits_names_the_victims_still_on_their_nodes() -> None:
    loop, _ = loop_over(
        *cpu_nodes(3), *running_gang("batch", workers=11, nodes=NAMES, dynamic=False), *waiting_job("urgent", pods=4)
    )
    assert loop.tick(NOW) is not None
    standing = explain_gang(loop.state.snapshot(), "default/urgent", SETTINGS, NOW)
    assert standing is not None and standing.wait.kind is WaitKind.VICTIMS_TERMINATING
    assert "12 victim pod(s)" in standing.wait.message and "default/batch-ps-0" in standing.wait.message


def test_a_starving_gang_whose_rank_climbs_past_a_victims_is_searched_again_in_a_quiet_cluster() -> None:
    """Nothing in the cluster changes, but a starving gang climbs a size class per starvation limit: once
    it outranks an elastic job, that job's surplus is its to take, though no event wakes the loop."""
    victim = bound_job("wide", placement=["node-0"] * 4 + ["node-1"] * 4 + ["node-2"] * 2, min_workers=1)
    loop, _ = loop_over(*cpu_nodes(3), *victim, *waiting_job("big", pods=8, priority=0, created="2027-01-15T07:59:50Z"))
    limit = SETTINGS.starvation_limit_s
    for later in (0.0, limit, limit + 2):
        assert loop.tick(NOW + later) is None, f"not yet outranked at +{later:.0f} s"
    plan = loop.tick(NOW + 2 * limit + 60)
    assert plan is not None and dict(plan.scale_ins) == {"default/wide": 3}, plan
