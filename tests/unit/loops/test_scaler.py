"""The scaler loop on a model: what it reserves and asks the actuator to do, and what it leaves alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.api.scaler import render_scaler
from extender.loops import scaler as scaler_module
from extender.loops.actuator import RecordingActuator
from extender.loops.preemption import PreemptionLoop
from extender.loops.scaler import ScalerLoop, ScalerRecord
from extender.policy.core.settings import PolicySettings
from extender.policy.scaling.scale_out import plan_scale_out
from extender.policy.verbs.filtering import filter_pod
from extender.state.kinds import Kind
from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import Obj, cluster, cpu_nodes, make_pod, placed_job, waiting_job

NOW = 1_772_363_100.0
WAITING_SINCE = "2026-03-01T11:00:00Z"


SETTINGS = PolicySettings()


class SharedLease:
    """One lease for several loops: the first to ask holds it until `expire()`."""

    def __init__(self) -> None:
        self.holder = ""

    def expire(self) -> None:
        self.holder = ""


class Elector:
    def __init__(self, lease: SharedLease, identity: str) -> None:
        self.lease = lease
        self.identity = identity

    def holds(self) -> bool:
        if not self.lease.holder:
            self.lease.holder = self.identity
        return self.lease.holder == self.identity

    def release(self) -> None:
        if self.lease.holder == self.identity:
            self.lease.holder = ""


def loop_over(*objects: Obj, settings: PolicySettings = SETTINGS) -> tuple[ScalerLoop, RecordingActuator]:
    actuator = RecordingActuator()
    return ScalerLoop(cluster(*objects), actuator, settings, lambda: NOW), actuator


def test_a_tick_reserves_the_new_workers_then_raises_the_replicas() -> None:
    loop, actuator = loop_over(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    [record] = loop.tick(NOW)
    assert (record.kind, record.replicas_from, record.replicas_to, record.outcome) == ("scale-out", 2, 4, "done")
    assert [(job, replicas) for job, replicas, _ in actuator.scaled] == [("default/a", 4)]
    assert actuator.annotated == [
        (
            "default/a",
            {
                "tfjob-extender.io/scaled-at": f"{NOW:.3f}",
                "tfjob-extender.io/worker-plan": f'{{"expiresAt":{NOW + SETTINGS.default_plan_timeout_s:.1f},'
                '"pods":{"a-worker-2":"node-0","a-worker-3":"node-0"}}',
            },
        )
    ]
    held = loop.state.snapshot().reservations
    assert {key: r.node for key, r in held.items()} == {"default/a-worker-2": "node-0", "default/a-worker-3": "node-0"}
    assert ("TFJob", "default/a", "ScaledOut", record.reason) in actuator.events


def test_the_new_worker_is_steered_to_the_node_the_scaler_counted_on() -> None:
    loop, _ = loop_over(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=3))
    loop.tick(NOW)
    loop.state.apply(Kind.POD, "ADDED", make_pod("a-worker-2", job="a", role="worker", index=2, group="a"))
    snapshot = loop.state.snapshot()
    decision = filter_pod(snapshot, snapshot.pods["default/a-worker-2"], ["node-0", "node-1", "node-2"], SETTINGS, NOW)
    assert decision.outcome == "steered" and decision.feasible == ("node-0",)


def test_no_second_step_before_the_first_settles_nor_within_the_cooldown() -> None:
    loop, actuator = loop_over(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=8))
    assert loop.tick(NOW)
    assert loop.tick(NOW + 2) == [], "its new workers are reserved, not bound: the job has not settled"
    assert len(actuator.scaled) == 1


def test_a_step_planned_from_a_stale_count_is_dropped_and_its_plan_released() -> None:
    loop, actuator = loop_over(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    actuator.workers["default/a"] = 3  # another instance already grew it
    [record] = loop.tick(NOW)
    assert record.outcome.startswith("stale: the job has 3 workers now")
    assert actuator.scaled == []
    assert dict(loop.state.snapshot().reservations) == {}


def test_a_follower_does_nothing_and_a_new_leader_never_repeats_a_step() -> None:
    state = cluster(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    actuator = RecordingActuator()
    lease = SharedLease()
    first = ScalerLoop(state, actuator, SETTINGS, lambda: NOW, leader=Elector(lease, "first"))
    second = ScalerLoop(
        cluster(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6)),
        actuator,
        SETTINGS,
        lambda: NOW,
        leader=Elector(lease, "second"),
    )
    assert first.tick(NOW) and second.tick(NOW) == []
    assert not second.leading
    lease.expire()  # the first instance dies; the second's model has not seen the change yet
    [record] = second.tick(NOW + 20)
    assert second.leading and record.outcome.startswith("stale")
    assert [replicas for _, replicas, _ in actuator.scaled] == [4], "exactly one scale-out was applied"


def test_a_job_without_dynamic_workers_gets_one_event_saying_why() -> None:
    loop, actuator = loop_over(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], dynamic=False))
    for second in range(0, 60, 2):
        assert loop.tick(NOW + second) == []
    notes = [event for event in actuator.events if event[2] == "NotScaled"]
    assert notes == [
        (
            "TFJob",
            "default/a",
            "NotScaled",
            "left alone: it declares elastic worker bounds but not enableDynamicWorker: true",
        )
    ]
    assert render_scaler(loop, NOW)["leftAlone"] == {"default/a": notes[0][3]}


def test_a_steady_cluster_stays_quiet_for_a_minute() -> None:
    # "a" at its maximum beside its PS; "b" cannot grow (no room); a waiting gang that fits nowhere
    loop, actuator = loop_over(
        *cpu_nodes(2),
        *placed_job("a", placement=["node-0", "node-0", "node-0", "node-0"], max_workers=3),
        *placed_job("b", placement=["node-1", "node-1", "node-1", "node-1"], max_workers=8),
        *waiting_job("huge", pods=9, declare_bounds=True, created=WAITING_SINCE),
    )
    for second in range(0, 60, 2):
        assert loop.tick(NOW + second) == []
    assert actuator.scaled == [] and actuator.restarted == []


def test_a_migrated_worker_gets_the_ps_node_once_its_old_pod_is_gone() -> None:
    objects = placed_job("a", placement=["node-0", "node-0", "node-1"], max_workers=2)
    loop, actuator = loop_over(*cpu_nodes(2), *objects)
    [record] = loop.tick(NOW)
    assert (record.kind, record.pods, record.plan) == (
        "migrate",
        ("default/a-worker-1",),
        (("default/a-worker-1", "node-0"),),
    )
    assert [key for key, _ in actuator.restarted] == ["default/a-worker-1"]
    [(job, annotations)] = actuator.annotated
    assert job == "default/a" and annotations["tfjob-extender.io/consolidated-at"] == f"{NOW:.3f}"
    assert '"pods":{"a-worker-1":"node-0"}' in annotations["tfjob-extender.io/worker-plan"]
    state: ClusterState = loop.state
    old = make_pod("a-worker-1", job="a", role="worker", index=1, group="a", node="node-1", phase="Running")
    state.apply(Kind.POD, "DELETED", old)
    loop.settle_migrations(state.snapshot(), NOW + 1)
    assert state.snapshot().reservations["default/a-worker-1"].node == "node-0"
    state.apply(Kind.POD, "ADDED", make_pod("a-worker-1", job="a", role="worker", index=1, group="a", uid="new"))
    snapshot = state.snapshot()
    decision = filter_pod(snapshot, snapshot.pods["default/a-worker-1"], ["node-0", "node-1"], SETTINGS, NOW + 2)
    assert decision.feasible == ("node-0",)
    assert loop.tick(NOW + 3) == [], "one migration per job per interval"


def test_an_unchanged_model_is_planned_again_only_after_a_change_or_the_cooldown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop, _ = loop_over(
        *cpu_nodes(2), *placed_job("a", placement=["node-0", "node-0", "node-0", "node-0"], max_workers=3)
    )
    planned: list[float] = []
    real = plan_scale_out

    def counting(*args: Any) -> Any:
        planned.append(args[2])
        return real(*args)

    monkeypatch.setattr(scaler_module, "plan_scale_out", counting)
    for second in (0, 2, 4):
        loop.tick(NOW + second)
    assert planned == [NOW]
    loop.state.apply(Kind.POD, "ADDED", make_pod("other", node="node-1", phase="Running"))
    loop.tick(NOW + 6)
    loop.tick(NOW + 8)
    loop.tick(NOW + 16)
    assert planned == [NOW, NOW + 6, NOW + 16]


def test_an_extender_in_another_process_reserves_the_plan_written_on_the_tfjob() -> None:
    objects = [*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6)]
    scaler, actuator = loop_over(*objects)
    scaler.tick(NOW)
    [(_, annotations)] = actuator.annotated
    job = next(obj for obj in objects if obj["kind"] == "TFJob")
    job["metadata"]["annotations"].update(annotations)
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    extender = PreemptionLoop(cluster(*objects), RecordingActuator(), SETTINGS, lambda: NOW)
    extender.tick(NOW + 1)
    held = extender.state.snapshot().reservations
    assert {key: (r.node, r.group) for key, r in held.items()} == {
        "default/a-worker-2": ("node-0", "default/a"),
        "default/a-worker-3": ("node-0", "default/a"),
    }
    extender.state.apply(Kind.POD, "ADDED", make_pod("a-worker-2", job="a", role="worker", index=2, group="a"))
    snapshot = extender.state.snapshot()
    decision = filter_pod(snapshot, snapshot.pods["default/a-worker-2"], ["node-0", "node-1", "node-2"], SETTINGS, NOW)
    assert decision.feasible == ("node-0",)
    lapsed = PreemptionLoop(cluster(*objects), RecordingActuator(), SETTINGS, lambda: NOW)
    lapsed.tick(NOW + SETTINGS.default_plan_timeout_s + 1)
    assert dict(lapsed.state.snapshot().reservations) == {}, "a lapsed plan holds nothing"


def test_filter_steers_a_planned_worker_before_any_loop_reserved_it() -> None:
    objects = [*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=4)]
    job = next(obj for obj in objects if obj["kind"] == "TFJob")
    job["metadata"]["annotations"]["tfjob-extender.io/worker-plan"] = (
        f'{{"expiresAt":{NOW + 60},"pods":{{"a-worker-2":"node-2","a-worker-3":"node-1"}}}}'
    )
    job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 4
    state = cluster(*objects, make_pod("a-worker-3", job="a", role="worker", index=3, group="a"))
    snapshot = state.snapshot()
    pod = snapshot.pods["default/a-worker-3"]
    decision = filter_pod(snapshot, pod, ["node-0", "node-1", "node-2"], SETTINGS, NOW)
    assert (decision.outcome, decision.feasible) == ("steered", ("node-1",))
    lapsed = filter_pod(snapshot, pod, ["node-0", "node-1", "node-2"], SETTINGS, NOW + 61)
    assert lapsed.outcome != "steered"


def test_the_scaler_annotations_survive_a_model_dump(tmp_path: Path) -> None:
    loop, actuator = loop_over(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    loop.tick(NOW)
    [(_, annotations)] = actuator.annotated
    loop.state.apply(Kind.TFJOB, "MODIFIED", _annotated_job(annotations))
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(dump_state(loop.state.snapshot())))
    reloaded = ClusterState()
    load_snapshot_file(reloaded, path)
    before, after = loop.state.snapshot().jobs["default/a"], reloaded.snapshot().jobs["default/a"]
    assert (after.scaled_at, after.worker_plan, after.worker_plan_expires) == (
        before.scaled_at,
        before.worker_plan,
        before.worker_plan_expires,
    )
    assert after.worker_plan == (("a-worker-2", "node-0"), ("a-worker-3", "node-0"))


def _annotated_job(annotations: dict[str, str]) -> Obj:
    job = next(
        obj
        for obj in placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6)
        if obj["kind"] == "TFJob"
    )
    job["metadata"]["annotations"].update(annotations)
    return job


def apply_scale_outs(state: ClusterState, objects: list[Obj], records: list[ScalerRecord]) -> None:
    """What training-operator and kube-scheduler would do: raise the replicas, bind the new pods as planned."""
    for record in records:
        assert record.kind == "scale-out", record
        name = record.job.split("/")[1]
        job = next(obj for obj in objects if obj["kind"] == "TFJob" and obj["metadata"]["name"] == name)
        job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = record.replicas_to
        state.apply(Kind.TFJOB, "MODIFIED", job)
        for pod_key, node in record.plan:
            pod_name = pod_key.split("/")[1]
            index = int(pod_name.rsplit("-", 1)[1])
            bound = make_pod(pod_name, job=name, role="worker", index=index, group=name, node=node, phase="Running")
            state.apply(Kind.POD, "ADDED", bound)


@pytest.mark.parametrize(
    "layout",
    [
        [("a", ["node-0", "node-1"], 7), ("b", ["node-2", "node-2"], 3)],
        [("a", ["node-0", "node-0", "node-0"], 12), ("b", ["node-1", "node-1"], 12), ("c", ["node-2", "node-2"], 2)],
        [("a", ["node-1", "node-2", "node-0"], 4)],
    ],
)
def test_growth_converges_and_then_stays_quiet(layout: list[tuple[str, list[str], int]]) -> None:
    objects: list[Obj] = [*cpu_nodes(3), *waiting_job("huge", pods=20, declare_bounds=True, created=WAITING_SINCE)]
    for name, placement, most in layout:
        objects += placed_job(name, placement=placement, max_workers=most)
    state = cluster(*objects)
    loop = ScalerLoop(state, RecordingActuator(), PolicySettings(consolidation_enabled=False), lambda: NOW)
    history: dict[str, list[int]] = {}
    last_active = 0
    for tick in range(40):
        records = loop.tick(NOW + 31 * tick)
        apply_scale_outs(state, objects, records)
        for record in records:
            history.setdefault(record.job, []).append(record.replicas_to)
        if records:
            last_active = tick
    assert last_active < 30, "it reached a steady state and stayed in it"
    for steps in history.values():
        assert steps == sorted(steps), "a job only ever grows while nothing else changes"
    used = sum(node.requested.get("cpu") for node in state.snapshot().nodes.values())
    wanted = sum(1 + most for _, _, most in layout) * 1000
    assert used == min(wanted, 12_000), "every idle CPU a job could use is used"
