"""The dense capacity table always says what the per-node states say (and how many jobs each node runs),
whatever the order of events."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.resources import CPU, MEMORY, PODS, Resources
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.verbs.filtering import FIT_MEMO_MIN, fit_filter
from extender.state import convert
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import hold, make_node, make_pod

NODES = [f"node-{i}" for i in range(4)]
PODS_ = [f"p{i}" for i in range(6)]

node_event = st.tuples(
    st.just("node"),
    st.sampled_from(NODES),
    st.sampled_from(["ADDED", "DELETED"]),
    st.sampled_from(["4", "8"]),
    st.sampled_from([0, 2]),
    st.booleans(),
)
pod_event = st.tuples(
    st.just("pod"),
    st.sampled_from(PODS_),
    st.sampled_from(["ADDED", "DELETED"]),
    st.sampled_from(["", *NODES]),
    st.sampled_from(["Pending", "Running", "Succeeded"]),
    st.sampled_from([0, 1]),
    st.sampled_from(["", "job-a", "job-b"]),
)
reservation = st.tuples(st.just("reserve"), st.sampled_from(PODS_), st.sampled_from(NODES), st.booleans())


def assert_table_matches(snapshot: ClusterSnapshot) -> None:
    table = snapshot.capacity
    assert set(table.rows) == set(snapshot.nodes)
    for name, state in snapshot.nodes.items():
        row = table.rows[name]
        assert table.names[row] == name
        assert table.resources(table.allocatable[row]) == state.node.allocatable
        assert table.resources(table.available[row]) == state.available
        assert bool(table.schedulable[row]) == state.node.schedulable
        owners = {(pod.job or pod.key) for key in state.pods if (pod := snapshot.pods.get(key))}
        assert table.jobs[row] == len(owners)
    vacant = [row for row, name in enumerate(table.names) if not name]
    assert not table.schedulable[vacant].any()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(node_event, pod_event, reservation), max_size=40))
def test_the_table_mirrors_every_node_state(events: list[tuple[object, ...]]) -> None:
    state = ClusterState()
    for event in events:
        if event[0] == "node":
            _, name, kind, cpu, gpu, ready = event
            state.apply(Kind.NODE, kind, make_node(str(name), cpu=str(cpu), gpu=int(str(gpu)), ready=bool(ready)))  # type: ignore[arg-type]
        elif event[0] == "pod":
            _, name, kind, node, phase, gpu, job = event
            pod = make_pod(str(name), node=str(node), phase=str(phase), gpu=int(str(gpu)), cpu="1", job=str(job))
            state.apply(Kind.POD, kind, pod)  # type: ignore[arg-type]
        else:
            _, pod_name, node, release = event
            if release:
                hold(state, release_groups=["default/g"])
            else:
                held = Reservation(f"default/{pod_name}", "default/g", str(node), ONE_CPU, 100.0)
                hold(state, reserve=[held])
        snapshot = state.snapshot()
        assert_table_matches(snapshot)
        assert_remembered_fit_is_fresh(snapshot)


CANDIDATES = (*NODES, *(f"elsewhere-{i}" for i in range(FIT_MEMO_MIN)))
"""kube-scheduler's candidate tuple, long enough for plain-fit answers to be remembered, the same object
call after call."""
SHAPES = [make_pod(f"asked-{cpu}", cpu=cpu, gpu=gpu) for cpu in ("1", "3") for gpu in (0, 1)]


def assert_remembered_fit_is_fresh(snapshot: ClusterSnapshot) -> None:
    """The plain-fit answer remembered on the table is the one a fresh check gives (an equal, other tuple
    is never remembered)."""
    for raw in SHAPES:
        pod = convert.pod_view(raw)
        remembered = fit_filter(snapshot, pod, CANDIDATES)
        assert fit_filter(snapshot, pod, CANDIDATES) is remembered
        assert fit_filter(snapshot, pod, list(CANDIDATES)) == remembered


ONE_CPU = Resources({CPU: 1000, MEMORY: 2**30, PODS: 1})


def test_an_old_snapshot_keeps_its_numbers_after_later_events() -> None:
    state = ClusterState()
    state.apply(Kind.NODE, "ADDED", make_node("node-0", cpu="4"))
    before = state.snapshot()
    row = before.capacity.rows["node-0"]
    cpu = before.capacity.layout.index[CPU]
    state.apply(Kind.POD, "ADDED", make_pod("p", node="node-0", phase="Running", cpu="3"))
    after = state.snapshot()
    assert before.capacity.available[row, cpu] == 4000
    assert after.capacity.available[row, cpu] == 1000
    assert not before.capacity.available.flags.writeable
