"""The native gangs' controller over a model: what it writes, and when it writes nothing."""

from __future__ import annotations

from typing import Any

from extender.loops.leadership import AlwaysLeader
from extender.loops.native_gang_loop import NativeGangLoop
from extender.loops.native_gangs import KeptGang, NativeGangAction, NativeModeStatus
from extender.state.kinds import Kind
from tests.builders import cluster, make_k8s_podgroup, make_tfjob

SCHEDULER = "tfjob-scheduler"


def native_tfjob(name: str = "mnist", *, workers: int = 2) -> dict[str, Any]:
    """A TFJob as the webhook left it: its templates name the scheduler and its native gang."""
    job = make_tfjob(name, workers=workers)
    job["metadata"]["annotations"] = {"tfjob-extender.io/native-gang": name}
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"] = {
            "spec": {
                "schedulerName": SCHEDULER,
                "schedulingGroup": {"podGroupName": name},
                "containers": [{"name": "tensorflow", "resources": {"requests": {"cpu": "1"}}}],
            }
        }
    return job


class Mode:
    def __init__(self, active: bool = True) -> None:
        self.current = NativeModeStatus("auto", active, "served" if active else "1.36")
        self.refreshed = 0

    def refresh(self) -> NativeModeStatus:
        self.refreshed += 1
        return self.current

    def status(self) -> NativeModeStatus:
        return self.current


class Actuator:
    def __init__(self, listed: dict[str, KeptGang] | None = None, failing: bool = False) -> None:
        self.listed = listed or {}
        self.failing = failing
        self.calls: list[tuple[str, str, int]] = []
        self.lists = 0

    def list_kept(self) -> dict[str, KeptGang]:
        self.lists += 1
        return dict(self.listed)

    def _write(self, kind: str, action: NativeGangAction) -> None:
        if self.failing:
            raise OSError("API server unreachable")
        self.calls.append((kind, action.key, action.min_count))

    def create(self, action: NativeGangAction) -> None:
        self._write("create", action)

    def resize(self, action: NativeGangAction) -> None:
        self._write("resize", action)

    def delete(self, action: NativeGangAction) -> None:
        self._write("delete", action)


class Follower(AlwaysLeader):
    def holds(self) -> bool:
        return False


def loop(state: Any, actuator: Actuator, mode: Mode | None = None, **options: Any) -> NativeGangLoop:
    return NativeGangLoop(state, actuator, mode or Mode(), SCHEDULER, lambda: 0.0, **options)


def test_it_makes_the_gang_once_and_deletes_it_with_the_job() -> None:
    state = cluster(native_tfjob())
    actuator = Actuator()
    controller = loop(state, actuator)
    assert [r.outcome for r in controller.tick(1.0)] == ["done"]
    assert actuator.calls == [("create", "default/mnist", 3)]
    assert controller.tick(2.0) == []
    state.apply(Kind.PODGROUP_K8S, "ADDED", make_k8s_podgroup("mnist", min_count=3))
    assert controller.tick(3.0) == []
    state.apply(Kind.TFJOB, "DELETED", native_tfjob())
    controller.tick(4.0)
    assert actuator.calls[-1] == ("delete", "default/mnist", 0)
    assert controller.kept == {}


def test_after_a_restart_it_finds_what_it_made_and_resizes_it() -> None:
    state = cluster(native_tfjob(workers=4), make_k8s_podgroup("mnist", min_count=3))
    actuator = Actuator({"default/mnist": KeptGang("default", "mnist", "uid-job-mnist", 3)})
    controller = loop(state, actuator)
    controller.tick(1.0)
    assert actuator.calls == [("resize", "default/mnist", 5)]
    assert actuator.lists == 1


def test_it_writes_nothing_unless_native_gangs_are_given_here_and_it_leads() -> None:
    state = cluster(native_tfjob())
    actuator = Actuator()
    assert loop(state, actuator, Mode(active=False)).tick(1.0) == []
    assert loop(state, actuator, leader=Follower()).tick(1.0) == []
    assert actuator.calls == [] and actuator.lists == 0


def test_shadow_mode_plans_and_records_without_writing() -> None:
    actuator = Actuator()
    (record,) = loop(cluster(native_tfjob()), actuator, dry_run=True).tick(1.0)
    assert (record.outcome, record.action.kind) == ("dry-run", "create")
    assert actuator.calls == []


def test_a_failed_write_is_recorded_and_the_gangs_are_listed_again() -> None:
    actuator = Actuator(failing=True)
    controller = loop(cluster(native_tfjob()), actuator)
    (record,) = controller.tick(1.0)
    assert record.outcome == "failed" and "unreachable" in record.error
    assert controller.kept is None
    actuator.failing = False
    controller.tick(2.0)
    assert actuator.calls == [("create", "default/mnist", 3)] and actuator.lists == 2
    assert controller.counts[("create", "failed")] == 1 and controller.counts[("create", "done")] == 1


def test_a_new_tfjob_gets_its_gang_at_the_next_look_not_the_next_interval() -> None:
    """Between two passes (`interval_s`) the thread only counts the TFJobs every `look_s`; a TFJob that
    came brings a pass at once, while status changes alone wait for the interval."""
    state = cluster(native_tfjob("first"))
    actuator, mode = Actuator(), Mode()
    now = [0.0]
    controller = NativeGangLoop(state, actuator, mode, SCHEDULER, lambda: now[0], interval_s=1.0)
    controller._wake()
    assert actuator.calls == [("create", "default/first", 3)]
    now[0] = 0.05
    changed = native_tfjob("first")
    changed["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    state.apply(Kind.TFJOB, "MODIFIED", changed)
    controller._wake()
    assert mode.refreshed == 1, "no pass for a status change within the interval"
    now[0] = 0.1
    state.apply(Kind.TFJOB, "ADDED", native_tfjob("second"))
    controller._wake()
    assert actuator.calls[-1] == ("create", "default/second", 3)
    now[0] = 1.2
    controller._wake()
    assert mode.refreshed == 3, "and one a whole interval after the last"
