"""The cluster model (`ClusterState`): watch events in, immutable generation-stamped snapshots out."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from extender.policy.core.resources import CPU, EMPTY, MEMORY, PODS, Resources
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan, Reservation
from extender.policy.core.views import PreemptionRecord, Role
from extender.state.convert import GANG_GROUPS_ANNOTATION as GANG_ANNOTATION
from extender.state.convert import GANG_PLAN_ANNOTATION, PREEMPTION_ANNOTATION, plan_annotation, preemption_annotation
from extender.state.feed import EventType
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import Obj, cluster, hold, make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods

GI = 2**30
ONE_POD = Resources({CPU: 1000, MEMORY: GI, PODS: 1})  # make_pod's default requests plus its pods slot


def with_changes(obj: Obj, **changes: Any) -> Obj:
    """A copy of a raw object with `spec.nodeName`, `status.phase` or `deletionTimestamp` changed."""
    changed = copy.deepcopy(obj)
    if "node" in changes:
        changed["spec"]["nodeName"] = changes["node"]
    if "phase" in changes:
        changed["status"]["phase"] = changes["phase"]
    if changes.get("terminating"):
        changed["metadata"]["deletionTimestamp"] = "2026-03-01T10:20:00Z"
    return changed


PENDING = make_pod("p")
BOUND = with_changes(PENDING, node="node-0", phase="Running")
Event = tuple[str, Obj]


@pytest.mark.parametrize(
    ("events", "requested", "capacity_grew"),
    [
        pytest.param([("ADDED", PENDING)], EMPTY, False, id="a pending pod uses nothing on any node"),
        pytest.param(
            [("ADDED", PENDING), ("MODIFIED", BOUND)],
            ONE_POD,
            False,
            id="binding moves the pod's requests onto the node",
        ),
        pytest.param([("ADDED", BOUND)], ONE_POD, False, id="a pod first seen bound uses its node"),
        pytest.param(
            [("ADDED", BOUND), ("MODIFIED", with_changes(BOUND, phase="Succeeded"))],
            EMPTY,
            True,
            id="a succeeded pod frees its node",
        ),
        pytest.param(
            [("ADDED", BOUND), ("MODIFIED", with_changes(BOUND, phase="Failed"))],
            EMPTY,
            True,
            id="a failed pod frees its node",
        ),
        pytest.param([("ADDED", BOUND), ("DELETED", BOUND)], EMPTY, True, id="a deleted pod frees its node"),
        pytest.param(
            [("ADDED", BOUND), ("MODIFIED", with_changes(BOUND, terminating=True))],
            ONE_POD,
            False,
            id="a terminating pod holds its node until it is gone",
        ),
        pytest.param(
            [("ADDED", BOUND), ("MODIFIED", BOUND)], ONE_POD, False, id="a repeated event does not count the pod twice"
        ),
        pytest.param([("DELETED", PENDING)], EMPTY, False, id="deleting an unknown pod is harmless"),
    ],
)
def test_pod_events_move_node_usage(events: list[Event], requested: Resources, capacity_grew: bool) -> None:
    state = cluster(make_node("node-0", cpu="4", memory="16Gi"))
    before = state.snapshot()
    for event_type, obj in events:
        state.apply(Kind.POD, event_type, obj)  # type: ignore[arg-type]
    after = state.snapshot()
    node = after.nodes["node-0"]
    assert node.requested == requested
    assert node.pods == ({"default/p"} if requested else frozenset())
    assert node.available == Resources({CPU: 4000, MEMORY: 16 * GI, PODS: 110}) - requested
    assert after.generation == before.generation + len(events)
    assert (after.capacity_generation > before.capacity_generation) is capacity_grew


def test_a_deleted_node_leaves_the_snapshot_and_its_pods_usage_returns_with_it() -> None:
    node = make_node("node-0", cpu="4", memory="16Gi")
    state = cluster(node, BOUND)
    state.apply(Kind.NODE, "DELETED", node)
    gone = state.snapshot()
    assert "node-0" not in gone.nodes
    assert gone.pods["default/p"].node_name == "node-0"
    state.apply(Kind.NODE, "ADDED", node)
    back = state.snapshot()
    assert back.nodes["node-0"].requested == ONE_POD
    assert back.capacity_generation > gone.capacity_generation


@pytest.mark.parametrize(
    ("change", "schedulable", "capacity_grew"),
    [
        pytest.param(make_node("node-0", cpu="4", unschedulable=True), False, False, id="cordoning does not add room"),
        pytest.param(make_node("node-0", cpu="4", ready=False), False, False, id="a NotReady node is unschedulable"),
        pytest.param(make_node("node-0", cpu="8"), True, True, id="a node that grew may hold more"),
        pytest.param(make_node("node-0", cpu="2"), True, True, id="any allocatable change counts"),
        pytest.param(make_node("node-0", cpu="4", labels={"zone": "a"}), True, False, id="a new label adds no room"),
    ],
)
def test_node_changes(change: Obj, schedulable: bool, capacity_grew: bool) -> None:
    state = cluster(make_node("node-0", cpu="4"))
    before = state.snapshot()
    state.apply(Kind.NODE, "MODIFIED", change)
    after = state.snapshot()
    assert after.nodes["node-0"].node.schedulable is schedulable
    assert (after.capacity_generation > before.capacity_generation) is capacity_grew


def test_uncordoning_a_node_counts_as_capacity_growth() -> None:
    state = cluster(make_node("node-0", unschedulable=True))
    before = state.snapshot()
    state.apply(Kind.NODE, "MODIFIED", make_node("node-0"))
    assert state.snapshot().capacity_generation > before.capacity_generation


# -- PodGroups, TFJobs, membership ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "api_group"),
    [
        pytest.param([make_podgroup("g", min_member=3)], "scheduling.x-k8s.io", id="the x-k8s dialect"),
        pytest.param([make_podgroup("g", min_member=3, legacy=True)], "scheduling.sigs.k8s.io", id="the sigs dialect"),
        pytest.param(
            [make_podgroup("g", min_member=3, legacy=True), make_podgroup("g", min_member=3)],
            "scheduling.x-k8s.io",
            id="both dialects with one name: x-k8s wins",
        ),
    ],
)
def test_pod_groups_of_both_dialects(groups: list[Obj], api_group: str) -> None:
    group = cluster(*groups).snapshot().groups["default/g"]
    assert (group.key, group.min_member, group.api_group) == ("default/g", 3, api_group)


def test_deleting_the_winning_dialect_falls_back_to_the_other() -> None:
    modern, legacy = make_podgroup("g", min_member=3), make_podgroup("g", min_member=2, legacy=True)
    state = cluster(modern, legacy)
    state.apply(Kind.PODGROUP, "DELETED", modern)
    assert state.snapshot().groups["default/g"].api_group == "scheduling.sigs.k8s.io"
    assert [g.key for g in state.groups_of_kind(Kind.PODGROUP_SIGS)] == ["default/g"]
    state.apply(Kind.PODGROUP_SIGS, "DELETED", legacy)
    assert "default/g" not in state.snapshot().groups


def test_a_pod_group_is_read_whole() -> None:
    raw = make_podgroup("g", min_member=4, timeout_s=90, gang_group=["default/h"])
    raw["spec"]["minResources"] = {"cpu": "8", "memory": "16Gi"}
    group = cluster(raw).snapshot().groups["default/g"]
    assert group.schedule_timeout_s == 90.0
    assert group.gang_group == ("default/g", "default/h")  # itself included, sorted
    assert group.min_resources == Resources({CPU: 8000, MEMORY: 16 * GI})
    assert group.created == 1772360100.0  # 2026-03-01T10:15:00Z


def test_tfjob_replicas_and_members() -> None:
    raw = make_tfjob("mnist", ps=2, workers=4, dynamic=True)
    raw["spec"]["tfReplicaSpecs"]["Chief"] = {"template": {"spec": {"priorityClassName": "high"}}}
    snapshot = cluster(raw, *tfjob_pods("mnist", ps=2, workers=4)).snapshot()
    job = snapshot.jobs["default/mnist"]
    assert dict(job.replicas) == {Role.PS: 2, Role.WORKER: 4, Role.CHIEF: 1}  # replicas unset means 1
    assert job.enable_dynamic_worker is True
    assert job.priority_class == "high"
    assert len(snapshot.job_members["default/mnist"]) == 6
    assert len(snapshot.group_members["default/mnist"]) == 6
    assert snapshot.pods["default/mnist-worker-3"].role is Role.WORKER
    assert snapshot.pods["default/mnist-worker-3"].index == 3


def test_membership_generation_moves_with_membership_only() -> None:
    pods = tfjob_pods("mnist", ps=0, workers=2)
    state = cluster(make_node("node-0"), make_podgroup("mnist", min_member=2), *pods)

    def generation() -> int:
        return state.snapshot().group_generations["default/mnist"]

    start = generation()
    state.apply(Kind.POD, "MODIFIED", pods[0])  # the same pod again
    assert generation() == start
    state.apply(Kind.POD, "MODIFIED", with_changes(pods[0], node="node-0", phase="Running"))
    bound = generation()
    assert bound > start
    state.apply(Kind.POD, "ADDED", make_pod("mnist-worker-9", group="mnist"))
    assert generation() > bound
    assert state.snapshot().group_members["default/mnist"] == {
        "default/mnist-worker-0",
        "default/mnist-worker-1",
        "default/mnist-worker-9",
    }


def test_priority_classes() -> None:
    raw: Obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}}
    state = cluster({**raw, "value": 1000})
    assert state.snapshot().priority_classes == {"high": 1000}
    state.apply(Kind.PRIORITY_CLASS, "DELETED", raw)
    assert state.snapshot().priority_classes == {}


# -- replace, snapshots, generations -------------------------------------------------------------------


def test_replace_deletes_what_the_new_list_lacks_and_keeps_the_rest() -> None:
    a, b, c = (make_pod(name, node="node-0", phase="Running") for name in "abc")
    state = cluster(make_node("node-0", cpu="8"), a, b, c)
    state.replace(Kind.POD, [b, with_changes(c, phase="Succeeded"), make_pod("d")])
    snapshot = state.snapshot()
    assert sorted(snapshot.pods) == ["default/b", "default/c", "default/d"]
    assert snapshot.pods["default/c"].phase == "Succeeded"
    assert snapshot.nodes["node-0"].pods == {"default/b"}
    assert snapshot.nodes["node-0"].requested == ONE_POD
    assert sorted(snapshot.nodes) == ["node-0"]  # other kinds untouched


def test_replace_with_nothing_empties_the_kind() -> None:
    state = cluster(make_node("node-0"), make_pod("a"), make_podgroup("g", min_member=1))
    state.replace(Kind.PODGROUP, [])
    snapshot = state.snapshot()
    assert snapshot.groups == {}
    assert sorted(snapshot.pods) == ["default/a"]


def test_an_older_snapshot_is_unchanged_by_later_events() -> None:
    state = cluster(make_node("node-0", cpu="4"), PENDING, make_podgroup("g", min_member=1))
    old = state.snapshot()
    frozen = (dict(old.nodes), dict(old.pods), dict(old.groups), dict(old.reservations), old.generation)
    state.apply(Kind.POD, "MODIFIED", BOUND)
    state.apply(Kind.POD, "ADDED", make_pod("q"))
    state.apply(Kind.NODE, "DELETED", make_node("node-0"))
    state.apply(Kind.PODGROUP, "DELETED", make_podgroup("g", min_member=1))
    hold(state, reserve=[Reservation("default/q", "default/g", "node-0", ONE_POD, 1.0)])
    assert (dict(old.nodes), dict(old.pods), dict(old.groups), dict(old.reservations), old.generation) == frozen
    assert old.pods["default/p"].node_name == ""
    assert "default/q" not in old.pods


def test_a_snapshot_is_cached_until_something_changes() -> None:
    state = cluster(make_node("node-0"))
    first = state.snapshot()
    assert state.snapshot() is first
    assert state.release_expired(0.0) == 0
    assert state.snapshot() is first
    state.apply(Kind.POD, "ADDED", PENDING)
    assert state.snapshot() is not first


def reserve(state: ClusterState) -> None:
    hold(state, reserve=[Reservation("default/p", "default/g", "node-0", ONE_POD, 100.0)])


def remember_failure(state: ClusterState) -> None:
    hold(state, failed_plan=FailedPlan("default/g", "no room", 0, 0, 0.0, 0, 1))


def reserve_then_release(state: ClusterState) -> None:
    reserve(state)
    hold(state, release_groups=["default/g"])


def reserve_then_expire_at(now: float) -> Callable[[ClusterState], object]:
    def change(state: ClusterState) -> None:
        reserve(state)  # expires at 100
        state.release_expired(now)

    return change


GENERATIONS: list[tuple[str, Callable[[ClusterState], object], bool]] = [
    ("a pod is created", lambda s: s.apply(Kind.POD, "ADDED", make_pod("q")), False),
    ("a TFJob is created", lambda s: s.apply(Kind.TFJOB, "ADDED", make_tfjob("j")), False),
    ("a PodGroup is created", lambda s: s.apply(Kind.PODGROUP, "ADDED", make_podgroup("h", min_member=1)), False),
    ("a PodGroup is deleted", lambda s: s.apply(Kind.PODGROUP, "DELETED", make_podgroup("g", min_member=1)), True),
    ("a node joins", lambda s: s.apply(Kind.NODE, "ADDED", make_node("node-1")), True),
    ("a plan is reserved", reserve, False),
    ("a failure is remembered", remember_failure, False),
    ("a plan is released", reserve_then_release, True),
    ("a plan expires", reserve_then_expire_at(100.0), True),
    ("nothing expires yet", reserve_then_expire_at(99.0), False),
]


@pytest.mark.parametrize(
    ("change", "capacity_grew"), [pytest.param(change, grew, id=name) for name, change, grew in GENERATIONS]
)
def test_generation_moves_on_every_change_and_capacity_generation_when_room_may_grow(
    change: Callable[[ClusterState], object], capacity_grew: bool
) -> None:
    state = cluster(make_node("node-0"), PENDING, make_podgroup("g", min_member=1))
    before = state.snapshot()
    change(state)
    after = state.snapshot()
    assert after.generation > before.generation
    assert (after.capacity_generation > before.capacity_generation) is capacity_grew
    assert after.capacity_generation <= after.generation


# -- the reservations ledger ---------------------------------------------------------------------------


def test_reservations_are_held_on_their_nodes_and_released_by_group() -> None:
    state = cluster(make_node("node-0", cpu="4"), make_node("node-1", cpu="4"), *tfjob_pods("j", workers=2))
    plan = [
        Reservation("default/j-ps-0", "default/j", "node-0", ONE_POD, 50.0),
        Reservation("default/j-worker-0", "default/j", "node-0", ONE_POD, 50.0),
        Reservation("default/j-worker-1", "default/j", "node-1", ONE_POD, 50.0),
    ]
    hold(state, reserve=plan)
    snapshot = state.snapshot()
    assert snapshot.reserved_by_node == {"node-0": ONE_POD.scaled(2), "node-1": ONE_POD}
    assert snapshot.nodes["node-0"].available.get(CPU) == 2000  # 4 CPU - 2 reserved
    assert snapshot.free_on("node-0") == snapshot.nodes["node-0"].available
    assert snapshot.free_on("node-0", ignoring_group="default/j").get(CPU) == 4000
    assert snapshot.held_by_group("default/j") == {"node-0": ONE_POD.scaled(2), "node-1": ONE_POD}
    hold(state, release_groups=["default/j"])
    released = state.snapshot()
    assert released.reservations == {}
    assert released.reserved_by_node == {}
    assert released.nodes["node-0"].reserved == EMPTY


def test_release_expired_counts_the_reservations_it_drops() -> None:
    state = cluster(make_node("node-0", cpu="8"), *tfjob_pods("j", workers=2), *tfjob_pods("k", workers=1))
    hold(
        state,
        reserve=[Reservation(f"default/j-{p}", "default/j", "node-0", ONE_POD, 10.0) for p in ("ps-0", "worker-0")]
        + [Reservation("default/k-ps-0", "default/k", "node-0", ONE_POD, 20.0)],
    )
    assert state.release_expired(9.0) == 0
    assert state.release_expired(10.0) == 2  # j's plan; k's lives on
    assert list(state.snapshot().reservations) == ["default/k-ps-0"]
    assert state.release_expired(25.0) == 1


def test_a_replaced_reservation_expires_on_its_new_deadline() -> None:
    state = cluster(make_node("node-0"), *tfjob_pods("j", workers=0))
    hold(state, reserve=[Reservation("default/j-ps-0", "default/j", "node-0", ONE_POD, 10.0)])
    hold(state, reserve=[Reservation("default/j-ps-0", "default/j", "node-0", ONE_POD, 30.0)])
    assert state.snapshot().reserved_by_node == {"node-0": ONE_POD}  # held once, not twice
    assert state.release_expired(20.0) == 0
    assert state.release_expired(30.0) == 1


def test_a_new_plan_forgets_the_gangs_remembered_failure() -> None:
    state = cluster(make_node("node-0"), *tfjob_pods("j", workers=0))
    hold(state, failed_plan=FailedPlan("default/i,default/j", "no room", 0, 0, 0.0, 0, 1))
    assert list(state.snapshot().failed_plans) == ["default/i,default/j"]
    hold(state, reserve=[Reservation("default/j-ps-0", "default/j", "node-0", ONE_POD, 10.0)])
    assert state.snapshot().failed_plans == {}


# -- what the model cannot read ------------------------------------------------------------------------


def bad_pod() -> Obj:
    pod = make_pod("bad")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    return pod


def nameless_pod() -> Obj:
    pod = make_pod("x")
    del pod["metadata"]["name"]
    return pod


def with_field(obj: Obj, path: str, value: object) -> Obj:
    changed = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target = changed
    for part in parents:
        target = target[part]
    target[last] = value
    return changed


@pytest.mark.parametrize(
    ("kind", "obj", "message"),
    [
        pytest.param(
            Kind.POD,
            bad_pod(),
            "Pod default/bad: spec.containers[0].resources: not a resource quantity: 'lots'",
            id="a pod requesting 'lots' of cpu",
        ),
        pytest.param(Kind.POD, nameless_pod(), "Pod default/<unnamed>: metadata.name is missing", id="a nameless pod"),
        pytest.param(
            Kind.NODE,
            with_field(make_node("n"), "status.allocatable", {"memory": "32GB"}),
            "Node n: status.allocatable: not a resource quantity: '32GB'",
            id="a node with memory in GB",
        ),
        pytest.param(
            Kind.POD,
            with_field(make_pod("p"), "metadata.labels", {"training.kubeflow.org/replica-index": "first"}),
            "Pod default/p: label training.kubeflow.org/replica-index='first' is not an integer",
            id="a replica index that is not a number",
        ),
        pytest.param(
            Kind.PODGROUP,
            with_field(make_podgroup("g", min_member=1), "spec.minMember", "three"),
            "PodGroup default/g: spec.minMember='three' is not a number",
            id="a minMember spelled out",
        ),
        pytest.param(
            Kind.PODGROUP,
            with_field(make_podgroup("g", min_member=1), "metadata.annotations", {GANG_ANNOTATION: "[a"}),
            f"PodGroup default/g: annotation {GANG_ANNOTATION} is not JSON",
            id="a GangGroup annotation that is not JSON",
        ),
        pytest.param(
            Kind.PODGROUP,
            with_field(make_podgroup("g", min_member=1), "metadata.annotations", {GANG_ANNOTATION: '["h"]'}),
            f'PodGroup default/g: annotation {GANG_ANNOTATION} must be a JSON list of "namespace/name"',
            id="a GangGroup annotation without namespaces",
        ),
        pytest.param(
            Kind.TFJOB,
            with_field(make_tfjob("j"), "spec.tfReplicaSpecs", {"Worker": {"replicas": "many"}}),
            "TFJob default/j: spec.tfReplicaSpecs.Worker.replicas='many' is not a number",
            id="a replica count spelled out",
        ),
        pytest.param(
            Kind.POD,
            with_field(make_pod("p"), "metadata.creationTimestamp", "yesterday"),
            "Pod default/p: metadata.creationTimestamp='yesterday' is not a timestamp",
            id="a creation time that is not a time",
        ),
    ],
)
def test_a_malformed_object_is_skipped_and_counted(kind: Kind, obj: Obj, message: str) -> None:
    state = cluster(make_node("node-0"))
    before = state.snapshot()
    state.apply(kind, "ADDED", obj)
    assert state.rejected_objects == 1
    assert state.last_rejection == message
    assert list(state.recent_rejections) == [message]
    assert state.snapshot() is before  # nothing changed
    state.apply(Kind.POD, "ADDED", make_pod("good"))
    assert "default/good" in state.snapshot().pods


def test_replace_skips_what_it_cannot_read_and_keeps_the_rest() -> None:
    state = ClusterState()
    state.replace(Kind.POD, [make_pod("a"), bad_pod(), nameless_pod(), make_pod("b")])
    assert sorted(state.snapshot().pods) == ["default/a", "default/b"]
    assert state.rejected_objects == 2


# -- keys, sync, observed pods -------------------------------------------------------------------------


def test_a_pod_without_a_namespace_is_keyed_in_default() -> None:
    pod = make_pod("p", group="g")
    del pod["metadata"]["namespace"]
    state = cluster(make_node("node-0"), pod, make_podgroup("g", min_member=1))
    snapshot = state.snapshot()
    assert list(snapshot.pods) == ["default/p"]
    assert snapshot.pods["default/p"].key == "default/p"
    assert snapshot.group_members["default/g"] == {"default/p"}
    state.apply(Kind.POD, "DELETED", pod)
    assert state.snapshot().pods == {}


def test_sync_is_reported_per_kind() -> None:
    state = ClusterState()
    assert not state.is_synced()
    for kind in Kind:
        state.mark_synced(kind)
    assert state.is_synced()
    assert state.synced_kinds() == frozenset(Kind)
    assert cluster().is_synced()


def test_an_empty_model_has_an_empty_snapshot() -> None:
    snapshot = ClusterState().snapshot()
    assert isinstance(snapshot, ClusterSnapshot)
    assert (snapshot.generation, len(snapshot.nodes), len(snapshot.pods)) == (0, 0, 0)
    assert snapshot.free_on("nowhere") == EMPTY


# -- plans written on PodGroups -----------------------------------------------------------------------


def planned_group(name: str, plan: dict[str, str], expires: float, *, min_member: int = 2) -> Obj:
    group = make_podgroup(name, min_member=min_member)
    uids = {pod: f"uid-default-{pod}" for pod in plan}
    group["metadata"]["annotations"] = {GANG_PLAN_ANNOTATION: plan_annotation(plan, expires, uids)}
    return group


def test_a_plan_written_on_a_podgroup_is_held_for_its_pending_members() -> None:
    state = cluster(
        make_node("node-0"),
        make_node("node-1"),
        make_pod("a", group="g"),
        planned_group("g", {"a": "node-1", "b": "node-0"}, 500.0),
    )
    assert {k: r.node for k, r in state.snapshot().reservations.items()} == {"default/a": "node-1"}
    state.apply(Kind.POD, "ADDED", make_pod("b", group="g"))  # a member seen after its group's plan
    assert {k: r.node for k, r in state.snapshot().reservations.items()} == {
        "default/a": "node-1",
        "default/b": "node-0",
    }
    assert state.snapshot().reservations["default/b"].expires_at == 500.0


def test_a_released_plan_is_not_taken_again_from_its_annotation() -> None:
    state = cluster(make_node("node-0"), make_pod("a", group="g"), make_podgroup("g", min_member=1))
    hold(state, reserve=[Reservation("default/a", "default/g", "node-0", ONE_POD, 500.0)])
    hold(state, release_groups=["default/g"])
    state.apply(Kind.PODGROUP, "MODIFIED", planned_group("g", {"a": "node-0"}, 500.0, min_member=1))
    assert state.snapshot().reservations == {}, "the echo of a released plan"
    state.apply(Kind.PODGROUP, "MODIFIED", planned_group("g", {"a": "node-0"}, 900.0, min_member=1))
    assert set(state.snapshot().reservations) == {"default/a"}, "a later plan"


def test_a_bound_member_or_an_unknown_node_is_not_reserved_from_a_plan() -> None:
    state = cluster(
        make_node("node-0"),
        make_pod("a", group="g", node="node-0", phase="Running"),
        make_pod("b", group="g"),
        planned_group("g", {"a": "node-0", "b": "nowhere"}, 500.0),
    )
    assert state.snapshot().reservations == {}


def test_a_plan_naming_a_node_the_model_learns_of_later_is_held_once_the_node_arrives() -> None:
    """A process that (re)starts lists its kinds in parallel: the pods and the PodGroup carrying another
    process's plan may arrive before the nodes that plan names."""
    state = cluster(
        make_node("node-0"),
        make_pod("a", group="g"),
        make_pod("b", group="g"),
        planned_group("g", {"a": "node-1", "b": "node-0"}, 500.0),
    )
    assert {k: r.node for k, r in state.snapshot().reservations.items()} == {"default/b": "node-0"}
    state.apply(Kind.NODE, "ADDED", make_node("node-1"))
    assert {k: r.node for k, r in state.snapshot().reservations.items()} == {
        "default/a": "node-1",
        "default/b": "node-0",
    }
    assert state.snapshot().nodes["node-1"].reserved == ONE_POD


