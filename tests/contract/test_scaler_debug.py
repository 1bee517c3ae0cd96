"""`/debug/scaler` and the scaler's metrics on the observe listener, beside the verb listener of the same service
or alone (as a loop process serves them)."""

from __future__ import annotations

import httpx

from extender.api.app import make_service
from extender.api.scaler import export_scaler_metrics, make_scaler_router
from extender.config import Settings
from extender.loops.actuator import RecordingActuator
from extender.loops.scaler import ScalerLoop
from extender.policy.core.settings import PolicySettings
from tests.builders import cluster, cpu_nodes, placed_job
from tests.contract.listeners import client_of, observe_server, running

NOW = 1_772_363_100.0


def scaler_over_a_growing_job() -> ScalerLoop:
    state = cluster(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    return ScalerLoop(state, RecordingActuator(), PolicySettings(), lambda: NOW)


def test_debug_scaler_beside_the_verb_listener_shows_what_why_and_the_plan() -> None:
    loop = scaler_over_a_growing_job()
    service = make_service(Settings(), loop.state, lambda: NOW)
    export_scaler_metrics(service.metrics.registry, loop)
    loop.tick(NOW)
    with client_of(service, routers=[make_scaler_router(loop, lambda: NOW)]) as client:
        body = client.get("/debug/scaler").json()
        metrics = client.get("/metrics").text
    (action,) = body["actions"]
    assert action["kind"] == "scale-out" and action["job"] == "default/a" and action["outcome"] == "done"
    assert (action["replicasFrom"], action["replicasTo"]) == (2, 4)
    assert action["plan"] == [
        {"pod": "default/a-worker-2", "node": "node-0"},
        {"pod": "default/a-worker-3", "node": "node-0"},
    ]
    assert "idle capacity" in action["reason"]
    assert body["leading"] is True and body["coolingDown"] == {"default/a": 30.0}
    assert 'tfjob_extender_scaler_actions_total{kind="scale-out",outcome="done"} 1.0' in metrics


def test_an_observe_listener_serves_the_scaler_metrics_and_with_debug_routes_its_debug_view() -> None:
    loop = scaler_over_a_growing_job()
    service = make_service(Settings(), loop.state, lambda: NOW)
    export_scaler_metrics(service.metrics.registry, loop)
    routers = [make_scaler_router(loop, lambda: NOW)]
    plain, with_debug = observe_server(service, routers, debug_routes=False), observe_server(service, routers)
    with running([plain, with_debug]):
        with httpx.Client(base_url=f"http://127.0.0.1:{plain.port}") as client:
            assert client.get("/healthz").json() == {"status": "ok"}
            assert "tfjob_extender_scaler_leader" in client.get("/metrics").text
            assert client.get("/debug/scaler").status_code == 404, "debug routes only with --observe-debug"
        with httpx.Client(base_url=f"http://127.0.0.1:{with_debug.port}") as client:
            assert client.get("/debug/scaler").json()["actions"] == []
