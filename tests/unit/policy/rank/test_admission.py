"""Rank-ordered admission: a lower-ranked gang starts only where it delays no higher-ranked waiting gang."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from extender.policy.core.settings import PolicySettings
from extender.policy.rank.ranking import gang_rank
from tests.builders import Obj, make_node, make_pod, make_podgroup
from tests.unit.policy.loop import Loop

CREATED = "2026-03-01T10:00:00Z"
SOON = datetime.fromisoformat(CREATED).timestamp() + 30
"""Half a minute after the gangs were created: nobody is starving yet."""
LATER = SOON + 3600


def gang(name: str, *, pods: int, cpu: str = "1", priority: int = 0, created: str = CREATED) -> list[Obj]:
    members = [make_pod(f"{name}-{i}", group=name, cpu=cpu, priority=priority) for i in range(pods)]
    group = make_podgroup(name, min_member=pods)
    group["metadata"]["creationTimestamp"] = created
    return [*members, group]


def nodes(count: int, cpu: str = "4") -> list[Obj]:
    return [make_node(f"node-{i}", cpu=cpu, memory="64Gi") for i in range(count)]


def test_a_lower_ranked_gang_yields_when_it_would_delay_a_higher_ranked_one_that_fits() -> None:
    # 8 CPU: "high" (priority 10) needs 6, "low" needs 4: only one of them fits
    loop = Loop(*nodes(2), *gang("high", pods=6, priority=10), *gang("low", pods=4), now=SOON)
    decision = loop.filter("low-0")
    assert decision.outcome == "yielding"
    assert set(decision.failed.values()) == {
        "gang default/low waits: starting it would delay higher-ranked gang default/high"
    }
    assert loop.snapshot.reservations == {}
    assert loop.filter("high-0").outcome == "planned"


def test_both_start_when_there_is_room_for_both() -> None:
    loop = Loop(*nodes(3), *gang("high", pods=6, priority=10), *gang("low", pods=4), now=SOON)
    assert loop.filter("low-0").outcome == "planned"
    assert loop.filter("high-0").outcome == "planned"


def test_a_lower_ranked_gang_backfills_capacity_the_higher_one_cannot_use() -> None:
    # "high" needs 12 CPU and only 8 exist free: it cannot start now, so "low" may use the room
    loop = Loop(
        *nodes(3),
        make_pod("busy", cpu="4", node="node-2", phase="Running", priority=1000),
        *gang("high", pods=12, priority=10),
        *gang("low", pods=4),
        now=SOON,
    )
    assert loop.filter("low-0").outcome == "planned"


def test_capacity_is_held_for_a_starving_gang() -> None:
    settings = replace(PolicySettings(), starvation_limit_s=60.0, starving_reservations=1, starving_hold="block")
    loop = Loop(
        *nodes(3),
        make_pod("busy", cpu="4", node="node-2", phase="Running", priority=1000),
        *gang("old", pods=12, created="2026-03-01T09:00:00Z"),
        *gang("new", pods=4, priority=0),
        settings=settings,
        now=LATER,
    )
    decision = loop.filter("new-0")
    assert decision.outcome == "yielding", decision.summary
    assert "capacity is held for starving gang default/old" in decision.summary


def test_a_starving_gang_larger_than_the_cluster_holds_nothing_back() -> None:
    settings = replace(PolicySettings(), starvation_limit_s=60.0)
    loop = Loop(
        *nodes(3), *gang("giant", pods=40, created="2026-03-01T09:00:00Z"), *gang("new", pods=4), settings=settings
    )
    assert loop.filter("new-0").outcome == "planned"


def test_a_gang_still_missing_members_holds_nothing_back() -> None:
    incomplete = gang("high", pods=6, priority=10)
    incomplete[-1]["spec"]["minMember"] = 7
    loop = Loop(*nodes(2), *incomplete, *gang("low", pods=4), now=SOON)
    assert loop.filter("low-0").outcome == "planned"


def tfjob_gang(name: str, *, pods: int, memory: str, created: str) -> list[Obj]:
    """A gang whose TFJob declares its per-pod requests (so it has a KOD2 weight)."""
    container = {"name": "tensorflow", "resources": {"requests": {"cpu": "1", "memory": memory}}}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": pods, "template": {"spec": {"containers": [container]}}}}},
    }
    members = [
        make_pod(f"{name}-{i}", group=name, job=name, role="worker", index=i, memory=memory) for i in range(pods)
    ]
    group = make_podgroup(name, min_member=pods)
    group["metadata"]["creationTimestamp"] = created
    return [*members, group, job]


def test_a_starving_gang_holds_capacity_even_against_heavier_gangs_of_its_priority_class() -> None:
    settings = replace(
        PolicySettings(),
        starvation_limit_s=60.0,
        aging_rate_per_s=1e-9,
        starving_reservations=1,
        starving_hold="block",
    )
    recent = datetime.fromtimestamp(LATER - 10, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    loop = Loop(
        *nodes(3),
        make_pod("busy", cpu="4", node="node-2", phase="Running", priority=1000),
        *tfjob_gang("old", pods=12, memory="8Gi", created="2026-03-01T09:00:00Z"),
        *tfjob_gang("small", pods=2, memory="1Gi", created=recent),
        settings=settings,
        now=LATER,
    )
    old = gang_rank(loop.snapshot, "default/old", LATER, settings)
    small = gang_rank(loop.snapshot, "default/small", LATER, settings)
    assert old.starving and not small.starving
    assert small.weight > old.weight, "less memory per worker: the small gang weighs more"
    decision = loop.filter("small-0")
    assert decision.outcome == "yielding", decision.summary
    assert "starving gang default/old" in decision.summary
