"""A worker recreated in a running gang joins at once, beside its PS, never held for the whole gang again.

The cluster: two nodes of 4 CPU. TFJob `mnist` (PS + 4 workers of 1 CPU, PodGroup minMember 5) runs: the
PS and workers 0 and 1 on node-0, workers 2 and 3 on node-1, all bound a minute after they were created.
Worker 1 is evicted and training-operator recreates it (a new uid, created later); meanwhile a
higher-ranked gang `big` that has starved for long waits for room.
"""

from __future__ import annotations

from extender.policy.rank.queue import queue_of
from tests.builders import Obj, make_node, make_pod, make_podgroup, make_tfjob, waiting_job
from tests.unit.policy.loop import NOW, SETTINGS, Loop

CREATED = "2026-03-01T10:15:30Z"
BOUND = "2026-03-01T10:16:30Z"
RECREATED = "2026-03-01T11:00:00Z"
PLACES = {"ps-0": "node-0", "worker-0": "node-0", "worker-1": "node-0", "worker-2": "node-1", "worker-3": "node-1"}


def member(name: str, node: str, *, created: str = CREATED, uid: str | None = None) -> Obj:
    role, index = name.split("-")
    pod = make_pod(f"mnist-{name}", job="mnist", role=role, index=int(index), group="mnist", node=node, uid=uid)
    pod["metadata"]["creationTimestamp"] = created
    if node:
        pod["status"] = {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": BOUND}],
        }
    return pod


def running_mnist() -> list[Obj]:
    return [member(name, node) for name, node in PLACES.items()]


def scene() -> Loop:
    nodes = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    big = waiting_job("big", pods=3, cpu="3", priority=1000)
    return Loop(*nodes, *running_mnist(), make_podgroup("mnist", min_member=5), make_tfjob("mnist", workers=4), *big)


def recreate_worker_1(loop: Loop) -> None:
    loop.delete("mnist-worker-1")
    loop.add(member("worker-1", "", created=RECREATED, uid="uid-recreated"))


def test_a_recreated_worker_is_placed_alone_beside_its_ps() -> None:
    loop = scene()
    recreate_worker_1(loop)
    decision = loop.filter("mnist-worker-1")
    assert decision.outcome == "fit", decision.summary
    assert "node-0" in decision.feasible
    assert loop.snapshot.reservations == {}, "no plan for the whole gang"
    scores = loop.prioritize("mnist-worker-1", decision.feasible).scores
    assert scores["node-0"] == max(scores.values())
    assert loop.run_to_binding("mnist-worker-1") == "node-0"
    for name, node in PLACES.items():
        assert loop.pod(f"mnist-{name}").node_name == node


def test_a_gang_waiting_only_for_replacements_has_no_rank_in_the_queue() -> None:
    loop = scene()
    recreate_worker_1(loop)
    queue = queue_of(loop.snapshot, SETTINGS)
    summary = queue.summary_of_group("default/mnist")
    assert summary is not None and summary.satisfied and not summary.ages
    assert [rank.subject for rank in queue.waiting(NOW, SETTINGS)] == ["default/big"]


def test_members_created_with_the_gang_still_wait_for_the_whole_gang() -> None:
    nodes = [make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(2)]
    half = [member(name, node if name in ("ps-0", "worker-0") else "") for name, node in PLACES.items()]
    loop = Loop(*nodes, *half, make_podgroup("mnist", min_member=5), make_tfjob("mnist", workers=4))
    decision = loop.filter("mnist-worker-1")
    assert decision.outcome == "planned", decision.summary
    assert len(loop.snapshot.reservations) == 3
