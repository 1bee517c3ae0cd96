"""Job weights (KOD2 Equation (1)), the rank order, bounded starvation aging, and ranking gangs of a snapshot.

The reference cluster is KOD2's: 3 nodes of 10 cores and 32 GiB, i.e. 30 CPU and 96 GiB to normalise against.
With the default settings (weight_scale 0.5, weight_offset 5) the paper-sized jobs spread well over (0, 1):

    small: 1 PS + 2 workers of 1 CPU, 2 GiB  → demand 3 CPU, 6 GiB   → shares 3/30 + 6/96   = 0.1625
           ω' = 0.5 × 2 / 0.1625 = 6.154      → ω = sigmoid(6.154 − 5) = sigmoid(+1.154) ≈ 0.760
    big:   1 PS + 8 workers of 2 CPU, 4 GiB  → demand 18 CPU, 36 GiB → shares 18/30 + 36/96 = 0.975
           ω' = 0.5 × 8 / 0.975  = 4.103      → ω = sigmoid(4.103 − 5) = sigmoid(−0.897) ≈ 0.290
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from typing import Any, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.policy.core.resources import CPU, GPU, MEMORY, PODS, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import JobView, Role
from extender.policy.rank.ranking import (
    JobRank,
    aged_weight,
    cluster_capacity,
    dominant_share,
    gang_rank,
    job_weight,
    rank_gangs,
)
from extender.policy.rank.weights import aged_classes, aging, size_class
from tests.builders import (
    Obj,
    make_node,
    make_pod,
    make_podgroup,
    make_priority_class,
    make_tfjob,
    snapshot,
    tfjob_pods,
)
from tests.unit.policy.loop import Loop

GI = 2**30
SETTINGS = PolicySettings()
KOD2 = Resources({CPU: 30_000, MEMORY: 96 * GI})
"""3 nodes × 10 cores × 32 GiB."""
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC).timestamp()
"""The reference creation time of the objects below (an hour before the builders' default stamps)."""
LIMIT = SETTINGS.starvation_limit_s


def view(
    *, ps: int = 1, workers: int = 2, cpu: float = 1, memory_gi: float = 2, min_workers: int | None = None
) -> JobView:
    """A TFJob view whose PS and workers all request `cpu` cores and `memory_gi` GiB."""
    each = Resources({CPU: round(cpu * 1000), MEMORY: round(memory_gi * GI), PODS: 1})
    return JobView(
        namespace="default",
        name="job",
        replicas={Role.PS: ps, Role.WORKER: workers},
        role_requests={Role.PS: each, Role.WORKER: each},
        min_workers=workers if min_workers is None else min_workers,
        max_workers=workers,
    )


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# -- the weight formula --------------------------------------------------------------------------------


def test_on_the_kod2_cluster_a_small_job_scores_clearly_above_a_big_one() -> None:
    small = job_weight(view(workers=2, cpu=1, memory_gi=2), KOD2, SETTINGS)
    big = job_weight(view(workers=8, cpu=2, memory_gi=4), KOD2, SETTINGS)
    assert small == pytest.approx(sigmoid(0.5 * 2 / (3 / 30 + 6 / 96) - 5))
    assert big == pytest.approx(sigmoid(0.5 * 8 / (18 / 30 + 36 / 96) - 5))
    assert small == pytest.approx(0.760, abs=1e-3)
    assert big == pytest.approx(0.290, abs=1e-3)
    assert small - big > 0.4, "the sigmoid is centred so typical jobs spread over (0, 1)"


def test_a_job_at_the_centre_scores_one_half() -> None:
    # The centre is weight_offset / weight_scale = 10 minimum workers per unit of summed share: here 1 worker
    # (no PS) taking 1.5 CPU and 4.8 GiB, shares 0.05 + 0.05 = 0.1, so ω' = 0.5 × 1 / 0.1 = 5 and ω = sigmoid(0).
    centre = view(ps=0, workers=1, cpu=1.5, memory_gi=4.8)
    assert job_weight(centre, KOD2, SETTINGS) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("heavier", "lighter"),
    [
        pytest.param(view(workers=4), view(workers=2), id="more workers of the same size share the PS and weigh more"),
        pytest.param(
            view(ps=0, workers=4, cpu=1, memory_gi=2),
            view(ps=0, workers=2, cpu=2, memory_gi=4),
            id="four 1-CPU workers weigh more than two 2-CPU workers of the same total demand",
        ),
        pytest.param(
            view(workers=8, min_workers=6),
            view(workers=8, min_workers=3),
            id="an elastic job weighs by its minimum worker count, not its replicas",
        ),
        pytest.param(view(cpu=1), view(cpu=2), id="more CPU per pod weighs less"),
        pytest.param(view(memory_gi=2), view(memory_gi=8), id="more memory per pod weighs less"),
        pytest.param(view(ps=1), view(ps=3), id="more parameter servers weigh less"),
        pytest.param(
            view(workers=2, cpu=1, memory_gi=2),
            view(workers=8, cpu=2, memory_gi=4),
            id="the KOD2 small job weighs more than the KOD2 big job",
        ),
    ],
)
def test_weight_rises_with_minimum_workers_and_falls_with_cpu_and_memory(heavier: JobView, lighter: JobView) -> None:
    assert job_weight(heavier, KOD2, SETTINGS) > job_weight(lighter, KOD2, SETTINGS)


