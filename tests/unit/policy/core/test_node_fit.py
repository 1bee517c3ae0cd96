"""The gang plan places every member only on nodes its own node selector, required node affinity and
tolerations admit, as kube-scheduler's filters would (`policy.core.node_fit`), and the model reads those fields."""

from __future__ import annotations

from typing import Any

import pytest

from extender.policy.core.node_fit import NodeConstraint, Operator, Requirement, Taint, Term, Toleration
from extender.policy.core.settings import PolicySettings
from extender.policy.gang.planner import plan_gang
from extender.policy.gang.state import gang_state
from extender.state import convert
from extender.state.convert import ConversionError
from extender.state.kinds import Kind
from extender.state.view_manifests import node_manifest, pod_manifest
from tests.builders import Obj, cluster, make_node, make_podgroup, make_sized_tfjob, snapshot, tfjob_pods

NOW = 1_800_000_000.0
SETTINGS = PolicySettings()
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATE_GPU = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


def nodes() -> list[Obj]:
    """Two plain 3-CPU nodes and two tainted 8-CPU ones labelled `pool=gpu`: only a tainted one holds a whole job."""
    plain = [make_node(f"plain-{i}", cpu="3") for i in range(2)]
    tainted = [make_node(f"gpu-{i}", cpu="8", labels={"pool": "gpu"}) for i in range(2)]
    for node in tainted:
        node["spec"]["taints"] = [GPU_TAINT]
    return [*plain, *tainted]


def gang(name: str, **spec: Any) -> list[Obj]:
    """A pending job of 1 PS + 3 workers of 1 CPU; every pod gets `spec` merged into its own."""
    pods = tfjob_pods(name, workers=3)
    for pod in pods:
        pod["spec"].update(spec)
    return [*pods, make_podgroup(name, min_member=4), make_sized_tfjob(name, workers=3)]


def planned_nodes(*objects: Obj) -> set[str] | str:
    snap = snapshot(*objects)
    verdict = plan_gang(snap, gang_state(snap, "default/job"), SETTINGS, NOW)
    return {r.node for r in verdict.reservations} if verdict.admitted else verdict.reason


def test_no_member_is_planned_on_a_tainted_node_it_does_not_tolerate() -> None:
    assert planned_nodes(*nodes(), *gang("job")) == {"plain-0", "plain-1"}, "without the taint: all on gpu-0"


def test_members_that_tolerate_the_taint_may_go_there() -> None:
    placed = planned_nodes(*nodes(), *gang("job", tolerations=TOLERATE_GPU, nodeSelector={"pool": "gpu"}))
    assert isinstance(placed, set) and placed <= {"gpu-0", "gpu-1"}


def test_required_node_affinity_is_honoured_for_every_member() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}
                ]
            }
        }
    }
    assert planned_nodes(*nodes(), *gang("job", affinity=affinity, tolerations=TOLERATE_GPU)) == {"gpu-1"}
    away = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]}]
            }
        }
    }
    tolerant = gang("job", affinity=away, tolerations=[{"operator": "Exists"}])
    placed = planned_nodes(*nodes(), *tolerant)
    assert isinstance(placed, set) and placed <= {"plain-0", "plain-1"}


def test_a_gang_no_node_admits_is_not_planned() -> None:
    assert isinstance(planned_nodes(*nodes(), *gang("job", nodeSelector={"pool": "gpu"})), str)


@pytest.mark.parametrize(
    ("requirement", "labels", "holds"),
    [
        (Requirement("zone", Operator.IN, ("a", "b")), {"zone": "b"}, True),
        (Requirement("zone", Operator.NOT_IN, ("a",)), {}, True),
        (Requirement("zone", Operator.NOT_IN, ("a",)), {"zone": "a"}, False),
        (Requirement("zone", Operator.EXISTS), {"zone": ""}, True),
        (Requirement("zone", Operator.DOES_NOT_EXIST), {"zone": "a"}, False),
        (Requirement("gen", Operator.GT, ("3",)), {"gen": "4"}, True),
        (Requirement("gen", Operator.LT, ("3",)), {"gen": "x"}, False),
        (Requirement("metadata.name", Operator.IN, ("n",), on_field=True), {}, True),
    ],
)
def test_node_selector_requirements_follow_the_api(
    requirement: Requirement, labels: dict[str, str], holds: bool
) -> None:
    assert requirement.holds("n", labels) is holds


