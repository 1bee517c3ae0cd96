"""The gang queue the model keeps up to date event by event equals the one derived from scratch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.resources import CPU, MEMORY, PODS, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.rank.jobstates import JobStateTracker, job_states
from extender.policy.rank.queue import GangQueue, build_queue
from extender.state.convert import GANG_GROUPS_ANNOTATION
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import hold, make_node, make_pod, make_podgroup, make_sized_tfjob

NOW = 1_772_360_000.0
SETTINGS = PolicySettings(starvation_limit_s=600.0)
GROUPS = ["a", "b", "c"]
ONE_CPU = Resources({CPU: 1000, MEMORY: 2**30, PODS: 1})

events = st.lists(
    st.one_of(
        st.tuples(
            st.just("pod"),
            st.sampled_from([f"{g}-worker-{i}" for g in GROUPS for i in range(3)] + ["loose-0", "loose-1"]),
            st.sampled_from(["ADDED", "DELETED"]),
            st.sampled_from(["", "node-0", "node-1"]),
            st.sampled_from(["Pending", "Running", "Succeeded"]),
            st.sampled_from([0, 100]),
        ),
        st.tuples(st.just("group"), st.sampled_from(GROUPS), st.sampled_from(["ADDED", "DELETED"]), st.integers(1, 3)),
        st.tuples(st.just("gang-group"), st.sampled_from(GROUPS)),
        st.tuples(st.just("job"), st.sampled_from(GROUPS), st.sampled_from(["ADDED", "DELETED"]), st.integers(1, 4)),
        st.tuples(st.just("node"), st.sampled_from(["node-0", "node-1", "node-2"]), st.sampled_from(["8", "16"])),
        st.tuples(st.just("priority"), st.integers(0, 1000)),
        st.tuples(st.just("reserve"), st.sampled_from(GROUPS), st.booleans()),
    ),
    max_size=30,
)


def kept(snapshot: ClusterSnapshot) -> GangQueue:
    """The queue the model keeps on its snapshot."""
    assert isinstance(snapshot.queue, GangQueue)
    return snapshot.queue


def comparable(queue: GangQueue) -> object:
    return (
        dict(queue.summaries),
        dict(queue.gang_of),
        queue.order,
        queue.by_arrival,
        {k: v for k, v in queue.held_by_priority.items() if v},
        {k: v for k, v in queue.surplus_by_priority.items() if v},
        queue.partly_bound,
        queue.growable,
        queue.scattered,
    )


def apply(state: ClusterState, event: tuple[object, ...]) -> None:
    kind = event[0]
    if kind == "pod":
        _, name, change, node, phase, priority = event
        owner = str(name).split("-")[0]
        job = "" if owner == "loose" else owner
        index = int(str(name).rsplit("-", 1)[1])
        pod = make_pod(
            str(name),
            node=str(node),
            phase=str(phase),
            group=job,
            job=job,
            role="worker" if job else "",
            index=index,
            priority=int(str(priority)),
        )
        state.apply(Kind.POD, change, pod)  # type: ignore[arg-type]
    elif kind == "group":
        _, name, change, minimum = event
        state.apply(Kind.PODGROUP, change, make_podgroup(str(name), min_member=int(str(minimum))))  # type: ignore[arg-type]
    elif kind == "gang-group":
        linked = make_podgroup(str(event[1]), min_member=1)
        linked["metadata"]["annotations"] = {GANG_GROUPS_ANNOTATION: '["default/a", "default/b"]'}
        state.apply(Kind.PODGROUP, "MODIFIED", linked)
    elif kind == "job":
        _, name, change, workers = event
        tfjob = make_sized_tfjob(
            str(name), workers=int(str(workers)), cpu="1", memory="1Gi", min_workers=1, max_workers=3, dynamic=True
        )
        state.apply(Kind.TFJOB, change, tfjob)  # type: ignore[arg-type]
    elif kind == "node":
        state.apply(Kind.NODE, "ADDED", make_node(str(event[1]), cpu=str(event[2])))
    elif kind == "priority":
        priority_class = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}}
        state.apply(Kind.PRIORITY_CLASS, "ADDED", {**priority_class, "value": event[1]})
    else:
        _, gang, release = event
        if release:
            hold(state, release_groups=[f"default/{gang}"])
        else:
            reservation = Reservation(f"default/{gang}-worker-0", f"default/{gang}", "node-0", ONE_CPU, NOW + 60)
            hold(state, reserve=[reservation])


@settings(max_examples=200, deadline=None)
@given(events)
def test_the_incremental_queue_equals_one_built_from_scratch(sequence: list[tuple[object, ...]]) -> None:
    state = ClusterState()
    for kind in Kind:
        state.mark_synced(kind)
    for event in sequence:
        apply(state, event)
        snapshot = state.snapshot()
        assert comparable(kept(snapshot)) == comparable(build_queue(snapshot, PolicySettings()))


def test_waiting_gangs_come_in_rank_order_with_the_starving_first() -> None:
    state = ClusterState()
    state.apply(Kind.NODE, "ADDED", make_node("node-0", cpu="1"))
    for name, minute in (("old", "00"), ("mid", "10"), ("new", "20")):
        state.apply(Kind.POD, "ADDED", make_pod(f"{name}-worker-0", group=name, job=name, role="worker", cpu="2"))
        group = make_podgroup(name, min_member=1)
        group["metadata"]["creationTimestamp"] = f"2026-03-01T10:{minute}:00Z"
        state.apply(Kind.PODGROUP, "ADDED", group)
    snapshot = state.snapshot()
    created = kept(snapshot).summaries["default/old"].arrival
    settings_ = PolicySettings(starvation_limit_s=900)
    assert [r.subject for r in kept(snapshot).waiting(created + 60, settings_)] == [
        "default/old",
        "default/mid",
        "default/new",
    ]
    # Past the limit only "old" starves: it keeps the lead; aging never reorders the others.
    ranks = list(kept(snapshot).waiting(created + 1000, settings_))
    assert [(r.subject, r.starving) for r in ranks] == [
        ("default/old", True),
        ("default/mid", False),
        ("default/new", False),
    ]


@settings(max_examples=150, deadline=None)
@given(events, st.lists(st.sampled_from([0.0, 30.0, 700.0, 5000.0]), min_size=30, max_size=30))
def test_job_states_tracked_across_events_equal_those_derived_afresh(
    sequence: list[tuple[object, ...]], clock: list[float]
) -> None:
    state = ClusterState()
    for kind in Kind:
        state.mark_synced(kind)
    tracker = JobStateTracker()
    for event, later in zip(sequence, clock, strict=False):
        apply(state, event)
        snapshot = state.snapshot()
        now = NOW + later
        tracked = [(s.job, s.state) for s in tracker.states(snapshot, now, PolicySettings())]
        assert tracked == [(s.job, s.state) for s in job_states(snapshot, now, PolicySettings())]


gangs = st.lists(
    st.tuples(
        st.integers(1, 6),  # pods of the gang
        st.sampled_from(["1", "3", "8"]),  # CPU per pod: the size class
        st.integers(0, 50),  # minutes after 09:00 it was created
        st.sampled_from([0, 100]),  # priority
        st.integers(0, 6),  # pods already bound
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(gangs, st.lists(st.sampled_from([0.0, 590.0, 1300.0, 2500.0, 9000.0]), min_size=1, max_size=4))
def test_waiting_gangs_come_in_the_order_a_full_sort_gives_at_any_clock(
    specs: list[tuple[int, str, int, int, int]], clocks: list[float]
) -> None:
    """The queue is sorted once by the rank keys that do not move with the clock (size class, base weight);
    at any `now` the starving gangs, which climb classes and age their weight, are merged in: the order is
    exactly that of every waiting gang ranked afresh at `now`."""
    state = ClusterState()
    for kind in Kind:
        state.mark_synced(kind)
    state.apply(Kind.NODE, "ADDED", make_node("node-0", cpu="64", memory="256Gi"))
    for number, (pods, cpu, minute, priority, bound) in enumerate(specs):
        name = f"g{number}"
        group = make_podgroup(name, min_member=pods)
        group["metadata"]["creationTimestamp"] = f"2026-03-01T09:{minute:02d}:00Z"
        state.apply(Kind.PODGROUP, "ADDED", group)
        for index in range(pods):
            node, phase = ("node-0", "Running") if index < bound else ("", "Pending")
            member = make_pod(f"{name}-{index}", group=name, cpu=cpu, priority=priority, node=node, phase=phase)
            state.apply(Kind.POD, "ADDED", member)
    snapshot = state.snapshot()
    start = kept(snapshot).summaries["default/g0"].arrival
    for later in clocks:
        now = start + later
        expected = sorted(
            (summary.rank(now, SETTINGS) for summary in kept(snapshot).summaries.values() if summary.ages),
            key=lambda rank: rank.sort_key,
        )
        assert [rank.subject for rank in kept(snapshot).waiting(now, SETTINGS)] == [rank.subject for rank in expected]


def test_the_gangs_of_dynamic_jobs_below_their_maximum_are_the_growable_ones() -> None:
    state = ClusterState()
    for name, workers in (("a", 2), ("b", 3)):
        state.apply(Kind.POD, "ADDED", make_pod(f"{name}-worker-0", group=name, job=name, role="worker"))
        state.apply(Kind.PODGROUP, "ADDED", make_podgroup(name, min_member=1))
        tfjob = make_sized_tfjob(
            name, workers=workers, cpu="1", memory="1Gi", min_workers=1, max_workers=3, dynamic=True
        )
        state.apply(Kind.TFJOB, "ADDED", tfjob)
    queue = kept(state.snapshot())
    assert queue is not None and queue.growable == frozenset({"default/a"})
    grown = make_sized_tfjob("a", workers=3, cpu="1", memory="1Gi", min_workers=1, max_workers=3, dynamic=True)
    state.apply(Kind.TFJOB, "MODIFIED", grown)
    queue = kept(state.snapshot())
    assert queue is not None and queue.growable == frozenset()


def test_the_gangs_with_a_worker_away_from_every_ps_node_are_the_scattered_ones() -> None:
    state = ClusterState()
    for node in ("node-0", "node-1"):
        state.apply(Kind.NODE, "ADDED", make_node(node, cpu="8"))
    state.apply(Kind.PODGROUP, "ADDED", make_podgroup("a", min_member=3))
    for name, role, index, node in (("a-ps-0", "ps", 0, "node-0"), ("a-worker-0", "worker", 0, "node-0")):
        state.apply(Kind.POD, "ADDED", make_pod(name, group="a", job="a", role=role, index=index, node=node))
    away = make_pod("a-worker-1", group="a", job="a", role="worker", index=1, node="node-1")
    state.apply(Kind.POD, "ADDED", away)
    queue = kept(state.snapshot())
    assert queue is not None and queue.scattered == frozenset({"default/a"})
    state.apply(Kind.POD, "DELETED", away)
    queue = kept(state.snapshot())
    assert queue is not None and queue.scattered == frozenset()