def test_gpus_and_pod_slots_do_not_change_the_weight() -> None:
    plain = view()
    with_gpu = JobView(
        namespace="default",
        name="job",
        replicas=plain.replicas,
        role_requests={role: r + Resources({GPU: 1, PODS: 5}) for role, r in plain.role_requests.items()},
        min_workers=plain.min_workers,
        max_workers=plain.max_workers,
    )
    assert job_weight(with_gpu, KOD2 + Resources({GPU: 3}), SETTINGS) == job_weight(plain, KOD2, SETTINGS)


@pytest.mark.parametrize(
    ("job", "capacity", "expected"),
    [
        pytest.param(view(), Resources(), SETTINGS.default_weight, id="no capacity at all gives the default weight"),
        pytest.param(
            view(), Resources({GPU: 4}), SETTINGS.default_weight, id="no CPU or memory capacity gives the default"
        ),
        pytest.param(
            view(min_workers=0),
            KOD2,
            sigmoid(-SETTINGS.weight_offset),
            id="no minimum workers gives a raw score of zero",
        ),
        pytest.param(
            view(ps=0, workers=0, min_workers=0),
            KOD2,
            sigmoid(-SETTINGS.weight_offset),
            id="an empty job gives a raw score of zero",
        ),
        pytest.param(
            view(workers=2, cpu=0, memory_gi=0),
            KOD2,
            sigmoid(min(20.0, 0.5 * 2 / SETTINGS.weight_min_share - 5)),
            id="a job requesting nothing is floored at the minimum share, not divided by zero",
        ),
        pytest.param(
            view(workers=2, cpu=1, memory_gi=2),
            Resources({MEMORY: 96 * GI}),
            sigmoid(0.5 * 2 / (6 / 96) - 5),
            id="a dimension the cluster lacks is left out",
        ),
        pytest.param(
            view(workers=1, cpu=1000, memory_gi=10_000),
            KOD2,
            sigmoid(0.5 * 1 / (2 * 1000 / 30 + 2 * 10_000 / 96) - 5),
            id="a job larger than the cluster gets a small but defined weight",
        ),
    ],
)
def test_degenerate_inputs_give_defined_weights(job: JobView, capacity: Resources, expected: float) -> None:
    weight = job_weight(job, capacity, SETTINGS)
    assert weight == pytest.approx(expected)
    assert 0 < weight < 1