def test_tolerations_follow_the_api() -> None:
    taint = Taint("dedicated", "gpu", "NoSchedule")
    assert Toleration(operator="Exists").tolerates(taint)
    assert Toleration("dedicated", "Exists").tolerates(taint)
    assert not Toleration("dedicated", "Equal", "cpu").tolerates(taint)
    assert not Toleration("dedicated", "Equal", "gpu", "NoExecute").tolerates(taint)
    soft = NodeConstraint()
    assert soft.admits("n", {}, (Taint("k", "v", "PreferNoSchedule"),)), "PreferNoSchedule only scores"
    assert not soft.admits("n", {}, (Taint("k", "v", "NoExecute"),))
    assert not NodeConstraint(affinity=(Term(()),)).admits("n", {}, ()), "an empty term matches no node"


def test_taints_tolerations_and_affinity_are_read_and_survive_a_state_dump() -> None:
    snap = snapshot(
        *nodes(),
        *gang(
            "job",
            tolerations=TOLERATE_GPU,
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["2"]}]}]
                    }
                }
            },
        ),
    )
    node = snap.nodes["gpu-0"].node
    assert node.taints == (Taint("dedicated", "gpu", "NoSchedule"),)
    assert convert.node_view(node_manifest(node)) == node
    pod = snap.pods["default/job-worker-0"]
    assert pod.tolerations == (Toleration("dedicated", "Equal", "gpu", "NoSchedule"),)
    assert pod.node_affinity == (Term((Requirement("gen", Operator.GT, ("2",)),)),)
    assert convert.pod_view(pod_manifest(pod, snap)) == pod


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"tolerations": [{"key": "k", "effect": "Sometimes"}]}, "effect"),
        ({"tolerations": [{"key": "k", "operator": "Near"}]}, "operator"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}
                            ]
                        }
                    }
                }
            },
            "only metadata.name",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["two"]}]}
                            ]
                        }
                    }
                }
            },
            "one integer",
        ),
    ],
)
def test_bad_tolerations_and_affinity_are_refused_with_the_field(spec: dict[str, Any], message: str) -> None:
    pod = tfjob_pods("job", workers=1)[0]
    pod["spec"].update(spec)
    with pytest.raises(ConversionError, match=message):
        convert.pod_view(pod)


def test_a_gang_with_a_gated_member_is_not_planned_until_the_gate_is_gone_and_its_new_selector_counts() -> None:
    """As Kueue's topology-aware scheduling does: every pod gated, then ungated with a domain's selector."""
    objects = gang("job", tolerations=TOLERATE_GPU)
    for pod in objects[:4]:
        pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    state = cluster(*nodes(), *objects)
    snap = state.snapshot()
    gated = snap.pods["default/job-worker-0"]
    assert gated.scheduling_gated and convert.pod_view(pod_manifest(gated, snap)) == gated
    verdict = plan_gang(snap, gang_state(snap, "default/job"), SETTINGS, NOW)
    assert not verdict.admitted and verdict.reservations == ()
    for pod in objects[:4]:
        del pod["spec"]["schedulingGates"]
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-1"}
        state.apply(Kind.POD, "MODIFIED", pod)
    snap = state.snapshot()
    verdict = plan_gang(snap, gang_state(snap, "default/job"), SETTINGS, NOW)
    assert verdict.admitted and {r.node for r in verdict.reservations} == {"gpu-1"}
    assert convert.pod_view(pod_manifest(snap.pods["default/job-ps-0"], snap)) == snap.pods["default/job-ps-0"]
