"""Properties that hold for every cluster and every event sequence, checked on random small worlds.

A world is 1-3 nodes, 1-3 TFJob gangs (sometimes two of them linked into a GangGroup, sometimes one
member created late) and a few plain pods. Random steps then schedule a pod (filter, prioritize the
feasible nodes, maybe bind to the best, as kube-scheduler would), sweep the queue (schedule every pending
pod once), finish a bound pod, fail or delete a pending one, let time pass, or create the late member.
After every step:
- each candidate node is in exactly one of feasible / failed / unresolvable;
- a feasible node is the pod's planned node, or has room for it beyond every reservation;
- prioritize scores every candidate with an int in 0..10;
- no partial gang holds reservations: every gang with a reserved member has minMember members placed;
- no node is over-committed: bound requests plus reservations stay within allocatable;
- the per-node reservation totals agree with the reservations ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.resources import EMPTY, total
from extender.policy.gang.state import gang_state, is_satisfied
from tests.builders import Obj, make_node, make_pod, make_podgroup, tfjob_pods
from tests.unit.policy.loop import Loop

GHOST = "ghost"
"""A candidate kube-scheduler knows and the model does not."""


@dataclass
class World:
    objects: list[Obj]
    late: list[Obj] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    objects: list[Obj] = [
        make_node(f"node-{i}", cpu=str(draw(st.integers(1, 6))), memory=f"{draw(st.integers(2, 16))}Gi")
        for i in range(draw(st.integers(1, 3)))
    ]
    world = World(objects)
    jobs = draw(st.integers(1, 3))
    linked = jobs >= 2 and draw(st.booleans())
    for j in range(jobs):
        members = tfjob_pods(
            f"job{j}",
            ps=draw(st.integers(0, 1)),
            workers=draw(st.integers(1, 4)),
            cpu=draw(st.sampled_from(["500m", "1", "2", "3"])),
            memory=draw(st.sampled_from(["512Mi", "1Gi", "3Gi"])),
        )
        min_member = draw(st.integers(1, len(members)))
        gang = ["default/job0", "default/job1"] if linked and j < 2 else None
        objects.append(make_podgroup(f"job{j}", min_member=min_member, timeout_s=60, gang_group=gang))
        if j == 0 and draw(st.booleans()):
            world.late.append(members.pop())
        objects.extend(members)
    for k in range(draw(st.integers(0, 2))):
        objects.append(make_pod(f"plain-{k}", cpu=draw(st.sampled_from(["500m", "1", "2"]))))
    world.pods = [obj["metadata"]["name"] for obj in [*objects, *world.late] if obj["kind"] == "Pod"]
    return world


Step = tuple[str, int, int, bool]
steps = st.lists(
    st.tuples(
        st.sampled_from(["schedule", "schedule", "sweep", "finish", "fail", "delete", "tick", "arrive"]),
        st.integers(0, 7),
        st.integers(0, 31),
        st.booleans(),
    ),
    max_size=30,
)


def check_decisions(loop: Loop, name: str, candidates: list[str], bind: bool) -> None:
    decision = loop.filter(name, candidates)
    sorted_out = [*decision.feasible, *decision.failed, *decision.unresolvable]
    assert sorted(sorted_out) == sorted(candidates), f"{name}: {decision}"
    snapshot = loop.snapshot
    pod = snapshot.pods[f"default/{name}"]
    own = snapshot.reservations.get(pod.key)
    for node in decision.feasible:
        # A feasible node is the pod's planned node, or one with room beyond every reservation.
        assert node == own.node if own is not None else pod.requests.fits_in(snapshot.nodes[node].available)
    scores = loop.prioritize(name, candidates).scores
    assert set(scores) == set(candidates) or (not scores and not pod.job and not pod.group), "every node, or none"
    assert all(type(score) is int and 0 <= score <= 10 for score in scores.values()), scores
    if bind and decision.feasible:
        best = min(decision.feasible, key=lambda node: (-scores.get(node, 0), node))
        assert best != GHOST
        loop.bind(name, best)


def check_model(loop: Loop) -> None:
    snapshot = loop.snapshot
    for reservation in snapshot.reservations.values():
        assert snapshot.pods[reservation.pod].pending, reservation
        state = gang_state(snapshot, reservation.group)
        assert is_satisfied(snapshot, state), f"partial gang {state.key} holds reservations"
    for name, node in snapshot.nodes.items():
        held = total(r.requests for r in snapshot.reservations.values() if r.node == name)
        assert node.reserved == held == snapshot.reserved_by_node.get(name, EMPTY)
        used = node.requested + node.reserved
        over = used.shortfall(node.node.allocatable)
        assert over.is_empty(), f"{name} over-committed by {over}"


@settings(max_examples=200, deadline=None)
@given(worlds(), steps)
def test_every_step_keeps_the_invariants(world: World, plan: list[Step]) -> None:
    loop = Loop(*world.objects)
    nodes = loop.nodes()
    for op, index, mask, flag in plan:
        name = world.pods[index % len(world.pods)]
        pod = loop.snapshot.pods.get(f"default/{name}")
        if op == "schedule" and pod is not None and pod.pending:
            offered = [node for bit, node in enumerate([*nodes, GHOST]) if mask >> bit & 1] or nodes
            check_decisions(loop, name, offered, flag)
        elif op == "sweep":
            for other in world.pods:
                if (member := loop.snapshot.pods.get(f"default/{other}")) is not None and member.pending:
                    check_decisions(loop, other, nodes, flag)
        elif op == "finish" and pod is not None and pod.holds_node:
            loop.finish(name)
        elif op == "fail" and pod is not None and pod.pending:
            loop.finish(name, "Failed")
        elif op == "delete" and pod is not None and pod.pending:
            loop.delete(name)
        elif op == "tick":
            loop.now += mask * 3  # 0..93 seconds; plans live 60
            loop.state.release_expired(loop.now)
        elif op == "arrive" and world.late:
            loop.add(world.late.pop())
        check_model(loop)