def test_a_podgroup_gone_before_the_node_its_plan_names_arrives_is_not_imported() -> None:
    state = cluster(make_pod("a", group="g"), planned_group("g", {"a": "node-1"}, 500.0, min_member=1))
    state.apply(Kind.PODGROUP, "DELETED", make_podgroup("g", min_member=1))
    state.apply(Kind.NODE, "ADDED", make_node("node-1"))
    assert state.snapshot().reservations == {}


def test_a_pod_recreated_under_a_planned_name_is_not_held_to_the_old_plan() -> None:
    state = cluster(make_node("node-0"), planned_group("g", {"a": "node-0"}, 500.0, min_member=1))
    state.apply(Kind.POD, "ADDED", make_pod("a", group="g", uid="a-second-life"))
    assert state.snapshot().reservations == {}


PREEMPTION = PreemptionRecord(
    "default/urgent",
    frozenset({"default/v-0", "default/v-1"}),
    (),
    ("default/victim",),
    "urgent preempts victim",
    1_800_000_000.25,
    frozenset({"uid-default-v-0", "uid-default-v-1"}),
)


def announcing(record: PreemptionRecord | None) -> Obj:
    group = make_podgroup("urgent", min_member=1)
    if record is not None:
        uids = {key: f"uid-{key.replace('/', '-')}" for key in record.victims}
        group["metadata"]["annotations"] = {PREEMPTION_ANNOTATION: preemption_annotation(record, uids)}
    return group


