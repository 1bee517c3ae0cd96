"""The preemption loop on a model: what it asks the actuator to do, what it reserves, what it reports."""

from __future__ import annotations

from typing import Any

import pytest

from extender.actuator import RecordingActuator
from extender.policy import preemption, victims
from extender.policy.jobstates import JobState, job_states
from extender.policy.settings import PolicySettings
from extender.preemptor import PreemptionLoop
from extender.state.kinds import Kind
from tests.builders import cluster, make_node
from tests.unit.policy.test_victims import NAMES, NOW, nodes, running, waiting

SETTINGS = PolicySettings()


def loop_over(*objects: dict[str, object]) -> tuple[PreemptionLoop, RecordingActuator]:
    actuator = RecordingActuator()
    return PreemptionLoop(cluster(*objects), actuator, SETTINGS, lambda: NOW), actuator


def test_an_elastic_job_is_scaled_in_and_the_freed_room_reserved_for_the_whole_gang() -> None:
    loop, actuator = loop_over(
        *nodes(3), *running("light", workers=11, nodes=NAMES, min_workers=3), *waiting("heavy", pods=4)
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
        *nodes(3), *running("batch", workers=11, nodes=NAMES, dynamic=False), *waiting("urgent", pods=4)
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
        *nodes(3), *running("light", workers=11, nodes=NAMES, min_workers=3), *waiting("heavy", pods=4)
    )
    loop.tick(NOW)
    states = {status.job: status.state for status in job_states(loop.state.snapshot(), NOW, SETTINGS)}
    assert states == {"default/light": JobState.PREEMPTED, "default/heavy": JobState.WAITING}
    reported = {(key, reason) for kind, key, reason, _ in actuator.events if kind == "TFJob"}
    assert ("default/light", "Preempted") in reported
    assert ("default/heavy", "Waiting") in reported


def test_nothing_happens_when_every_gang_fits() -> None:
    loop, actuator = loop_over(*nodes(3), *waiting("small", pods=2))
    assert loop.tick(NOW) is None
    assert actuator.scaled == [] and actuator.evicted == []


def test_a_refused_gang_is_not_searched_again_until_the_model_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # a high-priority gang that only a higher-priority job could make room for: every search is refused
    loop, actuator = loop_over(
        *nodes(3),
        *running("vip", workers=11, nodes=NAMES, priority=1000, dynamic=False),
        *waiting("urgent", pods=4),
    )
    searches: list[str] = []
    real = victims.plan_preemption

    def counted(*args: Any, **kwargs: Any) -> Any:
        searches.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(preemption, "plan_preemption", counted)  # the chooser's own reference
    assert loop.tick(NOW) is None
    assert loop.tick(NOW + 2) is None
    assert searches == ["default/urgent"], "the same model and weight give the same refusal"
    loop.state.apply(Kind.NODE, "ADDED", make_node("node-3", cpu="1", memory="64Gi"))
    assert loop.tick(NOW + 4) is None
    assert searches == ["default/urgent", "default/urgent"], "a changed model is searched again"
    assert actuator.evicted == [] and actuator.scaled == []
