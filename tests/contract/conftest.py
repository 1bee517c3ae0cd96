"""The extender's listeners over a synced model, and a client that speaks to them over real sockets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from extender.api.app import make_service
from extender.api.verbs import Service
from extender.config import ListenerLimits, Settings
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_podgroup, make_tfjob, tfjob_pods
from tests.contract.listeners import ListenerClient, client_of
from tests.contract.support import Clock


@pytest.fixture
def state() -> ClusterState:
    return cluster(
        *(make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(3)),
        *tfjob_pods("mnist", ps=1, workers=4, cpu="1", memory="2Gi"),
        make_podgroup("mnist", min_member=5),
        make_tfjob("mnist", workers=4),
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(state: ClusterState, clock: Clock) -> Service:
    return make_service(Settings(verb_limits=ListenerLimits(max_body_bytes=256 * 1024)), state, clock)


@pytest.fixture
def client(service: Service) -> Iterator[ListenerClient]:
    with client_of(service) as listener_client:
        yield listener_client
