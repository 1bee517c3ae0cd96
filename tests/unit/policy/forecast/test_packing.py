"""Room in pieces: the workers the nodes hold now node by node, the forward run holding a gang whose start
needs fit only in the summed room until the first job ends, and the gangs no arrangement of the nodes could
ever hold (too big for them empty, or a member no schedulable node admits): "unknown", with why."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from extender.policy.core.resources import Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.forecast.forward import starts_given
from extender.policy.forecast.inputs import forecast_inputs
from extender.policy.forecast.model import WaitingGang
from extender.policy.forecast.montecarlo import forecast_starts, what_if
from extender.policy.forecast.packing import Ask, NodeRoom
from tests.builders import make_node, make_pod, make_podgroup, make_sized_tfjob, snapshot
from tests.unit.policy.forecast.test_montecarlo import fixed_curve, inputs

CPU_2 = Ask(Resources({"cpu": 2000}))


def test_each_node_holds_whole_workers_only_and_the_other_replicas_go_first() -> None:
    nodes = snapshot(make_node("node-a", cpu="3"), make_node("node-b", cpu="3"))
    room = NodeRoom(nodes.capacity)
    assert room.workers_fitting([], CPU_2) == 2, "6 CPUs summed, but 1 left on each node"
    assert room.workers_fitting([CPU_2], CPU_2) == 1, "the PS on one node leaves one worker's room"
    assert room.workers_fitting([Ask(Resources({"cpu": 4000}))], CPU_2) == -1, "no node holds the PS"
    assert room.workers_fitting([], CPU_2) == 2, "asking placed nothing for good"


def members(*, bound_to: str = "") -> list[dict[str, object]]:
    ps = make_pod("job-ps-0", job="job", role="ps", group="job", cpu="2", node=bound_to)
    workers = [make_pod(f"job-worker-{i}", job="job", role="worker", index=i, group="job", cpu="2") for i in range(2)]
    return [ps, *workers]


@pytest.mark.parametrize(("bound_to", "counted"), [("", 1), ("node-a", None)])
def test_a_waiting_tfjob_is_counted_node_by_node_unless_a_member_is_bound(bound_to: str, counted: int | None) -> None:
    job = [make_sized_tfjob("job", workers=2, cpu="2"), make_podgroup("job", min_member=3)]
    nodes = [make_node("node-a", cpu="3"), make_node("node-b", cpu="3")]
    waiting, _ = forecast_inputs(snapshot(*nodes, *job, *members(bound_to=bound_to)), PolicySettings(), 0.0, [], {})
    (gang,) = waiting.waiting
    assert (gang.workers, gang.fits_now_workers, gang.held_now) == (2, counted, counted is not None)


def test_a_gang_whose_workers_do_not_fit_node_by_node_waits_for_the_first_job_to_end() -> None:
    case = inputs([("r", 2.0, 40.0)], [], free=6.0, curve=fixed_curve(100))
    fitting = WaitingGang("a", (4.0, 0.0, 0.0), workers=2, fits_now_workers=2)
    held = WaitingGang("a", (4.0, 0.0, 0.0), workers=2, fits_now_workers=1)
    for gang, start in ((fitting, 0.0), (held, 60.0)):
        starts = starts_given(replace(case, waiting=(gang,)), np.array([[60.0]]), np.array([[100.0]]))
        assert starts.tolist() == [[pytest.approx(start)]]


def test_a_gang_no_arrangement_of_the_nodes_holds_even_empty_is_unknown_and_its_smaller_sizes_are_not() -> None:
    job = [make_sized_tfjob("job", workers=4, cpu="2", min_workers=1), make_podgroup("job", min_member=5)]
    pods = [make_pod("job-ps-0", job="job", role="ps", group="job", cpu="2")] + [
        make_pod(f"job-worker-{i}", job="job", role="worker", index=i, group="job", cpu="2") for i in range(4)
    ]
    nodes = [make_node(f"node-{i}", cpu="3") for i in range(4)]
    waiting, _ = forecast_inputs(snapshot(*nodes, *job, *pods), PolicySettings(), 0.0, [], {})
    case = replace(waiting, curve=fixed_curve(100))
    (gang,) = case.waiting
    assert (gang.workers, gang.fits_empty_workers, gang.never_fits) == (4, 3, True), "10 of 12 CPUs, 3 per node"
    band = forecast_starts(case, 50, 1)["default/job"]
    assert band.unknown.startswith(
        "its 4 workers do not fit on the nodes they may go to even with all of them empty (at most 3"
    )
    assert [workers for workers, band in what_if(case, gang.key, 50, 1) if band.known] == [3, 2, 1]


def test_a_worker_bigger_than_every_node_never_starts_and_says_so() -> None:
    job = [make_sized_tfjob("job", workers=2, cpu="4"), make_podgroup("job", min_member=3)]
    pods = [make_pod("job-ps-0", job="job", role="ps", group="job", cpu="4", node="node-0")] + [
        make_pod(f"job-worker-{i}", job="job", role="worker", index=i, group="job", cpu="4") for i in range(2)
    ]
    nodes = [make_node(f"node-{i}", cpu=cpu) for i, cpu in enumerate(("4", "3", "3", "3"))]
    waiting, _ = forecast_inputs(snapshot(*nodes, *job, *pods), PolicySettings(), 0.0, [], {})
    (gang,) = replace(waiting, curve=fixed_curve(100)).waiting
    assert gang.fits_now_workers is None, "a member is bound"
    assert gang.never_fits, "8 CPUs more are free in the sum, but no node other than the PS's holds 4"


def test_the_count_on_empty_nodes_never_errs_low_where_the_other_replicas_go() -> None:
    nodes = snapshot(make_node("big", cpu="4"), make_node("small", cpu="2"))
    empty = NodeRoom(nodes.capacity, empty=True)
    ps, worker = Ask(Resources({"cpu": 2000})), Ask(Resources({"cpu": 4000}))
    assert empty.workers_fitting([ps], worker) == 0, "first fit puts the PS on the big node"
    assert empty.workers_at_most([ps], worker) == 1, "the PS on the small node leaves the big one a worker"
    assert empty.workers_at_most([ps, ps], worker) == 1, "two PS: the count may err high, never low"
    assert empty.workers_at_most([Ask(Resources({"cpu": 5000}))], worker) == -1, "no node holds that PS"


def test_a_gang_whose_ps_fits_no_node_never_starts_and_says_so() -> None:
    case = inputs([], [], free=8.0, curve=fixed_curve(100))
    gang = WaitingGang("a", (4.0, 0.0, 0.0), workers=2, fits_empty_workers=-1)
    band = forecast_starts(replace(case, waiting=(gang,)), 20, 1)["a"]
    assert band.unknown == "one of its replicas other than workers fits no node even empty, so it can never start"


@pytest.mark.parametrize(
    ("labels", "cordoned", "kept_out"),
    [({"pool": "a"}, False, ""), ({"pool": "a"}, True, "job-worker-1"), ({}, False, "job-worker-1")],
)
def test_a_member_no_schedulable_node_admits_keeps_its_gang_from_ever_starting(
    labels: dict[str, str], cordoned: bool, kept_out: str
) -> None:
    job = [make_sized_tfjob("job", workers=2, cpu="1"), make_podgroup("job", min_member=3)]
    pods = members()
    spec = pods[2]["spec"]
    assert isinstance(spec, dict)
    spec["nodeSelector"] = {"pool": "a"}
    nodes = [make_node("node-a", cpu="8", labels=labels, unschedulable=cordoned), make_node("node-b", cpu="8")]
    waiting, _ = forecast_inputs(snapshot(*nodes, *job, *pods), PolicySettings(), 0.0, [], {})
    (gang,) = waiting.waiting
    assert (gang.kept_out, gang.never_fits) == (kept_out, bool(kept_out))
    band = forecast_starts(replace(waiting, curve=fixed_curve(100)), 20, 1)["default/job"]
    assert band.known != bool(kept_out)
    if kept_out:
        assert band.unknown.startswith("no schedulable node admits its pod job-worker-1 (node selector")


def test_pods_are_counted_only_on_the_nodes_they_may_go_to() -> None:
    small = [make_node(f"small-{i}", cpu="3", labels={"pool": "a"}) for i in range(2)]
    big = [make_node(f"big-{i}", cpu="8", labels={"pool": "b"}) for i in range(2)]
    nodes = snapshot(*small, *big)
    empty = NodeRoom(nodes.capacity, empty=True)
    worker, pool_a = Resources({"cpu": 4000}), frozenset({"small-0", "small-1"})
    assert empty.workers_fitting([], Ask(worker)) == 4
    assert empty.workers_fitting([], Ask(worker, pool_a)) == 0, "no node of pool a holds a worker"
    ps = Ask(Resources({"cpu": 2000}), pool_a)
    assert empty.workers_fitting([ps], Ask(worker)) == 4, "the PS goes to pool a, the workers to pool b"
    assert empty.workers_at_most([ps], Ask(worker)) == 4
    assert empty.workers_at_most([Ask(worker, pool_a)], Ask(worker)) == -1, "no node of pool a holds that PS"


def test_a_tfjob_whose_workers_fit_no_node_of_their_pool_never_starts() -> None:
    small = [make_node(f"small-{i}", cpu="3", labels={"pool": "a"}) for i in range(3)]
    nodes = [*small, make_node("big", cpu="16", labels={"pool": "b"})]
    job = [make_sized_tfjob("job", workers=3, cpu="2"), make_podgroup("job", min_member=4)]
    pods = [make_pod("job-ps-0", job="job", role="ps", group="job", cpu="2")] + [
        make_pod(f"job-worker-{i}", job="job", role="worker", index=i, group="job", cpu="2") for i in range(3)
    ]
    for pod in pods:
        spec = pod["spec"]
        assert isinstance(spec, dict)
        spec["nodeSelector"] = {"pool": "a"}
    waiting, _ = forecast_inputs(snapshot(*nodes, *job, *pods), PolicySettings(), 0.0, [], {})
    (gang,) = waiting.waiting
    assert (gang.fits_now_workers, gang.fits_empty_workers, gang.never_fits) == (2, 2, True), "8 of pool a's 9 CPUs"
    band = forecast_starts(replace(waiting, curve=fixed_curve(100)), 20, 1)["default/job"]
    assert band.unknown.startswith("its 3 workers do not fit on the nodes they may go to even with all of them")
