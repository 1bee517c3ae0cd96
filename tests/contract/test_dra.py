"""A gang whose pods claim DRA devices is left to kube-scheduler's DRA plugin: over the wire, `filter`
passes every node through, `prioritize` has no preference, and `/debug/gangs` and explain say so.

The cluster: three nodes of 4 CPU; TFJob `dra` (PS + 4 workers of 1 CPU, PodGroup minMember 5) whose
workers each claim a GPU through a ResourceClaim template, so the extender cannot see what they need.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from extender.api.app import make_service
from extender.config import Settings
from tests.builders import cluster, make_node, make_podgroup, make_tfjob, tfjob_pods
from tests.contract.listeners import ListenerClient, client_of
from tests.contract.support import NODES, Clock, assert_partition, filter_args, post

CLAIM = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


def dra_pods() -> list[dict[str, Any]]:
    pods = tfjob_pods("dra", ps=1, workers=4, cpu="1", memory="2Gi")
    for pod in pods:
        if "worker" in pod["metadata"]["name"]:
            pod["spec"]["resourceClaims"] = CLAIM
            pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pods


def pod_named(name: str) -> dict[str, Any]:
    return next(pod for pod in dra_pods() if pod["metadata"]["name"] == name)


@pytest.fixture
def dra_client() -> Iterator[ListenerClient]:
    state = cluster(
        *(make_node(name, cpu="4", memory="16Gi") for name in NODES),
        *dra_pods(),
        make_podgroup("dra", min_member=5),
        make_tfjob("dra", workers=4),
    )
    with client_of(make_service(Settings(), state, Clock())) as client:
        yield client


@pytest.mark.parametrize("name", ["dra-worker-0", "dra-ps-0"])
def test_filter_passes_every_node_through_for_a_gang_with_claims(dra_client: ListenerClient, name: str) -> None:
    reply = post(dra_client, "filter", filter_args(pod_named(name)))
    assert reply["Error"] == ""
    assert reply["NodeNames"] == NODES
    assert_partition(reply, NODES)
    assert dra_client.get("/debug/gangs/default/dra").json()["plan"] == []


def test_a_claiming_pod_the_model_has_not_seen_passes_through(dra_client: ListenerClient) -> None:
    stranger = pod_named("dra-worker-0")
    stranger["metadata"] |= {"name": "other-0", "uid": "uid-other-0"}
    stranger["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "other"
    reply = post(dra_client, "filter", filter_args(stranger))
    assert reply["NodeNames"] == NODES


def test_prioritize_has_no_preference_for_a_gang_with_claims(dra_client: ListenerClient) -> None:
    reply = post(dra_client, "prioritize", filter_args(pod_named("dra-ps-0")))
    assert isinstance(reply, list)
    assert all(entry["Score"] == 0 for entry in reply), "no node is preferred (zeros may be left out)"


def test_debug_gangs_and_explain_say_the_gang_is_left_to_dra(dra_client: ListenerClient) -> None:
    gang = dra_client.get("/debug/gangs/default/dra").json()
    assert gang["status"] == "left-to-dra"
    assert "DRA plugin" in gang["why"]
    explained = dra_client.get("/debug/explain/default/dra").json()
    assert "DRA plugin" in explained["leftAlone"]
    assert "DRA plugin" in explained["summary"]
