"""A cluster's Nodes and TFJobs, hand-written as the API server gives them, turned into a simulator workload:
where each run time comes from, the elastic bounds, GPUs, checkpoints, and the jobs and nodes left out."""

from __future__ import annotations

from typing import Any

import pytest

from extender.replay.history import (
    DEFAULT_BATCH,
    DEFAULT_MODEL,
    RUN_TIME_WITHOUT_HISTORY_S,
    Assumptions,
    History,
    RunTimeSource,
    history,
)
from extender.sim import cli, report
from extender.sim.engine import Simulation
from extender.sim.workload import NodeSpec, Workload
from tests.builders import make_node

Obj = dict[str, Any]
START = "2026-03-01T10:00:00Z"
STARTUP_S = 20.0
"""The simulator's start-up, paid before a job's first training step."""


def tfjob(
    name: str,
    *,
    created: str = START,
    namespace: str = "team-a",
    ps: int = 1,
    workers: int = 2,
    cpu: str = "2",
    gpu: int = 0,
    annotations: dict[str, str] | None = None,
    status: Obj | None = None,
    dynamic: bool = False,
) -> Obj:
    """A TFJob as the API server lists it: PS (CPU only) and workers (with `gpu` GPUs each)."""

    def replica(count: int, requests: dict[str, str]) -> Obj:
        containers = [{"name": "tensorflow", "image": "tf:2.16", "resources": {"requests": requests}}]
        return {"replicas": count, "template": {"spec": {"containers": containers}}}

    worker = {"cpu": cpu, "memory": "8Gi", **({"nvidia.com/gpu": str(gpu)} if gpu else {})}
    specs = {"Worker": replica(workers, worker)}
    if ps:
        specs["PS"] = replica(ps, {"cpu": "1", "memory": "2Gi"})
    manifest: Obj = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "annotations": annotations or {},
        },
        "spec": {"enableDynamicWorker": dynamic, "tfReplicaSpecs": specs},
    }
    if status is not None:
        manifest["status"] = status
    return manifest


def finished(name: str, run_s: float, **extra: Any) -> Obj:
    """A TFJob that succeeded and whose run time the preemption loop recorded."""
    return tfjob(
        name,
        annotations={"tfjob-extender.io/run-s": f"{run_s:.3f}"},
        status={"conditions": [{"type": "Succeeded", "status": "True"}]},
        **extra,
    )


def nodes(count: int = 2, **extra: Any) -> list[Obj]:
    return [make_node(f"node-{i}", cpu="16", memory="64Gi", **extra) for i in range(count)]


def replayed(*objects: Obj, assumptions: Assumptions | None = None) -> History:
    return history([*nodes(), *objects], assumptions or Assumptions())


def alone_jct(found: History, name: str) -> float:
    """The job's completion time alone on one node big enough for it (gang-FIFO places it at once, whole)."""
    (job,) = [job for job in found.workload.jobs if job.name == name]
    single = Workload("alone", (NodeSpec("big", "64", "256Gi", 8),), (job,), found.workload.nic_gbps)
    result = Simulation(single, cli.POLICIES["gang-fifo"]()).run()
    return float(report.metrics(result)["avg_jct_s"])


def test_a_finished_job_runs_as_long_as_the_preemption_loop_recorded() -> None:
    found = replayed(finished("resnet", 600.0))
    (job,) = found.workload.jobs
    assert found.sources == {"resnet": RunTimeSource.RECORDED}
    assert found.run_s == {"resnet": 600.0}
    assert (job.model, job.batch, job.ps, job.workers) == (DEFAULT_MODEL, DEFAULT_BATCH, 1, 2)
    assert (job.ps_cpu, job.worker_cpu, job.worker_memory) == ("1000m", "2000m", str(8 * 2**30))
    assert [node.name for node in found.workload.nodes] == ["node-0", "node-1"]
    assert alone_jct(found, "resnet") == pytest.approx(STARTUP_S + 600.0, abs=1.0)


def test_a_job_without_a_recorded_time_runs_from_its_start_to_its_completion() -> None:
    times = {"startTime": "2026-03-01T10:01:00Z", "completionTime": "2026-03-01T10:06:30Z"}
    conditions = [{"type": "Succeeded", "status": "True"}]
    found = replayed(tfjob("timed", status={**times, "conditions": conditions}))
    assert found.sources == {"timed": RunTimeSource.STATUS}
    assert found.run_s == {"timed": 330.0}
    assert alone_jct(found, "timed") == pytest.approx(STARTUP_S + 330.0, abs=1.0)