jobs = st.builds(
    view,
    ps=st.integers(0, 4),
    workers=st.integers(0, 64),
    cpu=st.floats(0, 512),
    memory_gi=st.floats(0, 4096),
)
capacities = st.builds(
    lambda cpu, memory: Resources({CPU: cpu, MEMORY: memory}),
    st.integers(0, 10**8),
    st.integers(0, 2**60),
)
policies = st.builds(
    PolicySettings,
    weight_scale=st.floats(0, 1e6, exclude_min=True),
    weight_offset=st.floats(-1e6, 1e6),
    weight_min_share=st.floats(0, 1, exclude_min=True),
)


@given(job=jobs, capacity=capacities, settings=policies)
def test_a_weight_is_always_strictly_between_zero_and_one(
    job: JobView, capacity: Resources, settings: PolicySettings
) -> None:
    assert 0 < job_weight(job, capacity, settings) < 1


def test_cluster_capacity_sums_the_schedulable_nodes_only() -> None:
    snap = snapshot(
        make_node("a", cpu="10", memory="32Gi"),
        make_node("b", cpu="10", memory="32Gi"),
        make_node("cordoned", cpu="64", memory="256Gi", unschedulable=True),
        make_node("not-ready", cpu="64", memory="256Gi", ready=False),
    )
    capacity = cluster_capacity(snap)
    assert (capacity.get(CPU), capacity.get(MEMORY)) == (20_000, 64 * GI)
    assert cluster_capacity(ClusterSnapshot()) == Resources()


# -- the rank order ------------------------------------------------------------------------------------


def rank(subject: str, *, priority: int = 0, weight: float = 0.5, arrival: float = T0) -> JobRank:
    return JobRank(subject, priority, weight, arrival, starving=False, base_weight=weight)


@pytest.mark.parametrize(
    ("higher", "lower"),
    [
        pytest.param(
            rank("b", priority=100, weight=0.01),
            rank("a", priority=0, weight=0.99),
            id="a low-weight high-priority job outranks a high-weight low-priority one",
        ),
        pytest.param(
            rank("b", weight=0.7, arrival=T0 + 60),
            rank("a", weight=0.3, arrival=T0),
            id="at equal priority the higher weight wins over an earlier arrival",
        ),
        pytest.param(
            rank("b", weight=0.5, arrival=T0),
            rank("a", weight=0.5, arrival=T0 + 1),
            id="at equal weight the earlier arrival wins, as in KOD2",
        ),
        pytest.param(
            rank("a", weight=0.5, arrival=T0),
            rank("b", weight=0.5, arrival=T0),
            id="at equal arrival the key breaks the tie deterministically",
        ),
        pytest.param(rank("a", priority=-5), rank("b", priority=-10), id="negative priorities compare as numbers"),
    ],
)
def test_rank_order(higher: JobRank, lower: JobRank) -> None:
    assert higher.outranks(lower)
    assert not lower.outranks(higher)
    assert higher.sort_key < lower.sort_key


def test_a_rank_does_not_outrank_itself() -> None:
    assert not rank("a").outranks(rank("a"))


def test_sorting_by_sort_key_puts_the_highest_rank_first() -> None:
    expected = [
        rank("vip", priority=1000, weight=0.1),
        rank("light", weight=0.9),
        rank("early", weight=0.5, arrival=T0),
        rank("a-late", weight=0.5, arrival=T0 + 5),
        rank("b-late", weight=0.5, arrival=T0 + 5),
        rank("heavy", weight=0.1),
    ]
    shuffled = expected.copy()
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled, key=lambda r: r.sort_key) == expected


# -- aging ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "waited", "expected", "starving"),
    [
        pytest.param(0.3, 0.0, 0.3, False, id="a gang that has not waited keeps its weight"),
        pytest.param(0.3, LIMIT, 0.3, False, id="at exactly the starvation limit it is not yet starving"),
        pytest.param(0.3, LIMIT + 1, 0.301, True, id="one second beyond the limit it starves and gains 0.001"),
        pytest.param(0.3, LIMIT + 350, 0.65, True, id="it rises linearly at the aging rate"),
        pytest.param(0.3, LIMIT + 700, 1.0, True, id="700 s beyond the limit a 0.3 job reaches the cap"),
        pytest.param(0.3, 1e9, 1.0, True, id="it never rises above the cap however long it waits"),
    ],
)
def test_aging_with_the_default_settings(base: float, waited: float, expected: float, starving: bool) -> None:
    weight, is_starving = aged_weight(base, waited, SETTINGS)
    assert weight == pytest.approx(expected)
    assert is_starving is starving


