"""A TFJob not submitted yet, as the model would hold it: the pods and PodGroup training-operator would create
(names, labels, scheduler, priority, `minMember`), a snapshot with them added that leaves the model's own
snapshot as it was, and a gang queue equal to the one built from scratch on that snapshot."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.policy.core.frozenmap import CowMap, with_entries
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import Role
from extender.policy.rank.queue import build_queue, queue_of
from extender.state.would_be import NotAskable, with_would_be, would_be
from tests.builders import cluster, make_node, make_podgroup, make_sized_tfjob, tfjob_pods

SCHEDULER = "tfjob-scheduler"


def manifest(*, workers: int = 2, **template_spec: Any) -> dict[str, Any]:
    job = make_sized_tfjob("mnist", workers=workers, cpu="2", memory="4Gi", min_workers=1)
    del job["metadata"]["namespace"], job["metadata"]["creationTimestamp"]
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    for replica in job["spec"]["tfReplicaSpecs"].values():
        replica["template"]["metadata"] = {"labels": {"team": "vision"}}
        replica["template"]["spec"].update(template_spec)
    return job


def test_the_pods_and_podgroup_are_what_training_operator_would_create() -> None:
    would = would_be(
        manifest(nodeSelector={"pool": "train"}), scheduler_name=SCHEDULER, priority_classes={}, max_pods=10
    )
    assert would.job.key == "default/mnist" and not would.job.succeeded, "a submitted job has no status yet"
    assert [pod.key for pod in would.pods] == ["default/mnist-ps-0", "default/mnist-worker-0", "default/mnist-worker-1"]
    assert [(pod.role, pod.index) for pod in would.pods] == [(Role.PS, 0), (Role.WORKER, 0), (Role.WORKER, 1)]
    for pod in would.pods:
        assert (pod.group, pod.job, pod.scheduler_name) == ("default/mnist", "default/mnist", SCHEDULER)
        assert pod.pending and pod.node_selector == (("pool", "train"),)
    assert would.group.key == "default/mnist" and would.group.owner_job == "default/mnist"
    assert would.group.min_member == 3


def test_the_pods_take_their_priority_class_and_the_podgroup_its_scheduling_policy() -> None:
    job = manifest(priorityClassName="high")
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 2, "scheduleTimeoutSeconds": 30}}
    job["metadata"] = {"generateName": "mnist-", "namespace": "team-a"}
    would = would_be(job, scheduler_name=SCHEDULER, priority_classes={"high": 1000}, max_pods=10)
    assert {pod.priority for pod in would.pods} == {1000}
    assert would.job.key == "team-a/mnist-what-if"
    assert (would.group.min_member, would.group.schedule_timeout_s) == (2, 30.0)


def claims_devices(job: dict[str, Any]) -> None:
    job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["resourceClaims"] = [{"name": "gpu"}]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda job: job.update(kind="PyTorchJob"), "not a TFJob"),
        (lambda job: job["metadata"].update(name="Not_A_Name"), "metadata.name"),
        (lambda job: job["spec"]["tfReplicaSpecs"]["Worker"].update(replicas=50), "asks for 51 pods"),
        (lambda job: job["spec"].update(tfReplicaSpecs={}), "asks for no pods"),
        (claims_devices, "claims devices"),
    ],
)
def test_what_cannot_be_answered_for_is_refused_with_why(change: Any, words: str) -> None:
    job = manifest()
    change(job)
    with pytest.raises(NotAskable, match=words):
        would_be(job, scheduler_name=SCHEDULER, priority_classes={}, max_pods=10)


def test_the_snapshot_with_the_job_leaves_the_models_as_it_was_and_queues_it_as_from_scratch() -> None:
    settings = PolicySettings()
    state = cluster(
        make_node("node-0", cpu="4", memory="16Gi"),
        *tfjob_pods("resnet", workers=3, cpu="1", memory="2Gi"),
        make_podgroup("resnet", min_member=4),
    )
    before = state.snapshot()
    held = copy.copy(dict(before.pods))
    would = would_be(manifest(), scheduler_name=SCHEDULER, priority_classes={}, max_pods=10)
    added = with_would_be(before, would, settings)
    assert dict(before.pods) == held and "default/mnist" not in before.jobs and state.snapshot() is before
    assert set(added.pods) == set(held) | {pod.key for pod in would.pods}
    assert added.group_members["default/mnist"] == added.job_members["default/mnist"] == {p.key for p in would.pods}
    queue, scratch = queue_of(added, settings), build_queue(added, settings)
    assert dict(queue.summaries) == dict(scratch.summaries)
    assert (queue.order, queue.by_arrival, queue.growable) == (scratch.order, scratch.by_arrival, scratch.growable)
    with pytest.raises(NotAskable, match="already knows TFJob default/mnist") as known:
        with_would_be(added, would, settings)
    assert known.value.known


def test_with_entries_copies_only_what_it_writes() -> None:
    cow: CowMap[str, int] = CowMap(bucket_count=4)
    for index in range(20):
        cow.set(f"k{index}", index)
    frozen = cow.freeze()
    grown = with_entries(frozen, {"k1": 100, "new": 7})
    assert dict(frozen) == {f"k{index}": index for index in range(20)}
    assert dict(grown) == {**dict(frozen), "k1": 100, "new": 7} and len(grown) == 21
    assert with_entries({"a": 1}, {"b": 2}) == {"a": 1, "b": 2}
