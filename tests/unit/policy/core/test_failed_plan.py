"""`FailedPlan.covers`: which candidate nodes a failed plan answers for, and how cheaply it tells."""

from __future__ import annotations

from collections.abc import Iterable

from extender.policy.core.snapshot import FailedPlan, Offered

OFFERED = ("node-2", "node-0", "node-1")


class LookedUp(frozenset[str]):
    """A node set that counts the calls that look names up in it."""

    lookups = 0

    def issuperset(self, other: Iterable[object]) -> bool:
        LookedUp.lookups += 1
        return super().issuperset(other)


def failed(offered: Offered | None) -> FailedPlan:
    return FailedPlan("default/g", "no room", 0, 0, 0.0, 0, 4, offered)


def test_a_plan_tried_on_some_nodes_covers_them_in_any_order_and_fewer_but_not_more() -> None:
    plan = failed(Offered("default/g-worker-0", frozenset(OFFERED), OFFERED))
    assert plan.covers(OFFERED)
    assert plan.covers(("node-0", "node-1", "node-2"))
    assert plan.covers(["node-1"])
    assert plan.covers(())
    assert not plan.covers(("node-0", "node-3"))
    assert not plan.covers(("ghost",))


def test_a_plan_tried_on_every_node_covers_any_candidates() -> None:
    plan = failed(None)
    assert plan.covers(("anything", "at-all"))
    assert plan.tried_on == "on every node"


def test_the_same_candidate_tuple_is_recognised_without_looking_up_its_names() -> None:
    """The tuple the plan was made from at once; another tuple once, then by identity (the wire layer
    hands back one tuple for a list whose bytes repeat, from their second sighting on)."""
    plan = failed(Offered("default/g-worker-0", LookedUp(OFFERED), OFFERED))
    reordered = tuple(reversed(OFFERED))
    outside = ("node-0", "node-3")
    LookedUp.lookups = 0
    assert plan.covers(OFFERED)
    assert LookedUp.lookups == 0
    assert plan.covers(reordered) and plan.covers(reordered)
    assert not plan.covers(outside) and not plan.covers(outside)
    assert LookedUp.lookups == 2


def test_where_it_was_tried_names_the_member_and_counts_the_nodes() -> None:
    one = failed(Offered("default/g-ps-0", frozenset({"node-0"})))
    three = failed(Offered("default/g-worker-0", frozenset(OFFERED)))
    assert one.tried_on == "with default/g-ps-0 on the 1 node kube-scheduler offered it"
    assert three.tried_on == "with default/g-worker-0 on the 3 nodes kube-scheduler offered it"