aging_policies = st.builds(
    PolicySettings,
    starvation_limit_s=st.floats(0, 1e6),
    aging_rate_per_s=st.floats(0, 10),
    aging_max_weight=st.floats(0, 1),
)
weights = st.floats(0, 1, exclude_min=True, exclude_max=True)
waits = st.floats(0, 1e8)


@given(base=weights, waited=waits, settings=aging_policies)
def test_an_aged_weight_stays_between_the_base_and_the_cap(
    base: float, waited: float, settings: PolicySettings
) -> None:
    weight, _ = aged_weight(base, waited, settings)
    assert weight >= base
    assert weight <= max(base, settings.aging_max_weight)
    assert weight <= 1


@given(base=weights, waits=st.tuples(waits, waits), settings=aging_policies)
def test_an_aged_weight_never_falls_as_the_wait_grows(
    base: float, waits: tuple[float, float], settings: PolicySettings
) -> None:
    shorter, longer = sorted(waits)
    assert aged_weight(base, shorter, settings)[0] <= aged_weight(base, longer, settings)[0]


@given(base=weights, waited=waits, settings=aging_policies)
def test_a_gang_starves_exactly_beyond_the_limit_and_ages_only_then(
    base: float, waited: float, settings: PolicySettings
) -> None:
    weight, starving = aged_weight(base, waited, settings)
    assert starving is (waited > settings.starvation_limit_s)
    if not starving:
        assert weight == base


@given(base=weights, settings=aging_policies.filter(lambda s: s.aging_rate_per_s > 1e-6))
def test_a_starving_gang_reaches_the_cap_in_bounded_time(base: float, settings: PolicySettings) -> None:
    cap = settings.aging_max_weight
    reached = settings.starvation_limit_s + (cap - base) / settings.aging_rate_per_s + 1
    assert aged_weight(base, max(reached, settings.starvation_limit_s + 1), settings)[0] == max(base, cap)


# -- ranking gangs of a snapshot -----------------------------------------------------------------------


