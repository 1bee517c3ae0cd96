"""Utilisation samples: bound and reserved shares of the schedulable cluster, and the chart drawn from them."""

from __future__ import annotations

from extender.api.page_model import CHART_HEIGHT, CHART_WIDTH, chart, job_colour
from extender.api.utilisation import UtilisationHistory, sample_of
from extender.policy.core.resources import Resources
from extender.policy.core.snapshot import Reservation
from tests.builders import cluster, hold, make_node, make_pod

NOW = 1_800_000_000.0


def test_a_sample_splits_what_bound_pods_request_from_what_plans_hold() -> None:
    state = cluster(
        make_node("node-0", cpu="4", memory="16Gi"),
        make_node("node-1", cpu="4", memory="16Gi"),
        make_pod("bound", cpu="2", memory="4Gi", node="node-0", phase="Running"),
        make_pod("planned", cpu="1", memory="1Gi", group="g"),
    )
    hold(
        state, reserve=[Reservation("default/planned", "default/g", "node-1", Resources.parse({"cpu": "1"}), NOW + 60)]
    )
    sample = sample_of(state.snapshot(), NOW)
    assert (sample.cpu_bound, sample.cpu_reserved) == (0.25, 0.125)
    assert sample.memory_bound == 0.125


def test_samples_are_spaced_by_the_interval_and_bounded() -> None:
    state = cluster(make_node("node-0"))
    history = UtilisationHistory(interval_s=5.0, capacity=3)
    for offset in (0, 1, 5, 10, 15):
        history.sample(state.snapshot(), NOW + offset)
    assert [sample.at - NOW for sample in history.samples()] == [5, 10, 15]


def test_the_chart_spans_the_samples_and_a_job_keeps_its_colour() -> None:
    state = cluster(make_node("node-0", cpu="4"), make_pod("p", cpu="2", node="node-0", phase="Running"))
    history = UtilisationHistory(interval_s=1.0)
    assert chart(history.samples())["lines"] == {}
    history.sample(state.snapshot(), NOW)
    history.sample(state.snapshot(), NOW + 10)
    drawn = chart(history.samples())
    assert drawn["lines"]["cpu"] == f"0.0,{CHART_HEIGHT / 2:.1f} {CHART_WIDTH:.1f},{CHART_HEIGHT / 2:.1f}"
    assert drawn["latest"] == {"cpu": 50, "cpuReserved": 0, "memory": 3}
    assert job_colour("default/mnist") == job_colour("default/mnist") != job_colour("default/bert")
