"""The observe listener's app: every read route of the extender, no verbs, nothing but GET."""

from __future__ import annotations

from fastapi.testclient import TestClient

from extender.api.observe import create_observe_app
from extender.api.verbs import Service


def test_the_observe_app_serves_metrics_debug_and_the_page_but_no_verbs(service: Service) -> None:
    with TestClient(create_observe_app(service)) as client:
        assert client.get("/metrics").status_code == 200
        assert "tfjob_extender_gangs_pending" in client.get("/metrics").text
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/debug/queue").json()["queue"][0]["gang"] == "default/mnist"
        page = client.get("/ui")
        assert page.status_code == 200
        assert "Queue, in rank order" in page.text
        for verb in ("/filter", "/prioritize", "/preempt"):
            refused = client.post(verb, content=b"{}")
            assert refused.status_code == 405
            assert "read-only" in refused.json()["error"]
        assert client.get("/filter").status_code == 404
        assert client.get("/debug/view?summary=perhaps").status_code == 400
