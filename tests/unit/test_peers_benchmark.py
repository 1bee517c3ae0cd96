"""The peer benchmark's pure parts: reading Prometheus sums, and what a contended run's summary reports."""

from __future__ import annotations

import math

from benchmarks.peer_drains import metric_sums
from benchmarks.peer_outcomes import JobOutcome, RunSummary
from benchmarks.peer_workloads import cpu_mix
from extender.policy.core.resources import CPU, GPU
from extender.sim.workload import JobSpec

METRICS = """# HELP x
scheduler_scheduling_algorithm_duration_seconds_sum{profile="a"} 1.5
scheduler_scheduling_algorithm_duration_seconds_sum{profile="b"} 0.5
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",profile="a",status="Success"} 0.25
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Score",profile="a",status="Success"} 2
tfjob_extender_verb_duration_seconds_count 7
"""


def spec(name: str, workers: int = 1) -> JobSpec:
    return JobSpec(name, 0.0, "vgg16", 32, 1.0, 1, workers, workers, workers, "1", "1Gi", "1", "1Gi", elastic=False)


def test_metric_sums_add_every_series_matching_name_and_labels() -> None:
    wanted = {
        "algorithm": ("scheduler_scheduling_algorithm_duration_seconds_sum", {}),
        "filter": ("scheduler_framework_extension_point_duration_seconds_sum", {"extension_point": "Filter"}),
        "calls": ("tfjob_extender_verb_duration_seconds_count", {}),
        "absent": ("nothing", {}),
    }
    assert metric_sums(METRICS, wanted) == {"algorithm": 2.0, "filter": 0.25, "calls": 7.0, "absent": 0.0}


def test_a_summary_censors_unfinished_jobs_and_counts_what_partial_gangs_held() -> None:
    done = JobOutcome(spec("a", 3), submitted=0.0, started=10.0, finished=40.0, first_bind=8.0)
    done.nodes, done.workers, done.workers_beside_ps = 2, 3, 2
    done.held = {CPU: 4000.0}
    stuck = JobOutcome(spec("b"), submitted=5.0, first_bind=6.0, bound_at_end=1)
    stuck.held = {CPU: 1000.0 * 94, GPU: 0.0}
    never = JobOutcome(spec("c"), submitted=5.0)
    values = RunSummary("w", "s", 1, [done, stuck, never], end=100.0, stalled=True).values()
    assert math.isnan(values["makespan_s"]), "no makespan while a job never finished"
    assert values["avg_jct_s"] == (40 + 95 + 95) / 3
    assert values["avg_wait_s"] == (10 + 95 + 95) / 3
    assert values["longest_partial_s"] == 94
    assert values["cpu_s_held"] == 4 + 94
    assert values["beside_ps"] == 2 / 3
    assert values["nodes_per_job"] == 2
    assert (values["deadlocked"], values["never_started"]) == (1, 1)


def test_the_cpu_mix_is_seeded_and_asks_more_than_the_cluster_has() -> None:
    first, again = cpu_mix(3), cpu_mix(3)
    assert first == again
    asked = sum(int(job.ps_cpu) + int(job.worker_cpu) * job.workers for job in first.jobs)
    assert len(first.jobs) == 24 and asked > sum(int(node.cpu) for node in first.nodes)
