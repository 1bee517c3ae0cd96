"""TFJobs as the model reads them: per-role requests, elastic bounds, and their round trip through a dump."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.policy.core.resources import CPU, MEMORY, PODS, Resources
from extender.policy.core.views import Role
from extender.state.convert import ConversionError, job_view
from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import cluster

GI = 2**30


def tfjob(workers: int = 4, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    def replicas(count: int, cpu: str, memory: str) -> dict[str, Any]:
        container = {"name": "tensorflow", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        return {"replicas": count, "template": {"spec": {"containers": [container]}}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "mnist", "namespace": "ml", "annotations": annotations or {}},
        "spec": {"tfReplicaSpecs": {"PS": replicas(1, "1", "2Gi"), "Worker": replicas(workers, "2", "4Gi")}},
    }


def test_a_job_without_annotations_is_not_elastic() -> None:
    job = job_view(tfjob())
    assert (job.min_workers, job.max_workers, job.elastic) == (4, 4, False)
    assert job.role_requests[Role.WORKER] == Resources({CPU: 2000, MEMORY: 4 * GI, PODS: 1})
    # 1 PS (1 CPU, 2 GiB) + 4 workers (2 CPU, 4 GiB)
    assert job.minimum_demand() == Resources({CPU: 9000, MEMORY: 18 * GI, PODS: 5})


def test_annotations_make_a_job_elastic_and_its_minimum_demand_follows_min_workers() -> None:
    job = job_view(tfjob(annotations={"tfjob-extender.io/min-workers": "2", "tfjob-extender.io/max-workers": "8"}))
    assert (job.min_workers, job.max_workers, job.elastic) == (2, 8, True)
    assert job.minimum_demand() == Resources({CPU: 5000, MEMORY: 10 * GI, PODS: 3})


def test_a_maximum_below_the_minimum_is_raised_to_it() -> None:
    job = job_view(tfjob(annotations={"tfjob-extender.io/min-workers": "3", "tfjob-extender.io/max-workers": "1"}))
    assert (job.min_workers, job.max_workers) == (3, 3)


@pytest.mark.parametrize("value", ["two", "-1"], ids=["a word", "a negative count"])
def test_a_bad_worker_bound_is_a_conversion_error(value: str) -> None:
    with pytest.raises(ConversionError, match=r"tfjob-extender\.io/min-workers"):
        job_view(tfjob(annotations={"tfjob-extender.io/min-workers": value}))


def test_a_dump_keeps_requests_and_bounds(tmp_path: Path) -> None:
    elastic = tfjob(annotations={"tfjob-extender.io/min-workers": "1", "tfjob-extender.io/max-workers": "6"})
    state = cluster(elastic)
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump_state(state.snapshot())))
    reloaded = ClusterState()
    load_snapshot_file(reloaded, path)
    assert reloaded.snapshot().jobs["ml/mnist"] == state.snapshot().jobs["ml/mnist"]


def native(job: dict[str, Any], *, group: str = "mnist", scheduler: str = "tfjob-scheduler") -> dict[str, Any]:
    """`job` as the admission webhook leaves it: its templates name the scheduler and its native gang."""
    job["metadata"]["annotations"]["tfjob-extender.io/native-gang"] = group
    for spec in job["spec"]["tfReplicaSpecs"].values():
        spec["template"]["spec"] |= {"schedulerName": scheduler, "schedulingGroup": {"podGroupName": group}}
    return job


def test_a_job_says_which_scheduler_and_which_native_gang_its_templates_name(tmp_path: Path) -> None:
    job = job_view(native(tfjob()))
    assert (job.scheduler_names, job.scheduling_group, job.native_gang) == (("tfjob-scheduler",), "mnist", "mnist")
    plain = job_view(tfjob())
    assert (plain.scheduler_names, plain.scheduling_group, plain.native_gang) == ((), "", "")
    split = native(tfjob())
    del split["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["schedulingGroup"]
    assert job_view(split).scheduling_group == "", "a gang only when every template names it"
    state = cluster(native(tfjob()))
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump_state(state.snapshot())))
    reloaded = ClusterState()
    load_snapshot_file(reloaded, path)
    assert reloaded.snapshot().jobs["ml/mnist"] == state.snapshot().jobs["ml/mnist"]


def test_a_bad_scheduling_group_is_a_conversion_error() -> None:
    job = native(tfjob(), group="a/b")
    with pytest.raises(ConversionError, match=r"schedulingGroup\.podGroupName"):
        job_view(job)