def test_a_preemption_announced_on_a_podgroup_is_remembered_with_its_victims_still_on_their_nodes() -> None:
    victims = [make_pod(f"v-{i}", group="victim", node="node-0", phase="Running") for i in range(2)]
    state = cluster(make_node("node-0"), make_podgroup("victim", min_member=2), *victims, announcing(PREEMPTION))
    snapshot = state.snapshot()
    assert snapshot.preemptions["default/urgent"] == PREEMPTION, "read back exactly as it was written"
    assert snapshot.leaving == {"default/victim": frozenset({"default/v-0", "default/v-1"})}
    state.apply(Kind.POD, "DELETED", victims[0])
    recreated = make_pod("v-0", group="victim", uid="uid-again")
    state.apply(Kind.POD, "ADDED", with_changes(recreated, node="node-0", phase="Running"))
    assert state.snapshot().leaving == {"default/victim": frozenset({"default/v-1"})}, "a recreation is no victim"
    state.apply(Kind.POD, "MODIFIED", with_changes(victims[1], phase="Failed"))
    assert not state.snapshot().leaving


@pytest.mark.parametrize(
    ("event", "group"),
    [("MODIFIED", announcing(None)), ("DELETED", announcing(PREEMPTION))],
    ids=["the announcement withdrawn", "the preemptor's PodGroup gone"],
)
def test_a_preemption_is_forgotten_when(event: EventType, group: Obj) -> None:
    victims = [make_pod(f"v-{i}", group="victim", node="node-0", phase="Running") for i in range(2)]
    state = cluster(make_node("node-0"), make_podgroup("victim", min_member=2), *victims, announcing(PREEMPTION))
    state.apply(Kind.PODGROUP, event, group)
    snapshot = state.snapshot()
    assert not snapshot.preemptions and not snapshot.leaving


