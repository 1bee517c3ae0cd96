"""`/filter` on a gang kube-scheduler gates, asked before the watch delivered every member.

kube-scheduler lets a `scheduling.k8s.io` gang's pods through only once `minCount` exist, so a model
missing members is behind: the verb decides again for up to `model_catch_up_s` and plans the whole gang
when the members arrive meanwhile, or answers plain fit when they do not.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import orjson

from extender.api.app import make_service
from extender.config import Settings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.contract.listeners import client_of
from tests.contract.support import NODES, NOW, gang_with_members_unseen


def filter_reply(state: ClusterState, pod: dict[str, Any], settings: Settings) -> tuple[dict[str, Any], float]:
    with client_of(make_service(settings, state, lambda: NOW)) as client:
        started = time.monotonic()
        body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": NODES})
        reply: dict[str, Any] = client.post("/filter", content=body).json()
        return reply, time.monotonic() - started


def test_members_the_watch_delivers_meanwhile_are_planned_with_the_gang() -> None:
    state, pods = gang_with_members_unseen(workers=4, unseen=2)

    def watch_catches_up() -> None:
        time.sleep(0.1)
        for pod in pods[3:]:
            state.apply(Kind.POD, "ADDED", pod)

    threading.Thread(target=watch_catches_up, daemon=True).start()
    reply, _ = filter_reply(state, pods[0], Settings(model_catch_up_s=5.0))
    assert len(reply["NodeNames"]) == 1, reply
    assert len(state.snapshot().reservations) == 5, "the whole gang is planned"


def test_members_that_never_arrive_leave_plain_fit_after_the_wait() -> None:
    state, pods = gang_with_members_unseen(workers=4, unseen=2)
    reply, waited_s = filter_reply(state, pods[0], Settings(model_catch_up_s=0.2))
    assert reply["NodeNames"] == NODES
    assert 0.2 <= waited_s < 2.0
    assert state.snapshot().reservations == {}