def stamp(seconds: float) -> str:
    """The RFC 3339 creation timestamp `seconds` after T0."""
    return datetime.fromtimestamp(T0 + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tfjob(
    name: str,
    *,
    workers: int,
    cpu: str = "1",
    memory: str = "2Gi",
    created: float = 0,
    priority_class: str = "",
) -> Obj:
    """A TFJob whose replica templates carry requests (so it has a KOD2 weight), created `created` s after T0."""
    obj = make_tfjob(name, workers=workers)
    obj["metadata"]["creationTimestamp"] = stamp(created)
    template: dict[str, Any] = {
        "spec": {"containers": [{"name": "tensorflow", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    }
    for replica in obj["spec"]["tfReplicaSpecs"].values():
        replica["template"] = template
    if priority_class:
        obj["spec"]["runPolicy"] = {"schedulingPolicy": {"priorityClass": priority_class}}
    return obj


def gang(
    name: str,
    *,
    workers: int,
    cpu: str = "1",
    memory: str = "2Gi",
    created: float = 0,
    priority: int = 0,
    nodes: dict[str, str] | None = None,
) -> list[Obj]:
    """A TFJob's pods (1 PS + workers) and its PodGroup of them all, every pod with `priority`."""
    pods = tfjob_pods(name, workers=workers, cpu=cpu, memory=memory, nodes=nodes)
    for pod in pods:
        pod["spec"]["priority"] = priority
        pod["metadata"]["creationTimestamp"] = stamp(created)
    group = make_podgroup(name, min_member=len(pods))
    group["metadata"]["creationTimestamp"] = stamp(created)
    return [*pods, group]


def kod2_nodes() -> list[Obj]:
    return [make_node(f"node-{i}", cpu="10", memory="32Gi") for i in range(3)]


class Shape(TypedDict):
    workers: int
    cpu: str
    memory: str


SMALL = Shape(workers=2, cpu="1", memory="2Gi")
"""KOD2's small job: 1 PS + 2 workers of 1 CPU, 2 GiB (weight ≈ 0.760)."""
BIG = Shape(workers=8, cpu="2", memory="4Gi")
"""KOD2's big job: 1 PS + 8 workers of 2 CPU, 4 GiB (weight ≈ 0.290)."""


def test_a_gang_is_ranked_by_its_tfjob_on_the_kod2_cluster() -> None:
    snap = snapshot(*kod2_nodes(), tfjob("small", **SMALL), *gang("small", **SMALL))
    small = gang_rank(snap, "default/small", T0 + 60, SETTINGS)
    assert (small.subject, small.job, small.priority, small.arrival) == ("default/small", "default/small", 0, T0)
    assert small.base_weight == job_weight(view(workers=2, cpu=1, memory_gi=2), KOD2, SETTINGS)
    assert small.base_weight == pytest.approx(0.760, abs=1e-3)
    assert (small.weight, small.starving, small.waited_s) == (small.base_weight, False, 60.0)


def test_gang_rank_uses_priority_class_values_from_the_snapshot() -> None:
    snap = snapshot(
        *kod2_nodes(),
        make_priority_class("batch", 10),
        make_priority_class("urgent", 1000),
        tfjob("small", **SMALL, priority_class="batch"),
        *gang("small", **SMALL, priority=999_999),
        tfjob("big", **BIG, priority_class="urgent"),
        *gang("big", **BIG),
    )
    small = gang_rank(snap, "default/small", T0, SETTINGS)
    big = gang_rank(snap, "default/big", T0, SETTINGS)
    assert (small.priority, big.priority) == (10, 1000), "the class value wins over the pods' own priority"
    assert small.weight > big.weight
    assert big.outranks(small), "a low-weight high-priority job outranks a high-weight low-priority one"


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [tfjob("small", **SMALL, priority_class="unknown"), *gang("small", **SMALL, priority=7)],
            7,
            id="a job whose PriorityClass is unknown falls back to its pods' priority",
        ),
        pytest.param(
            [tfjob("small", **SMALL), *gang("small", **SMALL, priority=7)],
            7,
            id="a job without a PriorityClass falls back to its pods' priority",
        ),
        pytest.param([*gang("small", **SMALL, priority=7)], 7, id="a gang without a TFJob takes its pods' priority"),
        pytest.param(
            [
                make_pod("a", group="plain", priority=3),
                make_pod("b", group="plain", priority=9),
                make_podgroup("plain", min_member=2),
            ],
            9,
            id="the highest member priority is taken",
        ),
        pytest.param([*gang("small", **SMALL)], 0, id="no priority anywhere is 0"),
    ],
)
def test_gang_rank_falls_back_to_pod_priority(objects: list[Obj], expected: int) -> None:
    snap = snapshot(*kod2_nodes(), *objects)
    group = next(key for key in snap.groups)
    assert gang_rank(snap, group, T0, SETTINGS).priority == expected


def test_a_group_without_a_tfjob_gets_the_default_weight() -> None:
    snap = snapshot(*kod2_nodes(), make_pod("a", group="plain"), make_podgroup("plain", min_member=1))
    plain = gang_rank(snap, "default/plain", T0, SETTINGS)
    assert (plain.weight, plain.base_weight, plain.job) == (SETTINGS.default_weight, SETTINGS.default_weight, "")


def test_a_pod_naming_a_tfjob_the_model_has_not_seen_gets_the_default_weight() -> None:
    snap = snapshot(*kod2_nodes(), *gang("small", **SMALL))
    assert gang_rank(snap, "default/small", T0, SETTINGS).base_weight == SETTINGS.default_weight


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [tfjob("j", **SMALL, created=100), *gang("j", **SMALL, created=200)], 100, id="the TFJob's creation first"
        ),
        pytest.param([*gang("j", **SMALL, created=200)], 200, id="else the PodGroup's creation"),
    ],
)
def test_arrival_is_the_job_creation_else_the_group_creation(objects: list[Obj], expected: float) -> None:
    snap = snapshot(*kod2_nodes(), *objects)
    assert gang_rank(snap, "default/j", T0 + 300, SETTINGS).arrival == T0 + expected


