"""The extender verbs over HTTP, with payloads shaped exactly as kube-scheduler sends them."""

from __future__ import annotations

import threading

import orjson
import pytest

from extender.api.app import make_service
from extender.config import Settings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods
from tests.contract.listeners import ListenerClient, client_of
from tests.contract.support import NODES, assert_partition, filter_args, post, worker


def test_filter_plans_the_gang_and_steers_the_pod_to_its_planned_node(client: ListenerClient) -> None:
    reply = post(client, "filter", filter_args(worker()))
    assert reply["Error"] == ""
    assert len(reply["NodeNames"]) == 1
    assert_partition(reply, NODES)
    assert set(reply) == {"NodeNames", "Nodes", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


def test_a_steered_member_gets_its_planned_node_alone_and_no_reason_per_other_node(client: ListenerClient) -> None:
    """kube-scheduler reads per-node reasons only when no node is left; a steered member's reply carries none,
    so kube-scheduler decodes no reason per candidate on every member of a gang. The decision record keeps
    what each node was told."""
    post(client, "filter", filter_args(worker("mnist-ps-0")))
    many = [f"node-{i}" for i in range(3, 500)]
    reply = post(client, "filter", filter_args(worker("mnist-worker-1"), [*NODES, *many]))
    assert len(reply["NodeNames"]) == 1
    assert reply["FailedNodes"] == {} and reply["FailedAndUnresolvableNodes"] == {}
    record = client.get("/debug/decisions", params={"pod": "default/mnist-worker-1"}).json()["decisions"][0]
    assert record["outcome"] == "steered"
    assert sum(len(nodes) for nodes in record["unresolvable"].values()) == len(NODES) + len(many) - 1


def test_filter_answers_every_member_of_the_gang_from_the_same_plan(client: ListenerClient) -> None:
    planned = {
        name: post(client, "filter", filter_args(worker(name)))["NodeNames"]
        for name in ["mnist-worker-0", "mnist-ps-0", "mnist-worker-3", "mnist-worker-0"]
    }
    assert all(len(nodes) == 1 for nodes in planned.values())
    gang = client.get("/debug/gangs/default/mnist").json()
    assert gang["status"] == "admitted"
    assert len(gang["plan"]) == 5


def test_filter_accepts_lowercase_keys_null_fields_and_unknown_keys(client: ListenerClient) -> None:
    reply = post(client, "filter", {"pod": worker(), "nodes": None, "nodenames": NODES, "Extra": {"x": 1}})
    assert reply["Error"] == ""
    assert_partition(reply, NODES)


def test_filter_with_full_node_objects_echoes_the_feasible_nodes_unmodified(client: ListenerClient) -> None:
    pod = make_pod("plain", cpu="3", memory="1Gi")
    items = [make_node(n, cpu="4", memory="16Gi") | {"status": {"images": [{"names": ["x"]}]}} for n in NODES]
    reply = post(client, "filter", {"Pod": pod, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None})
    assert reply["NodeNames"] is None
    assert reply["Nodes"]["items"] == items
    assert reply["Error"] == ""


def test_plain_pod_gets_resource_fit_with_a_reason_per_rejected_node(client: ListenerClient) -> None:
    post(client, "filter", filter_args(worker()))  # the gang reserves 4 CPU on one node, 1 on another
    reply = post(client, "filter", filter_args(make_pod("plain", cpu="3500m", memory="1Gi")))
    assert_partition(reply, NODES)
    assert len(reply["NodeNames"]) == 1, "reserved capacity must count as used"
    reply = post(client, "filter", filter_args(make_pod("large", cpu="4500m", memory="1Gi")))
    assert_partition(reply, NODES)
    assert set(reply["FailedNodes"]) == set(NODES)
    assert all("insufficient" in reason for reason in reply["FailedNodes"].values())


def test_gang_that_cannot_fit_fails_every_node_with_an_actionable_reason(state: ClusterState) -> None:
    pods = tfjob_pods("big", ps=0, workers=9, cpu="2", memory="4Gi")
    for pod in pods:
        state.apply(Kind.POD, "ADDED", pod)
    state.apply(Kind.PODGROUP, "ADDED", make_podgroup("big", min_member=9))
    with client_of(make_service(Settings(), state, lambda: 1.0)) as client:
        reply = post(client, "filter", filter_args(pods[0]))
    assert reply["NodeNames"] == []
    assert set(reply["FailedNodes"]) == set(NODES)
    # 3 nodes × 4 CPU hold 6 pods of 2 CPU
    assert reply["FailedNodes"]["node-0"] == "gang default/big needs 9 pods (9 × 2 CPU, 4 GiB); best plan fits 6"


def test_prioritize_returns_a_bare_list_of_integer_scores(client: ListenerClient) -> None:
    post(client, "filter", filter_args(worker()))
    reply = post(client, "prioritize", filter_args(worker()))
    assert isinstance(reply, list)
    assert all(type(entry["Score"]) is int and 0 <= entry["Score"] <= 10 for entry in reply)
    assert [(entry["Host"], entry["Score"]) for entry in reply] == [(NODES[0], 10)], (
        "a steered pod's list names its planned node only: kube-scheduler adds nothing for hosts left out"
    )
    raw = client.post("/prioritize", content=orjson.dumps(filter_args(worker()))).content
    assert b'"Score":10' in raw and b".0" not in raw


def test_preempt_echoes_meta_victims_and_drops_nodes_without_victims(client: ListenerClient) -> None:
    payload = {
        "Pod": make_pod("plain", cpu="2"),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {
            "node-0": {"Pods": [{"UID": "a"}, {"UID": "b"}], "NumPDBViolations": 1},
            "node-1": {"Pods": [], "NumPDBViolations": 0},
        },
    }
    reply = post(client, "preempt", payload)
    assert reply == {"NodeNameToMetaVictims": {"node-0": {"Pods": [{"UID": "a"}, {"UID": "b"}], "NumPDBViolations": 1}}}


def test_preempt_with_full_victim_pods_answers_in_meta_form(client: ListenerClient) -> None:
    victim = make_pod("low", node="node-0", phase="Running", uid="victim-uid")
    payload = {
        "Pod": make_pod("plain", cpu="2"),
        "NodeNameToVictims": {"node-0": {"Pods": [victim], "NumPDBViolations": 0}},
        "NodeNameToMetaVictims": None,
    }
    reply = post(client, "preempt", payload)
    assert reply == {"NodeNameToMetaVictims": {"node-0": {"Pods": [{"UID": "victim-uid"}], "NumPDBViolations": 0}}}


def test_preempt_declines_pod_level_preemption_for_a_gang_member(client: ListenerClient) -> None:
    payload = {
        "Pod": worker(),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {"node-0": {"Pods": [{"UID": "a"}], "NumPDBViolations": 0}},
    }
    assert post(client, "preempt", payload) == {"NodeNameToMetaVictims": {}}


@pytest.mark.parametrize(
    ("verb", "body", "expected"),
    [
        pytest.param("filter", b"not json", "not JSON", id="a body that is not JSON gets an Error"),
        pytest.param("filter", b"[1, 2]", "JSON object", id="a JSON array gets an Error"),
        pytest.param("filter", b'{"NodeNames": ["a"]}', "Pod is missing", id="a request without Pod"),
        pytest.param("filter", b'{"Pod": {}, "NodeNames": "a"}', "NodeNames", id="NodeNames of the wrong type"),
        pytest.param(
            "preempt",
            b'{"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{}]}}}',
            "UID",
            id="a meta victim without UID",
        ),
    ],
)
def test_bad_requests_get_a_200_with_a_readable_error(
    client: ListenerClient, verb: str, body: bytes, expected: str
) -> None:
    reply = post(client, verb, body)
    assert expected in reply["Error"]


def test_a_failed_prioritize_is_an_empty_list_kube_scheduler_can_decode(
    client: ListenerClient, caplog: pytest.LogCaptureFixture
) -> None:
    assert post(client, "prioritize", b"{") == []
    assert "not JSON" in caplog.text


def test_repeated_node_names_are_answered_once(client: ListenerClient) -> None:
    pod = make_pod("plain", cpu="1", job="solo")
    reply = post(client, "filter", filter_args(pod, ["node-0", "node-1", "node-0", "node-1"]))
    assert reply["NodeNames"] == ["node-0", "node-1"]
    scores = post(client, "prioritize", filter_args(pod, ["node-2", "node-2", "node-0"]))
    assert [entry["Host"] for entry in scores] == ["node-2", "node-0"]


def test_a_request_never_changes_the_model(client: ListenerClient, state: ClusterState) -> None:
    before = state.snapshot()
    invented = make_pod("invented", node="node-0", phase="Running", cpu="4", group="mnist")
    reply = post(client, "filter", filter_args(invented))
    assert reply["NodeNames"] == [] and "not in the extender's model yet" in str(reply["FailedNodes"])
    post(client, "filter", filter_args(make_pod("stranger", node="node-1", phase="Running", cpu="3")))
    post(client, "prioritize", filter_args(make_pod("another", cpu="3")))
    after = state.snapshot()
    assert set(after.pods) == set(before.pods)
    assert {name: node.available for name, node in after.nodes.items()} == {
        name: node.available for name, node in before.nodes.items()
    }


def test_a_gang_member_seen_first_by_kube_scheduler_is_planned_once_its_watch_event_arrives(
    client: ListenerClient, state: ClusterState
) -> None:
    late = tfjob_pods("mnist", ps=1, workers=5, cpu="1", memory="2Gi")[-1]
    threading.Timer(0.03, state.apply, (Kind.POD, "ADDED", late)).start()
    reply = post(client, "filter", filter_args(late))
    assert len(reply["NodeNames"]) == 1, reply


def test_a_body_over_the_cap_is_refused_with_an_error(client: ListenerClient) -> None:
    names = [f"node-{i:06d}" for i in range(30_000)]
    reply = post(client, "filter", filter_args(worker(), names))
    assert "exceeds the limit" in reply["Error"]


def test_verbs_answer_cache_not_synced_before_the_model_has_synced() -> None:
    with client_of(make_service(Settings(), ClusterState(), lambda: 1.0)) as client:
        reply = post(client, "filter", filter_args(worker()))
        assert reply["Error"] == "tfjob-extender filter: cache not synced"
        assert client.get("/readyz").status_code == 503
        assert client.verbs.get("/readyz").status_code == 503, "the verb listener's probe says the same"


def test_percent_signs_in_errors_are_escaped_for_go() -> None:
    from extender.api.wire import encode_error

    assert orjson.loads(encode_error("50% used"))["Error"] == "50%% used"


def test_pods_of_other_schedulers_pass_through(client: ListenerClient) -> None:
    pod = make_pod("other", scheduler="default-scheduler", cpu="100")
    reply = post(client, "filter", filter_args(pod))
    assert reply["NodeNames"] == NODES
    scores = post(client, "prioritize", filter_args(pod))
    assert scores == [], "no preference: every host scores 0, so none is listed"


def test_a_member_recreated_under_the_same_name_waits_for_its_own_watch_event() -> None:
    """training-operator recreates an evicted worker under the same name; until the model has the new pod,
    its stale copy (bound, terminating) must not stand in for it, or the pod could bind without its gang."""
    pods = tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi")
    stale = make_pod(
        "mnist-worker-0", job="mnist", role="worker", group="mnist", node="node-0", phase="Running", uid="old"
    )
    stale["metadata"]["deletionTimestamp"] = "2026-03-01T10:00:00Z"
    state = cluster(
        *(make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(3)),
        stale,
        *(pod for pod in pods if pod["metadata"]["name"] != "mnist-worker-0"),
        make_podgroup("mnist", min_member=5),
        make_tfjob("mnist", workers=4),
    )
    with client_of(make_service(Settings(model_catch_up_s=0.1), state, lambda: 0.0)) as client:
        reply = post(client, "filter", filter_args(worker("mnist-worker-0")))
    assert reply["NodeNames"] == [], reply
    assert "not in the extender's model yet" in str(reply["FailedNodes"])
