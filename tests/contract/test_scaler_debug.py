"""`/debug/scaler` and the scaler's metrics, beside the extender's routes and on an observe listener."""

from __future__ import annotations

from fastapi.testclient import TestClient

from extender.api.app import create_app, make_service
from extender.api.observe import create_observe_app
from extender.api.scaler import export_scaler_metrics, make_scaler_router
from extender.config import Settings
from extender.loops.actuator import RecordingActuator
from extender.loops.scaler import ScalerLoop
from extender.policy.core.settings import PolicySettings
from tests.builders import cluster, cpu_nodes, placed_job

NOW = 1_772_363_100.0


def scaler_over_a_growing_job() -> ScalerLoop:
    state = cluster(*cpu_nodes(3), *placed_job("a", placement=["node-0", "node-1", "node-2"], max_workers=6))
    return ScalerLoop(state, RecordingActuator(), PolicySettings(), lambda: NOW)


def test_debug_scaler_beside_the_extender_shows_what_why_and_the_plan() -> None:
    loop = scaler_over_a_growing_job()
    service = make_service(Settings(), loop.state, lambda: NOW)
    export_scaler_metrics(service.metrics.registry, loop)
    loop.tick(NOW)
    app = create_app(service, routers=[make_scaler_router(loop, lambda: NOW)])
    with TestClient(app) as client:
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
    with TestClient(create_observe_app(service, routers)) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert "tfjob_extender_scaler_leader" in client.get("/metrics").text
        assert client.get("/debug/scaler").status_code == 404, "debug routes only with --observe-debug"
    with TestClient(create_observe_app(service, routers, debug_routes=True)) as client:
        assert client.get("/debug/scaler").json()["actions"] == []
