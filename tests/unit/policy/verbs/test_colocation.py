"""PS–worker co-location: `place_units` on given free capacity, then through `filter` and `prioritize`.

Node sizes are in whole CPUs with 32Gi of memory unless said otherwise; every pod asks for 1Gi. Idleness
is the mean free share over cpu and memory (and GPUs where a node has any).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from extender.policy.core.resources import CPU, EMPTY, GPU, MEMORY, PODS, Resources
from extender.policy.core.views import PodView, Role
from extender.policy.gang.placement import PlacementUnit, idleness, place_units
from tests.builders import make_node, make_pod, make_podgroup, tfjob_pods
from tests.unit.policy.loop import Loop

GI = 2**30


def view(name: str, role: Role = Role.WORKER, cpu: int = 1, index: int = 0) -> PodView:
    requests = Resources({CPU: cpu * 1000, MEMORY: GI, PODS: 1})
    return PodView("default", name, f"uid-{name}", requests, role=role, index=index, job="default/mnist")


def job(ps_cpu: int, workers: int, worker_cpu: int) -> list[PodView]:
    return [view("ps-0", Role.PS, ps_cpu)] + [view(f"worker-{i}", cpu=worker_cpu, index=i) for i in range(workers)]


def capacity(**cpus: int | tuple[int, int]) -> tuple[dict[str, Resources], dict[str, Resources]]:
    """node=free CPUs (of the same allocatable), or node=(free, allocatable); 32Gi free of 32Gi each."""
    free: dict[str, Resources] = {}
    allocatable: dict[str, Resources] = {}
    for node, amount in cpus.items():
        left, size = amount if isinstance(amount, tuple) else (amount, amount)
        free[node] = Resources({CPU: left * 1000, MEMORY: 32 * GI, PODS: 110})
        allocatable[node] = Resources({CPU: size * 1000, MEMORY: 32 * GI, PODS: 110})
    return free, allocatable


def where(assignments: Mapping[str, str]) -> dict[str, str]:
    return {key.removeprefix("default/"): node for key, node in assignments.items()}


# -- the whole unit on one node ------------------------------------------------------------------------

THREE_CPU_JOB = job(1, 2, 1)  # 1 + 2 × 1 = 3 CPU


@pytest.mark.parametrize(
    ("ps_nodes", "job_nodes", "allowed", "node"),
    [
        # Leftover idleness with 3 CPU placed, memory 29/32 = .906 everywhere:
        # a (8 of 8) → (.625 + .906) / 2 = .77; b (4 of 8) → (.125 + .906) / 2 = .52; c (3 of 8) → .45.
        pytest.param(frozenset(), {}, {}, "c", id="the tightest node that holds the whole job"),
        pytest.param(frozenset({"a"}), {}, {}, "a", id="a node already running the job's PS beats a tighter one"),
        pytest.param(frozenset(), {"b": 2}, {}, "b", id="a node running other pods of the job beats a tighter one"),
        pytest.param(frozenset({"a"}), {"b": 3}, {}, "a", id="the PS's node beats a node with more of the job"),
        pytest.param(
            frozenset(),
            {},
            {"default/ps-0": frozenset({"a", "b"})},
            "b",
            id="a pinned pod keeps the whole job among its allowed nodes",
        ),
    ],
)
def test_a_job_that_fits_one_node_goes_there_whole(
    ps_nodes: frozenset[str], job_nodes: dict[str, int], allowed: dict[str, frozenset[str]], node: str
) -> None:
    free, allocatable = capacity(a=(8, 8), b=(4, 8), c=(3, 8))
    unit = PlacementUnit("default/mnist", THREE_CPU_JOB, ps_nodes, job_nodes, allowed)
    placement = place_units([unit], free, allocatable)
    assert where(placement.assignments) == dict.fromkeys(["ps-0", "worker-0", "worker-1"], node)
    assert placement.unplaced == ()


def test_equally_tight_nodes_are_chosen_by_name() -> None:
    free, allocatable = capacity(b=4, a=4)
    placement = place_units([PlacementUnit("default/mnist", THREE_CPU_JOB)], free, allocatable)
    assert set(placement.assignments.values()) == {"a"}


# -- spreading over as few nodes as possible -----------------------------------------------------------

TEN_CPU_JOB = job(2, 4, 2)  # 2 + 4 × 2 = 10 CPU: more than any node below holds


@pytest.mark.parametrize(
    ("ps_nodes", "expected"),
    [
        pytest.param(
            frozenset(),
            # Idlest first: a (8 of 8) → 1.0, b (6 of 8) → .875, c (4 of 8) → .75.
            # a takes the PS and 3 workers (8 CPU), b the last worker.
            {"ps-0": "a", "worker-0": "a", "worker-1": "a", "worker-2": "a", "worker-3": "b"},
            id="the PS on the idlest node with as many workers as fit beside it",
        ),
        pytest.param(
            frozenset({"c"}),
            # c holds the job's PS already, so it is filled first: PS and 1 worker (4 CPU); then a.
            {"ps-0": "c", "worker-0": "c", "worker-1": "a", "worker-2": "a", "worker-3": "a"},
            id="nodes holding the job's PS are filled first",
        ),
    ],
)
def test_a_job_too_big_for_one_node_spreads_over_the_fewest(ps_nodes: frozenset[str], expected: dict[str, str]) -> None:
    free, allocatable = capacity(a=(8, 8), b=(6, 8), c=(4, 8))
    placement = place_units([PlacementUnit("default/mnist", TEN_CPU_JOB, ps_nodes)], free, allocatable)
    assert where(placement.assignments) == expected
    assert placement.unplaced == ()


def test_pods_that_fit_nowhere_are_returned_unplaced() -> None:
    # PS 2 + 4 workers × 4 CPU = 18 CPU on 8 + 6: a takes the PS and worker 0 (6), b worker 1 (4).
    free, allocatable = capacity(a=8, b=6)
    placement = place_units([PlacementUnit("default/mnist", job(2, 4, 4))], free, allocatable)
    assert where(placement.assignments) == {"ps-0": "a", "worker-0": "a", "worker-1": "b"}
    assert [pod.name for pod in placement.unplaced] == ["worker-2", "worker-3"]


def test_the_bigger_unit_is_placed_first_and_its_capacity_is_not_offered_again() -> None:
    # big: 3 × 2 CPU = 6 CPU, small: 3 × 1 CPU = 3 CPU, on a (6 CPU) and b (8 CPU).
    # big first: a is tightest for it (0 CPU left) → a; small then only fits b.
    # (small first would have taken a — (3/6 + 29/32) / 2 = .70 beats b's (5/8 + 29/32) / 2 = .77.)
    big = PlacementUnit("default/z-big", [view(f"big-{i}", cpu=2) for i in range(3)])
    small = PlacementUnit("default/a-small", [view(f"small-{i}", cpu=1) for i in range(3)])
    free, allocatable = capacity(a=6, b=8)
    placement = place_units([small, big], free, allocatable)
    assert {key.split("-")[0].removeprefix("default/"): node for key, node in placement.assignments.items()} == {
        "big": "a",
        "small": "b",
    }


def test_place_units_leaves_its_input_untouched() -> None:
    free, allocatable = capacity(a=8, b=6)
    before = dict(free)
    place_units([PlacementUnit("default/mnist", TEN_CPU_JOB)], free, allocatable)
    assert free == before


@pytest.mark.parametrize(
    ("free", "allocatable", "expected"),
    [
        pytest.param(
            Resources({CPU: 8000, MEMORY: 32 * GI}), Resources({CPU: 8000, MEMORY: 32 * GI}), 1.0, id="empty is 1"
        ),
        pytest.param(EMPTY, Resources({CPU: 8000, MEMORY: 32 * GI}), 0.0, id="full is 0"),
        pytest.param(
            Resources({CPU: 2000, MEMORY: 16 * GI}),
            Resources({CPU: 8000, MEMORY: 32 * GI}),
            0.375,
            id="a quarter of the cpu and half the memory free is (.25 + .5) / 2",
        ),
        pytest.param(
            Resources({CPU: 8000, MEMORY: 32 * GI}),
            Resources({CPU: 8000, MEMORY: 32 * GI, GPU: 4}),
            2 / 3,
            id="a node with GPUs counts them: (1 + 1 + 0) / 3",
        ),
        pytest.param(
            Resources({CPU: -1000, MEMORY: 32 * GI}),
            Resources({CPU: 8000, MEMORY: 32 * GI}),
            0.5,
            id="an overcommitted resource counts as 0, not negative",
        ),
        pytest.param(EMPTY, EMPTY, 0.0, id="a node without cpu or memory is 0"),
    ],
)
def test_idleness(free: Resources, allocatable: Resources, expected: float) -> None:
    assert idleness(free, allocatable) == pytest.approx(expected)


# -- through the filter verb ---------------------------------------------------------------------------


def eight_cpu_nodes() -> list[dict[str, object]]:
    return [make_node(f"node-{i}", cpu="8", memory="32Gi") for i in range(3)]


def test_a_gang_whose_ps_already_runs_is_planned_whole_onto_the_ps_node() -> None:
    loop = Loop(
        *eight_cpu_nodes(),
        *tfjob_pods("mnist", ps=1, workers=3, nodes={"mnist-ps-0": "node-2"}),
        make_podgroup("mnist", min_member=4),
    )
    decision = loop.filter("mnist-worker-0")
    assert decision.feasible == ("node-2",)
    assert {r.pod: r.node for r in decision.reserve} == {f"default/mnist-worker-{i}": "node-2" for i in range(3)}


def test_a_gang_goes_whole_to_the_tightest_node_that_holds_it() -> None:
    # The job needs 4 CPU; node-1 has exactly 4 left (tightest), node-0 has 6, node-2 all 8.
    loop = Loop(
        *eight_cpu_nodes(),
        make_pod("filler-0", cpu="2", node="node-0", phase="Running"),
        make_pod("filler-1", cpu="4", node="node-1", phase="Running"),
        *tfjob_pods("mnist", ps=1, workers=3),
        make_podgroup("mnist", min_member=4),
    )
    decision = loop.filter("mnist-ps-0")
    assert decision.feasible == ("node-1",)
    assert {r.node for r in decision.reserve} == {"node-1"}


def test_a_gang_too_big_for_any_node_puts_the_ps_on_the_idlest_with_workers_beside_it() -> None:
    # 4 CPU, 16Gi nodes; fillers of 1Gi leave node-0 2 CPU, node-1 3 CPU, node-2 all 4.
    # Idleness: node-0 (2/4 + 15/16) / 2 = .72, node-1 (3/4 + 15/16) / 2 = .84, node-2 1.0.
    # 1 PS + 5 workers of 1 CPU = 6 CPU: node-2 takes the PS and 3 workers, node-1 the other 2.
    loop = Loop(
        *(make_node(f"node-{i}", cpu="4", memory="16Gi") for i in range(3)),
        make_pod("filler-0", cpu="2", node="node-0", phase="Running"),
        make_pod("filler-1", cpu="1", node="node-1", phase="Running"),
        *tfjob_pods("mnist", ps=1, workers=5),
        make_podgroup("mnist", min_member=6),
    )
    decision = loop.filter("mnist-ps-0")
    assert decision.feasible == ("node-2",)
    assert {r.pod.removeprefix("default/mnist-"): r.node for r in decision.reserve} == {
        "ps-0": "node-2",
        "worker-0": "node-2",
        "worker-1": "node-2",
        "worker-2": "node-2",
        "worker-3": "node-1",
        "worker-4": "node-1",
    }


# -- through the prioritize verb -----------------------------------------------------------------------


def test_a_planned_pod_scores_its_planned_node_10_and_every_other_0() -> None:
    loop = Loop(*eight_cpu_nodes(), *tfjob_pods("mnist", ps=1, workers=3), make_podgroup("mnist", min_member=4))
    loop.filter("mnist-ps-0")
    node = loop.snapshot.reservations["default/mnist-worker-1"].node
    decision = loop.prioritize("mnist-worker-1")
    assert decision.outcome == "planned"
    assert decision.scores == {n: 10 if n == node else 0 for n in loop.nodes()}


@pytest.mark.parametrize(
    ("bound", "scored", "expected"),
    [
        pytest.param(
            {"mnist-ps-0": "node-1"},
            "mnist-worker-0",
            # node-1: 0.7 × 1.0 + 0.3 × (6/8 + 30/32) / 2 = .7 + .253 = .953 → 10
            # node-0, node-2: 0.3 × (7/8 + 31/32) / 2 = .277 → 3
            {"node-0": 3, "node-1": 10, "node-2": 3},
            id="a worker scores the node with its job's PS above empty nodes",
        ),
        pytest.param(
            {"mnist-worker-0": "node-2", "mnist-worker-1": "node-2"},
            "mnist-ps-0",
            # node-2: 0.7 + 0.3 × (5/8 + 29/32) / 2 = .7 + .230 = .930 → 9
            {"node-0": 3, "node-1": 3, "node-2": 9},
            id="a PS scores the node with its workers above empty nodes",
        ),
        pytest.param(
            {"mnist-worker-0": "node-0"},
            "mnist-worker-1",
            # Without a PS bound the worker has no partner; node-0 holds its job: 0.7 × 0.6 + .253 = .673 → 7
            {"node-0": 7, "node-1": 3, "node-2": 3},
            id="a worker scores a node with other pods of its job above empty nodes",
        ),
    ],
)
def test_colocation_scores(bound: dict[str, str], scored: str, expected: dict[str, int]) -> None:
    loop = Loop(*eight_cpu_nodes(), *tfjob_pods("mnist", ps=1, workers=3, gang=False, nodes=bound))
    decision = loop.prioritize(scored)
    assert decision.outcome == "scored"
    assert decision.scores == expected
    assert all(isinstance(score, int) for score in decision.scores.values())


def test_a_node_the_model_lacks_scores_0() -> None:
    loop = Loop(*eight_cpu_nodes(), *tfjob_pods("mnist", ps=1, workers=1, gang=False))
    assert loop.prioritize("mnist-worker-0", ["ghost", "node-0"]).scores == {"ghost": 0, "node-0": 3}


def test_a_pod_of_no_tfjob_and_no_gang_gets_no_score_from_the_extender() -> None:
    loop = Loop(*eight_cpu_nodes(), make_pod("plain"))
    decision = loop.prioritize("plain")
    assert (decision.outcome, decision.scores) == ("no-opinion", {})


def test_pods_of_other_schedulers_score_0_everywhere() -> None:
    loop = Loop(*eight_cpu_nodes(), make_pod("other", scheduler="default-scheduler"))
    decision = loop.prioritize("other")
    assert decision.outcome == "passthrough"
    assert decision.scores == {"node-0": 0, "node-1": 0, "node-2": 0}