def test_arrival_without_a_tfjob_or_podgroup_is_the_earliest_member() -> None:
    pods = [make_pod(name, group="orphan") for name in ("a", "b")]
    pods[0]["metadata"]["creationTimestamp"] = stamp(50)
    pods[1]["metadata"]["creationTimestamp"] = stamp(20)
    snap = snapshot(*kod2_nodes(), *pods)
    assert gang_rank(snap, "default/orphan", T0 + 300, SETTINGS).arrival == T0 + 20


def test_at_equal_weight_the_earlier_job_outranks_the_later_one() -> None:
    snap = snapshot(
        *kod2_nodes(),
        tfjob("late", **SMALL, created=10),
        *gang("late", **SMALL, created=10),
        tfjob("early", **SMALL, created=5),
        *gang("early", **SMALL, created=5),
    )
    ranks = rank_gangs(snap, T0 + 20, SETTINGS)
    assert [r.subject for r in ranks] == ["default/early", "default/late"]
    assert ranks[0].weight == ranks[1].weight


def test_a_waiting_gang_ages_beyond_the_starvation_limit() -> None:
    snap = snapshot(*kod2_nodes(), tfjob("big", **BIG), *gang("big", **BIG))
    fresh = gang_rank(snap, "default/big", T0 + LIMIT, SETTINGS)
    starved = gang_rank(snap, "default/big", T0 + LIMIT + 100, SETTINGS)
    assert (fresh.starving, fresh.weight) == (False, fresh.base_weight)
    assert starved.starving
    assert starved.waited_s == LIMIT + 100
    assert starved.weight == pytest.approx(starved.base_weight + 100 * SETTINGS.aging_rate_per_s)


def test_a_starved_big_job_climbs_past_fresh_smaller_jobs_but_not_a_higher_make_priority_class() -> None:
    def ranks_at(offset: float, small_created: float) -> list[JobRank]:
        snap = snapshot(
            *kod2_nodes(),
            make_priority_class("urgent", 1000),
            tfjob("big", **BIG),
            *gang("big", **BIG),
            tfjob("small", **SMALL, created=small_created),
            *gang("small", **SMALL, created=small_created),
            tfjob("vip", **BIG, created=1000, priority_class="urgent"),
            *gang("vip", **BIG, created=1000),
        )
        return rank_gangs(snap, T0 + offset, SETTINGS)

    fresh = {rank.subject: rank for rank in ranks_at(0, small_created=0)}
    assert fresh["default/small"].size_class < fresh["default/big"].size_class, "the small job is smaller"
    # At T0 + 1000 the big job has starved 400 s: one class up, and 0.290 + 0.4 = 0.690 in weight, still
    # behind the small job, which is two classes smaller.
    early = ranks_at(1000, small_created=1000)
    assert [r.subject for r in early] == ["default/vip", "default/small", "default/big"]
    assert early[2].starving
    assert early[2].weight == pytest.approx(early[2].base_weight + 0.4)
    assert early[2].size_class == fresh["default/big"].size_class - 1
    # At T0 + 2400 it has starved 1800 s: four classes up (one as it starts to starve, one per further
    # limit), past a small job submitted a minute earlier; never past the higher PriorityClass.
    later = ranks_at(2400, small_created=2340)
    assert [r.subject for r in later] == ["default/vip", "default/big", "default/small"]
    assert later[1].size_class == fresh["default/big"].size_class - 4
    assert later[1].weight == SETTINGS.aging_max_weight
    assert not later[2].starving


ALL_BOUND = {f"big-{role}": "node-0" for role in ("ps-0", *(f"worker-{i}" for i in range(8)))}


