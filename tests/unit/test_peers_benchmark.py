"""The peer benchmark's parts that need no control plane: reading Prometheus sums, what a contended run's
summary reports, the objects written for Kubernetes' own gang (its PodGroups, the pods and TFJob templates
joining them, the gates its kube-scheduler gets), and the JSON records of the runs."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.peer_contended import ContendedRun
from benchmarks.peer_drains import DrainRow, PeerBench, metric_sums
from benchmarks.peer_forecasts import ForecastRecorder, forecast_scores
from benchmarks.peer_lineup import SCHEDULERS, Lineup
from benchmarks.peer_outcomes import JobOutcome, RunSummary, most_within
from benchmarks.peer_records import RECORD_KEYS, contended_record, drain_record, write_records
from benchmarks.peer_workloads import Contended, cpu_mix, native_podgroup, native_podgroups_path, tfjob_object
from benchmarks.scheduler_throughput import Phase, Result
from extender.devcluster import LocalControlPlane
from extender.policy.core.resources import CPU, GPU
from extender.policy.forecast.model import StartBand
from extender.sim.workload import JobSpec, NodeSpec, Workload
from extender.state.gang_annotations import (
    CHECKPOINT_INTERVAL_ANNOTATION,
    MAX_WORKERS_ANNOTATION,
    MIN_WORKERS_ANNOTATION,
    SUSPENDABLE_ANNOTATION,
)
from tests.e2e.bulk import Api

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


# -- Kubernetes' own gang: the objects the benchmark writes for `native` ----------------------------------

NATIVE_API = "scheduling.k8s.io/v1beta1"


class RecordingApi(Api):
    """An `Api` that answers every call itself and remembers them in order."""

    def __init__(self) -> None:
        super().__init__(0, "token")
        self.calls: list[tuple[str, str, Any]] = []
        self.lock = threading.Lock()

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        ok: tuple[int, ...] = (200, 201),
        content_type: str = "application/json",
    ) -> Any:
        with self.lock:
            self.calls.append((method, path, None if body is None else orjson.loads(body)))
        return {"metadata": {"uid": "uid-1", "resourceVersion": "1"}, "items": []}

    def posted(self, fragment: str) -> list[Any]:
        return [body for method, path, body in self.calls if method == "POST" and fragment in path]


class OperatorPlane(LocalControlPlane):
    """A control plane never started, serving the Workload API, that records the TFJobs given to
    training-operator instead of creating them."""

    def __init__(self, tmp_path: Path, api: RecordingApi) -> None:
        super().__init__(tmp_path / "cache", run_dir=tmp_path / "run", workload_api=True)
        self.workload_api_version = NATIVE_API
        self.recording = api

    def create_tfjob(self, namespace: str, body: dict[str, Any]) -> None:
        self.recording.calls.append(("POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs", body))


class GatedPlane(LocalControlPlane):
    """A control plane never started, of 1.37 with the feature gates its Workload API runs with."""

    @property
    def feature_gates(self) -> tuple[str, ...]:
        return ("GenericWorkload",)

    def kubernetes_version(self) -> str:
        return "v1.37.1"


def test_a_native_podgroup_gangs_every_pod_of_the_job() -> None:
    assert native_podgroup(NATIVE_API, "job-03", 9) == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "job-03"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 9}}},
    }
    assert native_podgroups_path(NATIVE_API, "ns") == "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups"


def test_a_tfjob_for_native_gangs_names_the_podgroup_in_every_replica_template() -> None:
    job = spec("vgg", 3)
    native = tfjob_object(job, "native-gang-scheduler", native_group="vgg")
    templates = [replica["template"]["spec"] for replica in native["spec"]["tfReplicaSpecs"].values()]
    assert len(templates) == 2
    assert all(template["schedulingGroup"] == {"podGroupName": "vgg"} for template in templates)
    assert all(template["schedulerName"] == "native-gang-scheduler" for template in templates)
    plain = tfjob_object(job, "tfjob-scheduler")
    assert not any("schedulingGroup" in r["template"]["spec"] for r in plain["spec"]["tfReplicaSpecs"].values())


def test_native_is_started_with_the_planes_gates_and_the_stock_profile_the_others_without_gates(
    tmp_path: Path,
) -> None:
    plain = LocalControlPlane(tmp_path / "cache", run_dir=tmp_path / "run")
    with pytest.raises(RuntimeError, match="Workload API"):
        Lineup(plain, None).feature_gates(SCHEDULERS["native"])
    lineup = Lineup(GatedPlane(tmp_path / "cache", run_dir=tmp_path / "run", workload_api=True), None)
    assert lineup.feature_gates(SCHEDULERS["native"]) == ("GenericWorkload",)
    assert [lineup.feature_gates(SCHEDULERS[key]) for key in ("ours", "coscheduling", "default")] == [(), (), ()]
    settings = lineup.settings(SCHEDULERS["native"])
    assert not {"extenders", "podInitialBackoffSeconds", "podMaxBackoffSeconds"} & set(settings), "stock defaults"
    assert lineup.settings(SCHEDULERS["ours"])["podMaxBackoffSeconds"] == 2, "the repo's configuration"
    (profile,) = settings["profiles"]
    assert profile == {"schedulerName": "native-gang-scheduler", "percentageOfNodesToScore": 100}


def drain_args(**overrides: Any) -> argparse.Namespace:
    return argparse.Namespace(pods=16, threads=2, settle_s=0, stall_s=1, phase_timeout_s=1, **overrides)


def test_a_native_drain_makes_each_gangs_podgroup_before_its_members_which_join_it(tmp_path: Path) -> None:
    api = RecordingApi()
    bench = PeerBench(OperatorPlane(tmp_path, api), drain_args())
    bench.api = api
    bench.scheduler = SCHEDULERS["native"]
    pods = bench.workload(Phase("native-gang8", "gang8", "native", 8), "ns")
    groups = api.posted("/podgroups")
    assert [group["metadata"]["name"] for group in groups] == ["job-0000", "job-0001"]
    assert all(group["apiVersion"] == NATIVE_API for group in groups)
    assert {group["spec"]["schedulingPolicy"]["gang"]["minCount"] for group in groups} == {8}
    assert not api.posted("scheduling.x-k8s.io"), "no scheduler-plugins PodGroup for native gangs"
    members = [orjson.loads(body) for _, _, body in pods]
    assert len(members) == 16
    assert all(m["spec"]["schedulingGroup"]["podGroupName"] == m["metadata"]["name"].rsplit("-", 2)[0] for m in members)
    assert {m["spec"]["schedulerName"] for m in members} == {"native-gang-scheduler"}


def test_plain_drain_pods_stay_plain_and_other_schedulers_keep_scheduler_plugins_podgroups(tmp_path: Path) -> None:
    api = RecordingApi()
    bench = PeerBench(OperatorPlane(tmp_path, api), drain_args())
    bench.api = api
    bench.scheduler = SCHEDULERS["native"]
    plain = [orjson.loads(body) for _, _, body in bench.workload(Phase("native-plain", "plain", "native", 0), "ns")]
    assert plain and not any("schedulingGroup" in pod["spec"] for pod in plain)
    bench.scheduler = SCHEDULERS["ours"]
    gangs = [orjson.loads(body) for _, _, body in bench.workload(Phase("ours-gang8", "gang8", "ours", 8), "ns")]
    assert not any("schedulingGroup" in pod["spec"] for pod in gangs)
    assert [g["apiVersion"] for g in api.posted("/podgroups")] == ["scheduling.x-k8s.io/v1alpha1"] * 2


def contended_case(through_operator: bool, jobs: tuple[JobSpec, ...] = (spec("vgg", 2),)) -> Contended:
    workload = Workload("w", (NodeSpec("w-node-0", "16", "64Gi"),), jobs)
    key = "kod2" if through_operator else "cpu-mix"
    return Contended(key, workload, 1.0, through_operator, declared=through_operator)


def test_a_kod2_tfjob_declares_what_the_simulators_job_does_on_the_runs_clock(tmp_path: Path) -> None:
    elastic = dataclasses.replace(spec("vgg", 3), min_workers=1, max_workers=4, elastic=True, checkpoint_s=600.0)
    never = dataclasses.replace(spec("lenet", 2), checkpoint_s=None)
    api = RecordingApi()
    case = dataclasses.replace(contended_case(True, (elastic, never)), time_scale=0.1)
    run = ContendedRun(OperatorPlane(tmp_path, api), api, case, SCHEDULERS["ours"], 1, drain_args())
    assert [job["metadata"]["annotations"] for job in map(run_tfjob(run), case.workload.jobs)] == [
        {
            SUSPENDABLE_ANNOTATION: "true",
            CHECKPOINT_INTERVAL_ANNOTATION: "60",
            MIN_WORKERS_ANNOTATION: "1",
            MAX_WORKERS_ANNOTATION: "4",
        },
        {SUSPENDABLE_ANNOTATION: "true"},
    ]
    job = run_tfjob(run)(elastic)
    assert job["spec"]["enableDynamicWorker"] is True
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2
    plain = tfjob_object(elastic, "tfjob-scheduler")
    assert "annotations" not in plain["metadata"] and "runPolicy" not in plain["spec"]


def run_tfjob(run: ContendedRun) -> Any:
    return lambda job: tfjob_object(job, run.scheduler.pod_scheduler, declared_scale=run.case.time_scale)


def test_a_contended_native_job_gets_its_podgroup_first_and_its_pods_join_it(tmp_path: Path) -> None:
    api = RecordingApi()
    plane = OperatorPlane(tmp_path, api)
    run = ContendedRun(plane, api, contended_case(False), SCHEDULERS["native"], 1, drain_args())
    run.submit(run.case.workload.jobs[0])
    paths = [path for method, path, _ in api.calls if method == "POST"]
    assert paths[0] == f"/apis/{NATIVE_API}/namespaces/cpu-mix-native-s1/podgroups"
    assert paths[1].endswith("/tfjobs") and all(path.endswith("/pods") for path in paths[2:])
    (group,) = api.posted("/podgroups")
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3
    pods = api.posted("/pods")
    assert sorted(pod["metadata"]["name"] for pod in pods) == ["vgg-ps-0", "vgg-worker-0", "vgg-worker-1"]
    assert {pod["spec"]["schedulingGroup"]["podGroupName"] for pod in pods} == {"vgg"}


def test_a_kod2_native_job_names_its_podgroup_in_the_templates_training_operator_copies(tmp_path: Path) -> None:
    api = RecordingApi()
    plane = OperatorPlane(tmp_path, api)
    run = ContendedRun(plane, api, contended_case(True), SCHEDULERS["native"], 2, drain_args())
    run.submit(run.case.workload.jobs[0])
    (first, second) = [(path, body) for _, path, body in api.calls]
    assert first[0].endswith("/podgroups") and first[1]["spec"]["schedulingPolicy"]["gang"]["minCount"] == 3
    assert second[0] == "/apis/kubeflow.org/v1/namespaces/kod2-native-s2/tfjobs"
    templates = [r["template"]["spec"] for r in second[1]["spec"]["tfReplicaSpecs"].values()]
    assert [t["schedulingGroup"] for t in templates] == [{"podGroupName": "vgg"}] * 2


def test_a_native_run_fails_when_a_pod_did_not_join_its_jobs_podgroup(tmp_path: Path) -> None:
    api = RecordingApi()
    run = ContendedRun(OperatorPlane(tmp_path, api), api, contended_case(True), SCHEDULERS["native"], 1, drain_args())
    run.check_joined({"vgg-ps-0": "vgg", "vgg-worker-0": "vgg", "vgg-worker-1": "vgg"})
    with pytest.raises(RuntimeError, match="1 pods did not join"):
        run.check_joined({"vgg-ps-0": "vgg", "vgg-worker-0": None})


class WebhookApi(RecordingApi):
    """A `RecordingApi` whose TFJobs come back as the extender's webhook changes them: every replica template
    naming the gang after the job."""

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        ok: tuple[int, ...] = (200, 201),
        content_type: str = "application/json",
    ) -> Any:
        answer = super().call(method, path, body, ok, content_type)
        if method == "POST" and path.endswith("/tfjobs") and body is not None:
            job = orjson.loads(body)
            for replica in job["spec"]["tfReplicaSpecs"].values():
                replica["template"]["spec"]["schedulingGroup"] = {"podGroupName": job["metadata"]["name"]}
            return {**job, "metadata": {**job["metadata"], "uid": "uid-1"}}
        return answer


def test_ours_native_runs_the_repo_profile_with_the_gates_and_the_extender_makes_the_gangs(tmp_path: Path) -> None:
    lineup = Lineup(GatedPlane(tmp_path / "cache", run_dir=tmp_path / "run", workload_api=True), None)
    ours_native = SCHEDULERS["ours-native"]
    assert lineup.feature_gates(ours_native) == ("GenericWorkload",)
    assert lineup.settings(ours_native)["extenders"], "kube-scheduler still calls the extender"
    api = WebhookApi()
    run = ContendedRun(OperatorPlane(tmp_path, api), api, contended_case(False), ours_native, 1, drain_args())
    run.submit(run.case.workload.jobs[0])
    assert not api.posted("/podgroups"), "the extender's loops make the gang, not the benchmark"
    (job,) = api.posted("/tfjobs")
    assert {r["template"]["spec"]["schedulerName"] for r in job["spec"]["tfReplicaSpecs"].values()} == {
        "tfjob-scheduler"
    }
    assert not any("schedulingGroup" in r["template"]["spec"] for r in job["spec"]["tfReplicaSpecs"].values())
    assert {pod["spec"]["schedulingGroup"]["podGroupName"] for pod in api.posted("/pods")} == {"vgg"}


def test_an_ours_native_drain_names_the_scheduler_in_its_tfjobs_and_makes_no_podgroup(tmp_path: Path) -> None:
    api = RecordingApi()
    bench = PeerBench(OperatorPlane(tmp_path, api), drain_args())
    bench.api = api
    bench.scheduler = SCHEDULERS["ours-native"]
    members = [orjson.loads(b) for _, _, b in bench.workload(Phase("n-gang8", "gang8", "ours-native", 8), "ns")]
    assert not api.posted("/podgroups")
    jobs = api.posted("/tfjobs")
    assert len(jobs) == 2
    assert {r["template"]["spec"]["schedulerName"] for job in jobs for r in job["spec"]["tfReplicaSpecs"].values()} == {
        "tfjob-scheduler"
    }
    assert {m["spec"]["schedulingGroup"]["podGroupName"] for m in members} == {"job-0000", "job-0001"}


# -- the JSON records -------------------------------------------------------------------------------------


def drain_row(phase: str, gangs: int, whole: int, partial: float | None) -> DrainRow:
    result = Result(
        phase=Phase(f"native-{phase}", phase, "native", 8 if gangs else 0),
        mode="drain",
        pods=16,
        bound=16 if whole == gangs else 12,
        seconds=0.5,
        created_per_s=100.0,
        latencies_ms=[100.0, 300.0],
        cpu_ms_per_pod={"sched": 1.0},
        extender_rss_mib=(0.0, 0.0),
        verb_ms={},
        gang_partial_s=partial,
        gangs=gangs,
        gangs_whole=whole,
    )
    return DrainRow(500, "native", phase, 3, result)


def test_a_drain_record_gives_the_rate_and_counts_gangs_bound_whole() -> None:
    record = drain_record(drain_row("gang8", gangs=2, whole=1, partial=4.0))
    assert list(record) == list(RECORD_KEYS)
    assert record == {
        "scheduler": "native",
        "workload": "drain-500-gang8",
        "seed": 3,
        "makespan_s": 0.5,
        "avg_jct_s": None,
        "p95_jct_s": None,
        "avg_wait_s": 0.2,
        "pods_per_s": 24.0,
        "max_partial_s": 4.0,
        "colocated": None,
        "nodes_per_job": None,
        "completed": 1,
        "jobs": 2,
        "lost_work_s": None,
        "restarts": None,
        "max_takings_per_hour": None,
    }
    plain = drain_record(drain_row("plain", gangs=0, whole=0, partial=None))
    assert (plain["completed"], plain["jobs"], plain["max_partial_s"]) == (16, 16, None)


def test_a_contended_record_gives_nulls_for_what_was_not_reached() -> None:
    done = JobOutcome(spec("a", 3), submitted=0.0, started=10.0, finished=40.0, first_bind=8.0)
    done.nodes, done.workers, done.workers_beside_ps = 2, 3, 2
    stuck = JobOutcome(spec("b"), submitted=5.0, first_bind=6.0, bound_at_end=1)
    record = contended_record(RunSummary("kod2", "native", 2, [done, stuck], end=100.0, stalled=True))
    assert list(record) == list(RECORD_KEYS)
    assert record["makespan_s"] is None and record["pods_per_s"] is None
    assert record["colocated"] == 2 / 3 and record["nodes_per_job"] == 2
    assert record["max_partial_s"] == 94
    assert (record["completed"], record["jobs"]) == (1, 2)
    assert (record["scheduler"], record["workload"], record["seed"]) == ("native", "kod2", 2)
    assert (record["lost_work_s"], record["restarts"], record["max_takings_per_hour"]) == (0.0, 0, 0)


def test_a_contended_record_counts_lost_work_restarts_and_the_most_takings_of_one_job_in_an_hour() -> None:
    taken = JobOutcome(spec("a"), submitted=0.0, started=1.0, finished=9000.0, first_bind=1.0)
    taken.restarts, taken.lost_work_s, taken.takings = 2, 30.0, [10.0, 20.0, 3700.0, 3705.0, 3900.0]
    other = JobOutcome(spec("b"), submitted=0.0, started=1.0, finished=20.0, first_bind=1.0)
    other.restarts, other.lost_work_s, other.takings = 1, 4.5, [5.0]
    record = contended_record(RunSummary("kod2", "ours", 1, [taken, other], end=9000.0, stalled=False))
    assert (record["lost_work_s"], record["restarts"], record["max_takings_per_hour"]) == (34.5, 3, 3)
    assert most_within([], 3600.0) == 0 and most_within([0.0, 3600.0], 3600.0) == 1


def test_the_records_are_one_json_array_drains_first(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    done = JobOutcome(spec("a"), submitted=0.0, started=1.0, finished=2.0, first_bind=1.0)
    done.nodes, done.workers = 1, 1
    write_records(path, [drain_row("gang8", 2, 2, 0.1)], [RunSummary("cpu-mix", "ours", 1, [done], 2.0, False)])
    records = json.loads(path.read_text())
    assert [(r["workload"], r["scheduler"]) for r in records] == [("drain-500-gang8", "native"), ("cpu-mix", "ours")]
    assert records[1]["makespan_s"] == 2.0 and records[1]["colocated"] == 0.0
    assert [p.name for p in tmp_path.iterdir()] == ["runs.json"]


def test_a_forecast_counts_from_when_it_was_made_and_once_however_often_it_is_read() -> None:
    recorder = ForecastRecorder("http://127.0.0.1:1", "cpu-mix-ours-s1", 5.0)
    band = {"p10Seconds": 5.0, "p50Seconds": 10.0, "p90Seconds": 20.0, "asOf": 1_000.0, "samples": 200}
    answer: list[dict[str, Any]] = [
        {"gang": "cpu-mix-ours-s1/a", "startForecast": band},
        {"gang": "other/a", "startForecast": band},
        {"gang": "cpu-mix-ours-s1/b", "startForecast": None},
    ]
    recorder.keep(answer, to_monotonic=-900.0)
    recorder.keep(answer, to_monotonic=-900.0)
    recorder.keep([{"gang": "cpu-mix-ours-s1/a", "startForecast": {**band, "asOf": 1_030.0}}], to_monotonic=-900.0)
    assert recorder.seen == [
        ("a", 100.0, StartBand(5.0, 10.0, 20.0, "", 200)),
        ("a", 130.0, StartBand(5.0, 10.0, 20.0, "", 200)),
    ]


def test_the_forecasts_seen_during_a_run_are_scored_against_its_starts() -> None:
    recorder = ForecastRecorder("http://127.0.0.1:1", "cpu-mix-ours-s1", 30.0)
    recorder.seen = [
        ("a", 100.0, StartBand(5.0, 10.0, 20.0)),
        ("a", 130.0, StartBand(100.0, 120.0, 140.0)),
        ("b", 100.0, StartBand(unknown="fewer than 3 jobs seen finish (0): no run times to go by")),
    ]
    a = JobOutcome(spec("a"), submitted=90.0, started=140.0, finished=200.0, first_bind=139.0)
    b = JobOutcome(spec("b"), submitted=90.0, started=150.0, finished=210.0, first_bind=149.0)
    scores = forecast_scores(recorder, RunSummary("cpu-mix", "ours", 1, [a, b], end=210.0, stalled=False))
    assert (scores["forecasts"], scores["unknown"]) == (3, 1)
    assert scores["coverage_p90"] == 0.5 and scores["below_p10"] == 0.5
    assert scores["asked_failed"] == 0