def test_victims_announced_before_their_pods_are_seen_count_once_they_are() -> None:
    state = cluster(make_node("node-0"), make_podgroup("victim", min_member=2), announcing(PREEMPTION))
    assert not state.snapshot().leaving
    state.apply(Kind.POD, "ADDED", make_pod("v-1", group="victim", node="node-0", phase="Running"))
    assert state.snapshot().leaving == {"default/victim": frozenset({"default/v-1"})}


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        "[]",
        '{"gang": "default/other", "at": 1, "reason": "", "victims": {}, "scaledIn": [], "evicted": []}',
        '{"gang": "default/urgent", "at": true, "reason": "", "victims": {}, "scaledIn": [], "evicted": []}',
        '{"gang": "default/urgent", "at": 1, "reason": "", "victims": {"a": 3}, "scaledIn": [], "evicted": []}',
        '{"gang": "default/urgent", "at": 1, "reason": "", "victims": [], "scaledIn": [], "evicted": []}',
        '{"gang": "default/urgent", "at": 1, "reason": ""}',
    ],
)
def test_an_unreadable_preemption_announcement_is_no_preemption(value: str) -> None:
    group = make_podgroup("urgent", min_member=1)
    group["metadata"]["annotations"] = {PREEMPTION_ANNOTATION: value}
    state = cluster(group)
    assert "default/urgent" in state.snapshot().groups, "the PodGroup itself is kept"
    assert not state.snapshot().preemptions


