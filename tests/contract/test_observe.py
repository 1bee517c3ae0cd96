"""The observe listener's app: probes and metrics always, the debug routes and the page only with
`--observe-debug`, no verbs, nothing but GET."""

from __future__ import annotations

from fastapi.testclient import TestClient

from extender.api.observe import create_observe_app
from extender.api.verbs import Service


def test_by_default_the_observe_app_serves_only_metrics_and_probes(service: Service) -> None:
    with TestClient(create_observe_app(service)) as client:
        assert "tfjob_extender_gangs_pending" in client.get("/metrics").text
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json()["ready"] is True
        for path in ("/debug/state", "/debug/queue", "/debug/explain/default/mnist", "/debug/view", "/ui"):
            assert client.get(path).status_code == 404, path


def test_with_debug_routes_the_observe_app_serves_debug_and_the_page_but_no_verbs(service: Service) -> None:
    with TestClient(create_observe_app(service, debug_routes=True)) as client:
        assert client.get("/metrics").status_code == 200
        assert client.get("/debug/queue").json()["queue"][0]["gang"] == "default/mnist"
        assert client.get("/debug/explain/default/mnist").json()["status"] == "waiting"
        page = client.get("/ui")
        assert page.status_code == 200
        assert "Queue, in rank order" in page.text
        for verb in ("/filter", "/prioritize", "/preempt"):
            refused = client.post(verb, content=b"{}")
            assert refused.status_code == 405
            assert "read-only" in refused.json()["error"]
        assert client.get("/filter").status_code == 404
        assert client.get("/debug/view?summary=perhaps").status_code == 400