def test_a_recorded_time_wins_over_the_status() -> None:
    times = {"startTime": "2026-03-01T10:01:00Z", "completionTime": "2026-03-01T10:06:30Z"}
    recorded = finished("both", 250.0)
    recorded["status"] |= times
    assert replayed(recorded).run_s == {"both": 250.0}


def test_a_running_and_a_pending_job_run_the_median_of_the_known_run_times() -> None:
    running = tfjob("running", created="2026-03-01T10:05:00Z", status={"startTime": "2026-03-01T10:05:10Z"})
    pending = tfjob("pending", created="2026-03-01T10:06:00Z")
    known = [finished(f"done-{i}", run_s) for i, run_s in enumerate((100.0, 300.0, 900.0))]
    found = replayed(*known, running, pending)
    assert found.assumed_run_s == 300.0
    assert found.assumed_because == "the median of the 3 known run time(s)"
    assert found.count(RunTimeSource.ASSUMED) == 2 and found.count(RunTimeSource.RECORDED) == 3
    assert found.run_s["running"] == found.run_s["pending"] == 300.0
    assert alone_jct(found, "running") == pytest.approx(STARTUP_S + 300.0, abs=1.0)


def test_with_no_known_run_time_the_assumption_is_a_fixed_one_or_the_given_one() -> None:
    assert replayed(tfjob("a")).assumed_run_s == RUN_TIME_WITHOUT_HISTORY_S
    given = replayed(finished("b", 60.0), tfjob("a"), assumptions=Assumptions(run_s=45.0))
    assert given.run_s == {"b": 60.0, "a": 45.0}
    assert given.assumed_because == "given (--assumed-run-s)"


def test_arrivals_count_from_the_earliest_creation_and_jobs_come_in_arrival_order() -> None:
    found = replayed(
        finished("late", 60.0, created="2026-03-01T10:10:00Z"),
        finished("early", 60.0, created="2026-03-01T10:02:30Z"),
        finished("middle", 60.0, created="2026-03-01T10:04:00Z"),
    )
    assert [(job.name, job.arrival_s) for job in found.workload.jobs] == [
        ("early", 0.0),
        ("middle", 90.0),
        ("late", 450.0),
    ]


def test_the_elastic_bounds_come_from_the_annotations_of_a_dynamic_worker_job() -> None:
    bounds = {"tfjob-extender.io/min-workers": "1", "tfjob-extender.io/max-workers": "6"}
    elastic = finished("elastic", 60.0, dynamic=True, workers=3)
    elastic["metadata"]["annotations"] |= bounds
    static = finished("static", 60.0, dynamic=False, workers=3)
    static["metadata"]["annotations"] |= bounds
    floor = finished("floor", 60.0, dynamic=True, workers=3)
    floor["metadata"]["annotations"] |= {"tfjob-extender.io/min-workers": "0", "tfjob-extender.io/max-workers": "3"}
    jobs = {job.name: job for job in replayed(elastic, static, floor).workload.jobs}
    assert (jobs["elastic"].elastic, jobs["elastic"].min_workers, jobs["elastic"].max_workers) == (True, 1, 6)
    assert (jobs["static"].elastic, jobs["static"].min_workers, jobs["static"].max_workers) == (False, 3, 3)
    assert (jobs["floor"].elastic, jobs["floor"].min_workers, jobs["floor"].max_workers) == (True, 1, 3)


def test_a_gpu_job_keeps_its_gpus_and_the_nodes_theirs() -> None:
    found = history([*nodes(2, gpu=4), finished("gpu", 120.0, workers=4, gpu=1)], Assumptions())
    (job,) = found.workload.jobs
    assert (job.worker_gpu, job.workers) == (1, 4)
    assert [node.gpu for node in found.workload.nodes] == [4, 4]
    assert alone_jct(found, "gpu") == pytest.approx(STARTUP_S + 120.0, abs=1.0)


def test_a_declared_checkpoint_interval_is_kept() -> None:
    declared = finished("declared", 60.0)
    declared["metadata"]["annotations"]["tfjob-extender.io/checkpoint-interval-s"] = "600"
    found = replayed(declared, finished("silent", 60.0))
    assert found.declared_checkpoints == {"declared"}
    assert {job.name: job.checkpoint_s for job in found.workload.jobs}["declared"] == 600.0


