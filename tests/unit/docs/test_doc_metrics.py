"""Every metric the docs name is one `/metrics` exposes under that name (a counter with its `_total`), and the
operations page names every one: the names are read from the exposition of a registry holding what a
process serves — the verbs' metrics and the collectors of the preemption loop, the scaler and the
start-time forecast."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, generate_latest

from extender.api.loop_metrics import export_forecast_metrics, export_preemption_metrics
from extender.api.metrics import Metrics
from extender.api.scaler import export_scaler_metrics
from extender.loops.actuator import RecordingActuator
from extender.loops.forecast_loop import ForecastLoop
from extender.loops.preemption import PreemptionLoop
from extender.loops.run_clock import RunClock
from extender.loops.scaler import ScalerLoop
from extender.policy.core.settings import PolicySettings
from extender.state.store import ClusterState
from tests.helm import CHART, REPO

NOW = 1_800_000_000.0
DOCS = [REPO / "README.md", CHART / "README.md", *sorted((REPO / "docs").glob("*.md"))]
OPERATIONS = REPO / "docs" / "operations.md"
NAME = re.compile(r"\btfjob_extender_[a-z0-9_]+")


def exposed() -> set[str]:
    """Each family's name as the exposition's `# TYPE` line gives it (counters with `_total`)."""
    registry = Metrics(lambda: 0).registry
    state = ClusterState(PolicySettings())
    export_preemption_metrics(registry, PreemptionLoop(state, RecordingActuator(), PolicySettings(), lambda: NOW))
    export_scaler_metrics(registry, ScalerLoop(state, RecordingActuator(), PolicySettings(), lambda: NOW))
    export_forecast_metrics(registry, ForecastLoop(state, PolicySettings(), lambda: RunClock(100), lambda: NOW))
    text = generate_latest(registry).decode()
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def test_the_docs_name_metrics_as_they_are_exposed_and_operations_names_them_all() -> None:
    names = exposed()
    assert "tfjob_extender_decisions_total" in names and "tfjob_extender_preemption_evictions_total" in names
    for doc in DOCS:
        unknown = set(NAME.findall(doc.read_text())) - names
        assert not unknown, f"{doc.relative_to(REPO)} names metrics /metrics does not expose: {sorted(unknown)}"
    assert names <= set(NAME.findall(OPERATIONS.read_text()))


def test_a_counter_without_its_suffix_is_not_a_name_the_exposition_has() -> None:
    registry = CollectorRegistry()
    export_preemption_metrics(
        registry, PreemptionLoop(ClusterState(PolicySettings()), RecordingActuator(), PolicySettings(), lambda: NOW)
    )
    text = generate_latest(registry).decode()
    assert "# TYPE tfjob_extender_preemption_pdb_refusals_total counter" in text
    assert not re.search(r"^tfjob_extender_preemption_pdb_refusals[ {]", text, re.M)