@pytest.mark.parametrize(
    "nodes",
    [
        pytest.param(ALL_BOUND, id="a running gang does not age"),
        pytest.param(
            {key: node for key, node in ALL_BOUND.items() if key != "big-worker-7"},
            id="a running gang short of a member it still needs does age",
        ),
    ],
)
def test_only_an_unsatisfied_gang_with_pending_members_ages(nodes: dict[str, str]) -> None:
    snap = snapshot(*kod2_nodes(), tfjob("big", **BIG), *gang("big", **BIG, nodes=nodes))
    big = gang_rank(snap, "default/big", T0 + 10 * LIMIT, SETTINGS)
    satisfied = len(nodes) == len(ALL_BOUND)
    assert big.starving is not satisfied
    assert (big.weight == big.base_weight) is satisfied


def test_a_running_gang_with_a_recreated_worker_above_its_minimum_does_not_age() -> None:
    pods = gang("big", **BIG, nodes={k: v for k, v in ALL_BOUND.items() if k != "big-worker-7"})
    group = pods[-1]
    group["spec"]["minMember"] = 8
    snap = snapshot(*kod2_nodes(), tfjob("big", **BIG), *pods)
    big = gang_rank(snap, "default/big", T0 + 10 * LIMIT, SETTINGS)
    assert (big.starving, big.waited_s, big.weight) == (False, 0.0, big.base_weight)


def test_a_gang_whose_plan_is_reserved_does_not_age_while_its_pods_bind() -> None:
    loop = Loop(*kod2_nodes(), tfjob("small", **SMALL), *gang("small", **SMALL), now=T0 + 10 * LIMIT)
    assert gang_rank(loop.snapshot, "default/small", loop.now, SETTINGS).starving
    assert loop.filter("small-worker-0").outcome == "planned"
    small = gang_rank(loop.snapshot, "default/small", loop.now, SETTINGS)
    assert (small.starving, small.weight) == (False, small.base_weight)


def test_every_podgroup_of_a_gang_group_shares_one_rank() -> None:
    linked = '["default/ps", "default/workers"]'
    ps = make_podgroup("ps", min_member=1)
    workers = make_podgroup("workers", min_member=2)
    for group in (ps, workers):
        group["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/groups": linked}
    pods = tfjob_pods("j", workers=2, memory="2Gi", gang=False)
    for pod in pods:
        role = pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "ps" if role == "ps" else "workers"
    snap = snapshot(*kod2_nodes(), tfjob("j", workers=2), *pods, ps, workers)
    by_ps = gang_rank(snap, "default/ps", T0, SETTINGS)
    assert by_ps == gang_rank(snap, "default/workers", T0, SETTINGS)
    assert (by_ps.subject, by_ps.job) == ("default/ps,default/workers", "default/j")
    assert [r.subject for r in rank_gangs(snap, T0, SETTINGS)] == ["default/ps,default/workers"]


def test_rank_gangs_lists_every_gang_with_members_highest_first() -> None:
    snap = snapshot(
        *kod2_nodes(),
        tfjob("big", **BIG),
        *gang("big", **BIG),
        tfjob("small", **SMALL),
        *gang("small", **SMALL),
        make_pod("loose"),
        make_podgroup("empty", min_member=3),
    )
    ranks = rank_gangs(snap, T0 + 60, SETTINGS)
    assert [r.subject for r in ranks] == ["default/small", "default/big"]
    capacity = cluster_capacity(snap)
    assert ranks == [gang_rank(snap, r.subject, T0 + 60, SETTINGS, capacity) for r in ranks]
    assert rank_gangs(ClusterSnapshot(), T0, SETTINGS) == []


# -- size classes ----------------------------------------------------------------------------------------


def gpu_nodes() -> list[Obj]:
    return [make_node(f"node-{i}", cpu="32", memory="192Gi", gpu=4) for i in range(8)]