def test_the_plan_announced_with_a_preemption_is_held_and_dropped_when_the_preemption_is_withdrawn() -> None:
    announced = announcing(PREEMPTION)
    announced["metadata"]["annotations"][GANG_PLAN_ANNOTATION] = plan_annotation(
        {"u-0": "node-0"}, 500.0, {"u-0": "uid-default-u-0"}
    )
    state = cluster(make_node("node-0"), make_pod("u-0", group="urgent"), announced)
    assert {key: r.node for key, r in state.snapshot().reservations.items()} == {"default/u-0": "node-0"}
    state.apply(Kind.PODGROUP, "MODIFIED", announcing(None))
    assert not state.snapshot().reservations, "the abandoned preemption's plan is released"


def test_a_withdrawn_preemption_leaves_a_plan_made_since_for_its_gang() -> None:
    announced = announcing(PREEMPTION)
    announced["metadata"]["annotations"][GANG_PLAN_ANNOTATION] = plan_annotation(
        {"u-0": "node-0"}, 500.0, {"u-0": "uid-default-u-0"}
    )
    state = cluster(make_node("node-0"), make_node("node-1"), make_pod("u-0", group="urgent"), announced)
    hold(state, reserve=[Reservation("default/u-0", "default/urgent", "node-1", ONE_POD, 900.0)])
    state.apply(Kind.PODGROUP, "MODIFIED", announcing(None))
    assert {key: r.node for key, r in state.snapshot().reservations.items()} == {"default/u-0": "node-1"}
