"""The observe listener: probes and metrics always, the debug routes and the page only with
`--observe-debug`, no verbs, nothing but GET; and the verb listener beside it serves none of these."""

from __future__ import annotations

from extender.api.verbs import Service
from tests.contract.listeners import ListenerClient, client_of_server, observe_server

OBSERVE_ONLY = ("/debug/state", "/debug/queue", "/debug/explain/default/mnist", "/debug/view", "/ui", "/metrics")


def test_by_default_the_observe_listener_serves_only_metrics_and_probes(service: Service) -> None:
    with client_of_server(observe_server(service, debug_routes=False)) as client:
        assert "tfjob_extender_gangs_pending" in client.get("/metrics").text
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json()["ready"] is True
        for path in ("/debug/state", "/debug/queue", "/debug/explain/default/mnist", "/debug/view", "/ui"):
            assert client.get(path).status_code == 404, path


def test_with_debug_routes_the_observe_listener_serves_debug_and_the_page_but_no_verbs(service: Service) -> None:
    with client_of_server(observe_server(service)) as client:
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


def test_the_verb_listener_answers_the_observe_routes_with_a_json_404(client: ListenerClient) -> None:
    for path in OBSERVE_ONLY:
        missing = client.verbs.get(path)
        assert missing.status_code == 404, path
        assert missing.headers["content-type"] == "application/json"
        assert "the verb listener serves /filter, /prioritize, /preempt" in missing.json()["error"]
        assert client.get(path).status_code == 200, f"{path} on the observe listener"
    assert client.verbs.post("/debug/state", content=b"{}").status_code == 404