def gpu_gang(name: str, *, workers: int) -> list[Obj]:
    """A rigid TFJob of one CPU PS (2 CPU, 8 GiB) and `workers` one-GPU workers (4 CPU, 16 GiB), all pending."""
    job = make_tfjob(name, workers=workers)
    job["metadata"]["creationTimestamp"] = stamp(0)
    shapes = {"PS": {"cpu": "2", "memory": "8Gi"}, "Worker": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}
    for role, replica in job["spec"]["tfReplicaSpecs"].items():
        replica["template"] = {
            "spec": {"containers": [{"name": "tensorflow", "resources": {"requests": shapes[role]}}]}
        }
    pods = [make_pod(f"{name}-ps-0", group=name, job=name, role="ps", cpu="2", memory="8Gi")]
    pods += [
        make_pod(f"{name}-worker-{i}", group=name, job=name, role="worker", index=i, cpu="4", memory="16Gi", gpu=1)
        for i in range(workers)
    ]
    return [job, *pods, make_podgroup(name, min_member=workers + 1)]


def test_a_smaller_rigid_gang_ranks_first_though_the_bigger_one_weighs_more() -> None:
    """The KOD2 weight of a rigid job grows with its worker count (one PS shared by more workers); ranked by
    size first, the 1-GPU gang still goes before the 8-GPU one. With size classes off the weight alone
    decides, as KOD2 does."""
    snap = snapshot(*gpu_nodes(), *gpu_gang("one", workers=1), *gpu_gang("eight", workers=8))
    ranks = {rank.subject: rank for rank in rank_gangs(snap, T0 + 60, SETTINGS)}
    one, eight = ranks["default/one"], ranks["default/eight"]
    assert eight.base_weight > one.base_weight
    assert one.size_class < eight.size_class
    assert one.outranks(eight)
    by_weight = PolicySettings(size_class_ratio=1.0)
    assert [rank.subject for rank in rank_gangs(snap, T0 + 60, by_weight)] == ["default/eight", "default/one"]


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        pytest.param(1 / 32, -5, id="1 GPU of 32"),
        pytest.param(2 / 32, -4, id="twice the size: one class up"),
        pytest.param(3 / 32, -4, id="less than twice: the same class"),
        pytest.param(8 / 32, -2, id="8 GPUs of 32"),
        pytest.param(1.0, 0, id="the whole cluster"),
        pytest.param(0.0, math.floor(math.log2(1e-9)), id="asks for nothing: the lowest class"),
    ],
)
def test_size_class_is_the_log2_of_the_dominant_share(share: float, expected: int) -> None:
    assert size_class(share, SETTINGS) == expected


def test_without_size_classes_every_gang_is_in_class_zero() -> None:
    assert size_class(0.9, PolicySettings(size_class_ratio=1.0)) == 0


@pytest.mark.parametrize(
    ("waited", "expected"), [(0.0, 0), (LIMIT, 0), (LIMIT + 1, 1), (2 * LIMIT - 1, 1), (2 * LIMIT, 2), (5 * LIMIT, 5)]
)
def test_a_starving_gang_climbs_a_class_per_starvation_limit(waited: float, expected: int) -> None:
    assert aged_classes(waited, SETTINGS) == expected


def test_dominant_share_is_the_largest_share_of_cpu_memory_or_gpus() -> None:
    capacity = Resources({CPU: 256_000, MEMORY: 1536 * GI, GPU: 32})
    assert dominant_share(Resources({CPU: 6_000, MEMORY: 24 * GI, GPU: 1}), capacity) == pytest.approx(1 / 32)
    assert dominant_share(Resources({CPU: 128_000}), capacity) == pytest.approx(0.5)
    assert dominant_share(Resources({CPU: 1}), Resources()) == 0


@given(st.floats(0.0, 1.0), st.floats(0.0, 20_000.0), st.sampled_from([0.0, 60.0, 600.0]))
def test_aging_is_the_aged_weight_and_the_classes_climbed_in_one_step(base: float, waited: float, limit: float) -> None:
    settings = PolicySettings(starvation_limit_s=limit)
    weight, starving = aged_weight(base, waited, settings)
    assert aging(base, waited, settings) == (weight, starving, aged_classes(waited, settings))