def test_a_chief_trains_as_one_more_worker() -> None:
    chief = finished("chief", 60.0, workers=2)
    chief["spec"]["tfReplicaSpecs"]["Chief"] = chief["spec"]["tfReplicaSpecs"]["Worker"] | {"replicas": 1}
    chief["spec"]["tfReplicaSpecs"]["Evaluator"] = chief["spec"]["tfReplicaSpecs"]["Worker"] | {"replicas": 1}
    (job,) = replayed(chief).workload.jobs
    assert job.workers == 3


def test_the_model_and_batch_a_job_names_win_over_the_assumed_ones() -> None:
    named = finished("named", 60.0)
    named["metadata"]["annotations"] |= {"tfjob-extender.io/sim-model": "vgg16", "tfjob-extender.io/sim-batch": "32"}
    jobs = {job.name: job for job in replayed(named, finished("plain", 60.0)).workload.jobs}
    assert (jobs["named"].model, jobs["named"].batch) == ("vgg16", 32)
    assert (jobs["plain"].model, jobs["plain"].batch) == (DEFAULT_MODEL, DEFAULT_BATCH)


def test_two_jobs_of_one_name_in_two_namespaces_are_told_apart() -> None:
    found = replayed(finished("mnist", 60.0, namespace="team-a"), finished("mnist", 60.0, namespace="team-b"))
    assert sorted(job.name for job in found.workload.jobs) == ["team-a-mnist", "team-b-mnist"]
    only = replayed(finished("mnist", 60.0, namespace="team-b"), assumptions=Assumptions(namespace="team-a"))
    assert only.workload.jobs == ()


@pytest.mark.parametrize(
    ("manifest", "reason"),
    [
        (finished("no-ps", 60.0, ps=0), "no PS replica: the simulator's throughput model is parameter-server training"),
        (
            tfjob("failed", status={"conditions": [{"type": "Failed", "status": "True"}]}),
            "it failed and how long it ran is recorded nowhere (run-s, status times)",
        ),
        (finished("no-birth", 60.0, created=""), "no metadata.creationTimestamp: when it arrived is unknown"),
        (finished("huge", 60.0, cpu="32"), "its worker pods fit on no node"),
        (finished("wide", 60.0, cpu="10", workers=4), "its minimum asks more than all the nodes have"),
        (
            finished("idle", 60.0, cpu="0"),
            "its workers request neither CPU nor GPUs: the throughput model gives them no speed",
        ),
    ],
)
def test_a_tfjob_that_cannot_be_replayed_is_skipped_with_the_reason(manifest: Obj, reason: str) -> None:
    found = replayed(manifest, finished("fine", 60.0))
    assert [job.name for job in found.workload.jobs] == ["fine"]
    assert [skip.line() for skip in found.skipped] == [f"skipped TFJob team-a/{manifest['metadata']['name']}: {reason}"]


def test_a_malformed_tfjob_and_an_unknown_model_are_skipped_with_the_reason() -> None:
    malformed = finished("malformed", 60.0)
    malformed["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "many"
    unknown = finished("unknown", 60.0)
    unknown["metadata"]["annotations"]["tfjob-extender.io/sim-model"] = "gpt-5"
    found = replayed(malformed, unknown)
    assert found.workload.jobs == ()
    lines = [skip.line() for skip in found.skipped]
    assert lines[0].startswith("skipped TFJob team-a/malformed: spec.tfReplicaSpecs.Worker.replicas")
    assert lines[1].startswith("skipped TFJob team-a/unknown: model 'gpt-5' is none of the simulator's (")


def test_cordoned_control_plane_and_unselected_nodes_are_left_out() -> None:
    control = make_node("control", cpu="8")
    control["spec"]["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    objects = [
        make_node("cordoned", unschedulable=True),
        make_node("down", ready=False),
        control,
        make_node("other-pool", labels={"pool": "b"}),
        make_node("train", labels={"pool": "a"}),
    ]
    found = history(objects, Assumptions(node_selector={"pool": "a"}))
    assert [node.name for node in found.workload.nodes] == ["train"]
    found = history(objects, Assumptions())
    assert [node.name for node in found.workload.nodes] == ["other-pool", "train"]
    assert [skip.line() for skip in found.skipped] == [
        "skipped Node cordoned: cordoned or not Ready",
        "skipped Node down: cordoned or not Ready",
        "skipped Node control: a control-plane node (tainted to keep workloads off)",
    ]
