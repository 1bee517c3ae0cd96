"""Decisions commit only on the state they were made on: a plan overtaken by other commits or by changes
to its gang is refused, and concurrent committers never over-commit a node."""

from __future__ import annotations

import random
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.ledger import LedgerChange
from extender.policy.core.resources import CPU, MEMORY, PODS, Resources
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.state.commits import decide_and_commit
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import cluster, make_node, make_pod, make_podgroup

TWO_CPU = Resources({CPU: 2000, MEMORY: 2**30, PODS: 1})


def reservation(pod: str, node: str, group: str = "default/g") -> Reservation:
    return Reservation(f"default/{pod}", group, node, TWO_CPU, 1e12)


def test_a_change_on_an_unchanged_model_is_applied() -> None:
    state = cluster(make_node("node-0", cpu="4"), make_pod("p", group="g"), make_podgroup("g", min_member=1))
    decided = state.snapshot().generation
    assert state.commit(LedgerChange(reserve=(reservation("p", "node-0"),)), decided_on=decided)
    assert "default/p" in state.snapshot().reservations


def test_a_plan_for_room_another_commit_took_is_refused() -> None:
    state = cluster(
        make_node("node-0", cpu="4"),
        *(make_pod(name, group=name) for name in ("a", "b", "c")),
        *(make_podgroup(name, min_member=1) for name in ("a", "b", "c")),
    )
    decided = state.snapshot().generation
    first = LedgerChange(reserve=(reservation("a", "node-0", "default/a"), reservation("b", "node-0", "default/b")))
    second = LedgerChange(reserve=(reservation("c", "node-0", "default/c"),))
    assert state.commit(first, decided_on=decided)
    assert not state.commit(second, decided_on=decided), "node-0 has no room left for c"
    assert state.refused_commits == 1


def test_a_plan_whose_gang_changed_meanwhile_is_refused_but_an_unrelated_change_is_not() -> None:
    state = cluster(
        make_node("node-0", cpu="8"),
        make_pod("p", group="g"),
        make_podgroup("g", min_member=1),
        make_pod("other", group="h"),
        make_podgroup("h", min_member=1),
    )
    decided = state.snapshot().generation
    state.apply(Kind.POD, "ADDED", make_pod("unrelated", node="node-0", phase="Running", cpu="1"))
    assert state.commit(LedgerChange(reserve=(reservation("p", "node-0"),)), decided_on=decided)
    decided = state.snapshot().generation
    state.apply(Kind.POD, "ADDED", make_pod("late", group="h"))
    assert not state.commit(LedgerChange(reserve=(reservation("other", "node-0", "default/h"),)), decided_on=decided)


def test_the_room_of_pods_being_removed_counts_as_free_for_the_plan_that_removes_them() -> None:
    state = cluster(make_node("node-0", cpu="2"), make_pod("victim", node="node-0", phase="Running", cpu="2"))
    state.apply(Kind.POD, "ADDED", make_pod("p", group="g"))
    decided = state.snapshot().generation
    state.apply(Kind.NODE, "ADDED", make_node("node-1", cpu="1"))
    plan = LedgerChange(reserve=(reservation("p", "node-0"),), leaving=frozenset({"default/victim"}))
    assert state.commit(plan, decided_on=decided)


def test_the_seam_decides_again_when_its_first_decision_is_overtaken() -> None:
    state = cluster(make_node("node-0", cpu="4"), make_node("node-1", cpu="4"), make_pod("p", group="g"))
    calls: list[int] = []

    def decide(snapshot: ClusterSnapshot) -> LedgerHolder:
        calls.append(snapshot.generation)
        if len(calls) == 1:  # another writer fills node-0 between this decision and its commit
            state.apply(Kind.POD, "ADDED", make_pod("filler", node="node-0", phase="Running", cpu="4"))
        free = [name for name, node in snapshot.nodes.items() if TWO_CPU.fits_in(node.available)]
        return LedgerHolder(LedgerChange(reserve=(reservation("p", sorted(free)[0]),)))

    outcome = decide_and_commit(state, decide)
    assert outcome.committed and len(calls) == 2
    assert state.snapshot().reservations["default/p"].node == "node-1"


class LedgerHolder:
    def __init__(self, change: LedgerChange) -> None:
        self.change = change


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), committers=st.integers(2, 4))
def test_concurrent_committers_never_over_commit_a_node(seed: int, committers: int) -> None:
    state = ClusterState()
    for kind in Kind:
        state.mark_synced(kind)
    for n in range(3):
        state.apply(Kind.NODE, "ADDED", make_node(f"node-{n}", cpu="6"))
    for i in range(40):
        state.apply(Kind.POD, "ADDED", make_pod(f"p{i}", group=f"g{i}", cpu="2"))
    violations: list[str] = []

    def commit_plans(worker: int) -> None:
        rng = random.Random(seed + worker)
        for _ in range(60):
            pod = f"p{rng.randrange(40)}"

            def decide(snapshot: ClusterSnapshot, pod: str = pod) -> LedgerHolder:
                nodes = [n for n, s in sorted(snapshot.nodes.items()) if TWO_CPU.fits_in(s.available)]
                if not nodes:
                    return LedgerHolder(LedgerChange())
                chosen = rng.choice(nodes)
                return LedgerHolder(LedgerChange(reserve=(reservation(pod, chosen, f"default/g{pod[1:]}"),)))

            decide_and_commit(state, decide)
            if rng.random() < 0.2:
                state.commit(LedgerChange(release_groups=(f"default/g{rng.randrange(40)}",)), decided_on=None)
            for name, node in state.snapshot().nodes.items():
                if any(value < 0 for _, value in node.available.items()):
                    violations.append(f"{name}: {node.available}")

    threads = [threading.Thread(target=commit_plans, args=(worker,)) for worker in range(committers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert violations == []
