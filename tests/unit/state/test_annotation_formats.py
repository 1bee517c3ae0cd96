"""The annotations the extender writes are read by every running version, the previous one included, while
a rolling upgrade runs both: each format is pinned here byte for byte as version 0.1.0 wrote and read it.
A change that fails this test changes what an older extender sees mid-upgrade; it needs a new annotation
name (read beside the old one for one release), not an edit of the old format."""

from __future__ import annotations

from extender.policy.core.views import PreemptionRecord
from extender.state.gang_annotations import (
    announced_preemption,
    gang_plan,
    plan_annotation,
    preemption_annotation,
    worker_plan,
)

GANG_PLAN_010 = (
    '{"expiresAt":1767225660.25,"pods":{"bert-ps-0":"node-1","bert-worker-0":"node-1","bert-worker-1":"node-2"},'
    '"uids":{"bert-ps-0":"uid-ps","bert-worker-0":"uid-w0","bert-worker-1":"uid-w1"}}'
)
"""`tfjob-extender.io/plan` on a PodGroup: pod name → node, the pods' uids, when the plan lapses (epoch s)."""
WORKER_PLAN_010 = '{"expiresAt":1767225660.25,"pods":{"bert-worker-3":"node-2"}}'
"""`tfjob-extender.io/worker-plan` on a TFJob: workers not created yet → node."""
PREEMPTION_010 = (
    '{"gang":"default/urgent","at":1767225600.5,"reason":"priority 100 over 0",'
    '"victims":{"default/batch-ps-0":"uid-b0","default/batch-worker-0":"uid-b1"},'
    '"scaledIn":[],"evicted":["default/batch"]}'
)
"""`tfjob-extender.io/preemption` on the preemptor's PodGroup: its victims (key → uid) and how they went."""
PLAN = {"bert-worker-1": "node-2", "bert-ps-0": "node-1", "bert-worker-0": "node-1"}
UIDS = {"bert-worker-0": "uid-w0", "bert-ps-0": "uid-ps", "bert-worker-1": "uid-w1"}
EXPIRES_AT = 1767225660.25


def test_a_gang_plan_is_written_and_read_as_before() -> None:
    assert plan_annotation(PLAN, EXPIRES_AT, UIDS) == GANG_PLAN_010
    read = gang_plan(GANG_PLAN_010)
    assert read["plan_expires"] == EXPIRES_AT
    assert sorted(read["plan"]) == sorted((name, node, UIDS[name]) for name, node in PLAN.items())


def test_a_worker_plan_is_written_and_read_as_before() -> None:
    assert plan_annotation({"bert-worker-3": "node-2"}, EXPIRES_AT) == WORKER_PLAN_010
    assert worker_plan(WORKER_PLAN_010, "pods", "expires") == {
        "pods": (("bert-worker-3", "node-2"),),
        "expires": EXPIRES_AT,
    }


def test_a_preemption_announcement_is_written_and_read_as_before() -> None:
    victims = {"default/batch-worker-0": "uid-b1", "default/batch-ps-0": "uid-b0"}
    record = PreemptionRecord(
        "default/urgent", frozenset(victims), (), ("default/batch",), "priority 100 over 0", 1767225600.5
    )
    assert preemption_annotation(record, victims) == PREEMPTION_010
    announced = announced_preemption(PREEMPTION_010, "default/urgent")["preemption"]
    assert announced.victims == frozenset(victims) and announced.victim_uids == frozenset(victims.values())
    assert (announced.evicted, announced.at, announced.reason) == (("default/batch",), 1767225600.5, record.reason)
