"""The read-only introspection routes on the observe listener, the probes on both listeners, and offline mode
reading back what `/debug/state` wrote."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from extender.__main__ import main
from extender.api.app import make_service
from extender.config import Settings
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import make_pod, tfjob_pods
from tests.contract.listeners import ListenerClient, client_of


def filter_worker(client: ListenerClient, name: str = "mnist-worker-0") -> None:
    pod = next(p for p in tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi") if p["metadata"]["name"] == name)
    body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": ["node-0", "node-1", "node-2"]})
    assert client.post("/filter", content=body).json()["Error"] == ""


def test_health_and_readiness_on_both_listeners(client: ListenerClient) -> None:
    for listener in (client.verbs, client.observe):
        assert listener.get("/healthz").json() == {"status": "ok"}
        ready = listener.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["ready"] is True
        assert all(ready.json()["synced"].values())


def test_gang_view_explains_a_pending_gang_and_then_shows_its_plan(client: ListenerClient) -> None:
    before = client.get("/debug/gangs/default/mnist").json()
    assert before["status"] == "pending"
    assert before["members"] == {"pending": ["mnist-ps-0", *(f"mnist-worker-{i}" for i in range(4))]}
    filter_worker(client)
    after = client.get("/debug/gangs/default/mnist").json()
    assert after["status"] == "admitted"
    assert sorted(after["members"]) == ["reserved"]
    assert {entry["pod"] for entry in after["plan"]} == {
        f"default/mnist-{p}" for p in ["ps-0", "worker-0", "worker-1", "worker-2", "worker-3"]
    }
    assert all(entry["expiresInSeconds"] == 60.0 for entry in after["plan"])
    listing = client.get("/debug/gangs").json()
    assert [g["podGroup"] for g in listing["gangs"]] == ["default/mnist"]


def test_unknown_gang_is_a_404_with_a_reason(client: ListenerClient) -> None:
    response = client.get("/debug/gangs/default/nope")
    assert response.status_code == 404
    assert "default/nope" in response.json()["error"]


def test_decisions_keep_per_node_reasons_and_scores(client: ListenerClient) -> None:
    filter_worker(client)
    pod = make_pod("solo", cpu="3500m", job="solo")
    client.post("/filter", content=orjson.dumps({"Pod": pod, "NodeNames": ["node-0", "node-1", "node-2"]}))
    client.post("/prioritize", content=orjson.dumps({"Pod": pod, "NodeNames": ["node-2"]}))
    decisions = client.get("/debug/decisions", params={"pod": "default/solo"}).json()["decisions"]
    assert [d["verb"] for d in decisions] == ["prioritize", "filter"]
    assert decisions[1]["failed"], "the rejected nodes are listed under their reason"
    assert "node-2" in decisions[0]["scores"]


def test_metrics_expose_latency_decisions_and_pending_gangs(client: ListenerClient) -> None:
    text = client.get("/metrics").text
    assert "tfjob_extender_gangs_pending 1.0" in text
    filter_worker(client)
    text = client.get("/metrics").text
    assert 'tfjob_extender_verb_duration_seconds_count{verb="filter"} 1.0' in text
    assert 'tfjob_extender_decisions_total{outcome="planned",verb="filter"} 1.0' in text
    assert "tfjob_extender_gangs_pending 0.0" in text


def test_debug_state_dump_loads_back_into_the_same_model(client: ListenerClient, tmp_path: Path) -> None:
    filter_worker(client)
    dump = client.get("/debug/state").json()
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(dump))
    reloaded = ClusterState()
    load_snapshot_file(reloaded, path)
    with client_of(make_service(Settings(), reloaded, lambda: 1_800_000_000.0)) as again:
        assert again.get("/debug/state").json()["items"] == dump["items"]
        assert again.get("/debug/gangs/default/mnist").json()["status"] == "admitted"


def test_serve_refuses_an_unreadable_snapshot_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: lots}}\n")
    assert main(["serve", "--cluster-snapshot", str(bad)]) == 2
    assert "Node n: status.allocatable: not a resource quantity: 'lots'" in capsys.readouterr().err
