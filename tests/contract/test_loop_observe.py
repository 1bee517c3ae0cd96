"""A loop process's observe listener: an honest `/readyz` (every kind listed, the lease answered, leader or
standby said) and `/metrics` with the preemption loop's counts beside the scaler's."""

from __future__ import annotations

import httpx

from extender.api.app import make_service
from extender.api.loop_metrics import export_preemption_metrics
from extender.config import Settings
from extender.loops.actuator import RecordingActuator
from extender.loops.leadership import LeaseStatus
from extender.loops.preemption import PreemptionLoop
from extender.policy.core.settings import PolicySettings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, cpu_nodes, running_gang, waiting_job
from tests.contract.listeners import client_of_server, observe_server

NOW = 1_800_000_000.0
NAMES = ["node-0", "node-1", "node-2"]
FORBIDDEN = "forbidden (HTTP 403): this process's service account may not list and watch pods in the core API group"


def observe(state: ClusterState, path: str, **probes: object) -> httpx.Response:
    """`GET path` of an observe listener (probes and metrics, as a loop process serves them) over `state`."""
    service = make_service(Settings(), state, lambda: NOW)
    for name, value in probes.items():
        setattr(service.probes, name, value)
    with client_of_server(observe_server(service, debug_routes=False)) as client:
        return client.get(path)


def lease(*, answered: bool, leading: bool = False, error: str | None = None) -> LeaseStatus:
    return LeaseStatus("loops-0", "tfjob-system/tfjob-extender-scaler", answered, leading, error)


def test_not_ready_while_a_kind_is_not_listed_and_the_reason_names_an_rbac_refusal() -> None:
    problems = {"informer_problems": lambda: {Kind.POD.value: FORBIDDEN}}
    answer = observe(ClusterState(PolicySettings()), "/readyz", **problems)
    assert answer.status_code == 503
    body = answer.json()
    assert body["ready"] is False and body["synced"][Kind.POD.value] is False
    assert "not listed yet" in body["reason"] and FORBIDDEN in body["reason"]
    assert body["problems"] == {Kind.POD.value: FORBIDDEN}
    assert observe(ClusterState(PolicySettings()), "/healthz", **problems).status_code == 200, "alive all the same"


def test_a_loop_process_is_ready_only_once_the_lease_is_answered_and_says_its_role() -> None:
    state = cluster(*cpu_nodes(1))
    waiting = observe(state, "/readyz", needs_lease=True, lease=lambda: lease(answered=False))
    assert waiting.status_code == 503
    assert waiting.json()["reason"] == "tfjob-system/tfjob-extender-scaler not answered yet (leader or standby unknown)"
    refused = observe(state, "/readyz", needs_lease=True, lease=lambda: lease(answered=False, error="HTTP 403"))
    assert refused.status_code == 503 and refused.json()["reason"].endswith(": HTTP 403")
    standby = observe(state, "/readyz", needs_lease=True, lease=lambda: lease(answered=True))
    assert standby.status_code == 200 and standby.json()["role"] == "standby"
    leader = observe(state, "/readyz", needs_lease=True, lease=lambda: lease(answered=True, leading=True))
    assert leader.status_code == 200 and leader.json()["role"] == "leader"
    assert "reason" not in leader.json()


def test_serve_is_ready_without_waiting_for_the_lease_but_shows_it() -> None:
    answer = observe(cluster(*cpu_nodes(1)), "/readyz", lease=lambda: lease(answered=False))
    assert answer.status_code == 200 and answer.json()["lease"]["answered"] is False


def metrics_of(loop: PreemptionLoop) -> str:
    service = make_service(Settings(), loop.state, lambda: NOW)
    export_preemption_metrics(service.metrics.registry, loop)
    with client_of_server(observe_server(service, debug_routes=False)) as client:
        return client.get("/metrics").text


def test_the_preemption_loops_counts_are_exported() -> None:
    objects = (
        *cpu_nodes(3),
        *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
        *waiting_job("urgent", pods=4),
    )
    loop = PreemptionLoop(cluster(*objects), RecordingActuator(), PolicySettings(), lambda: NOW)
    before = metrics_of(loop)
    for family in ("ticks", "plans_reserved", "preemptions"):
        assert f"# TYPE tfjob_extender_preemption_{family}_total counter" in before
    assert "tfjob_extender_preemption_evictions_total 0.0" in before
    assert "tfjob_extender_preemption_leader 0.0" in before
    assert loop.tick(NOW) is not None
    after = metrics_of(loop)
    assert 'tfjob_extender_preemption_ticks_total{role="leader"} 1.0' in after
    assert 'tfjob_extender_preemption_preemptions_total{outcome="carried-out"} 1.0' in after
    assert 'tfjob_extender_preemption_plans_reserved_total{why="preemption"} 1.0' in after
    assert "tfjob_extender_preemption_evictions_total 12.0" in after
    for name in ("suspensions", "resumptions", "scale_ins", "pdb_refusals"):
        assert f"tfjob_extender_preemption_{name}_total 0.0" in after
    assert "tfjob_extender_preemption_leader 1.0" in after


def test_a_shadow_preemption_is_counted_as_dry_run_and_nothing_is_evicted() -> None:
    objects = (
        *cpu_nodes(3),
        *running_gang("batch", workers=11, nodes=NAMES, dynamic=False),
        *waiting_job("urgent", pods=4),
    )
    actuator = RecordingActuator()
    loop = PreemptionLoop(cluster(*objects), actuator, PolicySettings(), lambda: NOW, dry_run=True)
    assert loop.tick(NOW) is not None and actuator.evicted == []
    text = metrics_of(loop)
    assert 'tfjob_extender_preemption_preemptions_total{outcome="dry-run"} 1.0' in text
    assert "tfjob_extender_preemption_evictions_total 0.0" in text
