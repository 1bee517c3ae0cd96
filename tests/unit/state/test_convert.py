"""Conversion checks every field it reads: a bad object is refused naming the field, never stored half-valid."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import pytest

from extender.state import convert
from extender.state.kinds import Kind
from tests.builders import cluster, make_node, make_pod, make_podgroup, make_tfjob

Obj = dict[str, Any]

REFUSED_WITHIN_S = 0.5
"""A bad field is refused without working on it (a huge exponent is never expanded): far under this,
whatever else the machine does; the cost itself is measured by benchmarks/fuzz.py."""


def changed(obj: Obj, path: str, value: object) -> Obj:
    """A copy of `obj` with the dotted `path` set to `value` (missing parents created)."""
    result = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target = result
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    return result


POD = make_pod("p", group="g", job="j", role="worker", index=1)
NODE = make_node("n")


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(
            changed(POD, "status.phase", [1]),
            "Pod default/p: status.phase=a list [1] is not one of Pending, Running, Succeeded, Failed, Unknown",
            id="a phase that is a list",
        ),
        pytest.param(
            changed(POD, "status.phase", "Sleeping"), "status.phase='Sleeping' is not one of", id="an unknown phase"
        ),
        pytest.param(
            changed(POD, "metadata.namespace", "a/b"),
            "metadata.namespace='a/b' is not a DNS-1123 label",
            id="a namespace holding a slash",
        ),
        pytest.param(changed(POD, "metadata.name", "P"), "metadata.name='P' is not a DNS-1123 subdomain", id="upper"),
        pytest.param(changed(POD, "metadata.name", "p" * 254), "is not a valid name", id="a 254-character name"),
        pytest.param(changed(POD, "metadata", [1]), "metadata=a list [1] is not an object", id="metadata a list"),
        pytest.param(changed(POD, "spec.containers", {}), "spec.containers=a dict {} is not a list", id="containers"),
        pytest.param(
            changed(POD, "spec.containers", [{"resources": {"requests": {"memory": "1e999999"}}}]),
            "spec.containers[0].resources: resource quantity '1e999999': exponent beyond ±64",
            id="a huge memory request",
        ),
        pytest.param(
            changed(POD, "spec.containers", [{"resources": {"requests": {"memory": "-1Gi"}}}]),
            "is negative",
            id="a negative memory request",
        ),
        pytest.param(
            changed(POD, "spec.containers", [{"resources": {"requests": {"bad key!": "1"}}}]),
            "key 'bad key!' is not a qualified name",
            id="a resource name with a blank",
        ),
        pytest.param(changed(POD, "spec.priority", 2**40), "spec.priority=1099511627776 is out of range", id="prio"),
        pytest.param(changed(POD, "spec.priority", "7"), "spec.priority='7' is not a number", id="priority as text"),
        pytest.param(changed(POD, "spec.preemptionPolicy", "Always"), "is not one of PreemptLowerPriority", id="pol"),
        pytest.param(changed(POD, "spec.schedulerName", ["x"]), "spec.schedulerName=a list", id="scheduler a list"),
        pytest.param(changed(POD, "spec.nodeName", "node/0"), "spec.nodeName='node/0' is not a DNS", id="node name"),
        pytest.param(changed(POD, "spec.nodeSelector", {"a": 1}), "spec.nodeSelector[a]=1 is not a label", id="sel"),
        pytest.param(changed(POD, "metadata.uid", "a\x7fb"), "metadata.uid='a\\x7fb' holds unprintable", id="uid"),
        pytest.param(changed(POD, "metadata.labels", "x"), "metadata.labels='x' is not an object", id="labels text"),
        pytest.param(
            changed(POD, "metadata.labels", {"scheduling.x-k8s.io/pod-group": {"a": 1}}),
            "label scheduling.x-k8s.io/pod-group=a dict",
            id="a group label that is an object",
        ),
        pytest.param(
            changed(POD, "metadata.ownerReferences", [{"kind": "TFJob", "controller": True, "name": "a/b"}]),
            "metadata.ownerReferences[0].name='a/b' is not a valid name",
            id="an owner whose name holds a slash",
        ),
        pytest.param(
            changed(POD, "metadata.deletionTimestamp", 5), "metadata.deletionTimestamp=5 is not a time", id="t"
        ),
        pytest.param(changed(NODE, "spec.unschedulable", "yes"), "spec.unschedulable='yes' is not a boolean", id="un"),
        pytest.param(changed(NODE, "status.conditions", [7]), "status.conditions[0]=7 is not an object", id="cond"),
        pytest.param(
            changed(NODE, "metadata.labels", {"zone": "a b"}), "metadata.labels[zone]='a b' is not a label", id="lbl"
        ),
        pytest.param(
            changed(make_podgroup("g", min_member=1), "spec.minMember", 2**31),
            "spec.minMember=2147483648 is out of range",
            id="a minMember over int32",
        ),
        pytest.param(
            changed(make_tfjob("j"), "spec.tfReplicaSpecs", {"Worker": [1]}),
            "spec.tfReplicaSpecs.Worker=a list [1] is not an object",
            id="a replica spec that is a list",
        ),
        pytest.param(
            changed(make_tfjob("j"), "metadata.annotations", {convert.SCALED_AT_ANNOTATION: "1e999"}),
            "annotation tfjob-extender.io/scaled-at='1e999' is not a number of seconds",
            id="a scaled-at time of infinity",
        ),
        pytest.param([1, 2], "a list, not an object: not an object", id="not an object at all"),
    ],
)
def test_a_bad_field_is_refused_naming_it(obj: Any, message: str) -> None:
    kind = str(obj.get("kind")) if isinstance(obj, dict) else "Pod"
    views: dict[str, Callable[[Any], object]] = {
        "Pod": convert.pod_view,
        "Node": convert.node_view,
        "TFJob": convert.job_view,
        "PodGroup": lambda o: convert.group_view(o, "scheduling.x-k8s.io"),
    }
    view = views[kind]
    started = time.perf_counter()
    with pytest.raises(convert.ConversionError) as raised:
        view(obj)
    assert message in str(raised.value)
    assert time.perf_counter() - started < REFUSED_WITHIN_S


def test_a_refused_watch_object_leaves_the_model_and_its_readers_intact() -> None:
    state = cluster(make_node("node-0"), make_pod("a", group="g"), make_podgroup("g", min_member=1))
    before = state.snapshot()
    state.apply(Kind.POD, "ADDED", changed(make_pod("b", group="g"), "status.phase", [1]))
    assert state.snapshot() is before
    assert state.rejected_objects == 1
    assert "status.phase" in state.last_rejection


def test_the_pod_key_of_junk_is_empty() -> None:
    assert convert.pod_key({"metadata": [1]}) == ""
    assert convert.pod_key([1]) == ""
    assert convert.pod_key(changed(POD, "metadata.namespace", "a/b")) == ""
    assert convert.pod_key(POD) == "default/p"
