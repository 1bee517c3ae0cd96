"""Events on waiting pods: the stable reason of what their gang waits for, written once per change."""

from __future__ import annotations

from extender.loops.actuator import RecordingActuator
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.loops.waitevents import WaitEventReporter
from extender.policy.core.settings import PolicySettings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_sized_tfjob, tfjob_pods

NOW = 1_772_359_260.0


def wide_gang(workers: int) -> ClusterState:
    """One 4-CPU node, an 8-CPU node another pod fills, and a gang of a PS and `workers` workers of 1 CPU: too
    wide for the room left, not for the cluster."""
    return cluster(
        make_node("node-0", cpu="4", memory="16Gi"),
        make_node("node-busy", cpu="8", memory="16Gi"),
        make_pod("hog", cpu="8", memory="1Gi", node="node-busy", phase="Running"),
        *tfjob_pods("wide", ps=1, workers=workers, cpu="1", memory="1Gi"),
        make_podgroup("wide", min_member=workers + 1),
        make_sized_tfjob("wide", workers=workers, cpu="1", memory="1Gi"),
    )


def test_each_pending_member_gets_the_reason_once_until_it_changes() -> None:
    state = wide_gang(5)
    actuator = RecordingActuator()
    reporter = WaitEventReporter(actuator, PolicySettings(), PreemptionLoopSettings(wait_event_repeat_after_s=300.0))
    reporter.report(state.snapshot(), NOW)
    assert {(kind, reason) for kind, _, reason, _ in actuator.events} == {("Pod", "GangWaitingForRoom")}
    assert sorted(key for _, key, _, _ in actuator.events) == [
        "default/wide-ps-0",
        *(f"default/wide-worker-{i}" for i in range(5)),
    ]
    assert "best plan fits 4" in actuator.events[0][3]
    reporter.report(state.snapshot(), NOW + 10)
    assert len(actuator.events) == 6, "the same reason is not written again"
    state.apply(Kind.NODE, "ADDED", make_node("node-1", cpu="4", memory="16Gi"))
    reporter.report(state.snapshot(), NOW + 20)
    assert {reason for _, _, reason, _ in actuator.events[6:]} == {"GangSchedulable"}
    assert len(actuator.events) == 12


def test_a_changed_message_of_the_same_kind_waits_for_the_repeat_interval() -> None:
    state = wide_gang(9)
    actuator = RecordingActuator()
    reporter = WaitEventReporter(
        actuator, PolicySettings(), PreemptionLoopSettings(wait_event_pods_per_gang=2, wait_event_repeat_after_s=300.0)
    )
    reporter.report(state.snapshot(), NOW)
    assert len(actuator.events) == 2, "at most pods_per_gang members get it"
    state.apply(Kind.NODE, "ADDED", make_node("node-1", cpu="2", memory="16Gi"))
    reporter.report(state.snapshot(), NOW + 10)
    assert len(actuator.events) == 2
    reporter.report(state.snapshot(), NOW + 400)
    assert len(actuator.events) == 4
    assert "best plan fits 6" in actuator.events[-1][3]
