"""The TFJobs of `examples/` are valid as the extender reads them, name its default scheduler, and are what
their README promises: each submittable as it is (no namespace, requests on every container, `OnFailure`),
the elastic one with its bounds, checkpoint interval and suspendability, the GPU one with a GPU per worker,
all running the same training script on TensorFlow's public image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.policy.core.resources import GPU
from extender.policy.core.views import Role
from extender.state.crds import job_view
from extender.state.would_be import would_be

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TFJOB_FILES = sorted(EXAMPLES.glob("tfjob-*.yaml"))
SCHEDULER_NAME = "tfjob-scheduler"
"""The chart's default scheduler name, which training-operator's `--gang-scheduler-name` names too."""
IMAGE = "tensorflow/tensorflow:2.16.1"


def manifest(path: Path) -> dict[str, Any]:
    documents = list(yaml.safe_load_all(path.read_text()))
    assert len(documents) == 1, f"{path.name}: one TFJob per file"
    document: dict[str, Any] = documents[0]
    return document


def containers(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        container
        for replica in job["spec"]["tfReplicaSpecs"].values()
        for container in replica["template"]["spec"]["containers"]
    ]


def test_the_three_examples_are_there() -> None:
    assert [path.name for path in TFJOB_FILES] == ["tfjob-cpu.yaml", "tfjob-elastic.yaml", "tfjob-gpu.yaml"]


@pytest.mark.parametrize("path", TFJOB_FILES, ids=lambda path: path.name)
def test_every_example_is_a_tfjob_the_extender_reads_naming_its_scheduler(path: Path) -> None:
    job = manifest(path)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert "namespace" not in job["metadata"], "kubectl apply -f puts it in the current namespace"
    view = job_view(job)
    assert view.scheduler_names == (SCHEDULER_NAME,)
    assert view.replicas == {Role.PS: 1, Role.WORKER: job["spec"]["tfReplicaSpecs"]["Worker"]["replicas"]}
    for replica in job["spec"]["tfReplicaSpecs"].values():
        assert replica["restartPolicy"] == "OnFailure"
    for container in containers(job):
        assert container["name"] == "tensorflow", "training-operator looks for the container named tensorflow"
        assert container["image"].startswith(IMAGE)
        assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    would = would_be(job, scheduler_name=SCHEDULER_NAME, priority_classes={}, max_pods=100)
    assert len(would.pods) == would.group.min_member == sum(view.replicas.values())
    assert path.name in (EXAMPLES / "README.md").read_text()


def test_every_example_runs_the_same_training_script() -> None:
    commands = {tuple(container["command"]) for path in TFJOB_FILES for container in containers(manifest(path))}
    assert len(commands) == 1
    (command,) = commands
    assert command[:2] == ("python", "-c") and "MonitoredTrainingSession" in command[2]
    compile(command[2], "training script", "exec")


def test_the_elastic_example_declares_its_bounds_checkpoints_and_suspendability() -> None:
    job = manifest(EXAMPLES / "tfjob-elastic.yaml")
    view = job_view(job)
    assert view.enable_dynamic_worker and view.suspendable
    assert (view.min_workers, view.replicas[Role.WORKER], view.max_workers) == (2, 3, 4)
    assert view.checkpoint_interval_s == 300.0
    worker = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert {"name": "CHECKPOINT_SECONDS", "value": "300"} in worker["env"], "it checkpoints as often as it says"


def test_the_gpu_example_gives_each_worker_one_gpu() -> None:
    view = job_view(manifest(EXAMPLES / "tfjob-gpu.yaml"))
    assert view.role_requests[Role.WORKER].get(GPU) == 1
    assert view.role_requests[Role.PS].get(GPU) == 0
