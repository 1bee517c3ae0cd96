"""End to end: the TFJobs of `examples/` submit as they are, and `explain --what-if` says beforehand what
would happen.

Three 8-CPU nodes and one with two GPUs. Before anything is submitted, `explain --what-if` says the CPU
example would start now on the scene's nodes (exit 0) and the same job with 1000 workers never (exit 2), and
creates nothing. Then each example, created through the API server unchanged but for its namespace, is
accepted by training-operator (its PodGroup and its pods created with the replicas' restart policy, a
`Running` condition and no `Failed` one) and every pod is bound (kwok pretends to run them); the GPU job,
submitted first, has its workers on the GPU node.
"""

from __future__ import annotations

import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.devcluster import LocalControlPlane, wait_until
from tests.e2e.conftest import Scene
from tests.e2e.workloads import JOB, not_failed, tfjob_object, wait_bound

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PODS = {"tfjob-gpu": 3, "tfjob-cpu": 3, "tfjob-elastic": 4}
"""Each example's TFJob → the pods it starts with, in the order they are submitted."""


def example(name: str) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    return manifest


def what_if(plane: LocalControlPlane, file: Path, namespace: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "extender", "explain", "--what-if", str(file), "--url", plane.observe_url]
    return subprocess.run([*command, "-n", namespace], capture_output=True, text=True, timeout=30, check=False)


def running(plane: LocalControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    """The TFJob once training-operator says it runs (a `Running` condition), else None."""
    job = tfjob_object(plane, namespace, name)
    conditions = (job.get("status") or {}).get("conditions") or []
    return job if any(c["type"] == "Running" and c["status"] == "True" for c in conditions) else None


def test_the_examples_submit_as_they_are_and_what_if_says_so_first(
    plane: LocalControlPlane, scene: Scene, tmp_path: Path
) -> None:
    cpu_nodes = scene.add_nodes(3, cpu="8", memory="32Gi")
    (gpu_node,) = scene.add_nodes(1, cpu="8", memory="32Gi", gpu=2)
    ns = scene.namespace

    def answered(file: Path, code: int) -> subprocess.CompletedProcess[str] | None:
        answer = what_if(plane, file, ns)
        return answer if answer.returncode == code else None

    fits = wait_until("what-if: tfjob-cpu would start now", lambda: answered(EXAMPLES / "tfjob-cpu.yaml", 0), 30)
    head = fits.stdout.splitlines()[0]
    assert head.startswith("would start now on "), fits.stdout
    assert set(head.removeprefix("would start now on ").split(", ")) <= {*cpu_nodes, gpu_node}
    huge = example("tfjob-cpu")
    huge["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 1000
    (tmp_path / "huge.yaml").write_text(yaml.safe_dump(huge))
    never = what_if(plane, tmp_path / "huge.yaml", ns)
    assert never.returncode == 2, never.stdout + never.stderr
    assert never.stdout.startswith("never: bigger than the cluster — its minimum asks more than the whole cluster")
    assert plane.get(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs")["items"] == [], "what-if submits nothing"

    for name, pods in PODS.items():
        plane.create_tfjob(ns, example(name))
        bound = wait_bound(plane, ns, f"{JOB}={name}", pods)
        assert {pod["spec"]["nodeName"] for pod in bound} <= {*cpu_nodes, gpu_node}
        assert {pod["spec"]["restartPolicy"] for pod in bound} == {"OnFailure"}
        assert plane.get(f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups/{name}")
        job = wait_until(f"TFJob {name} Running", partial(running, plane, ns, name), 60)
        assert not_failed(job)
        if name == "tfjob-gpu":
            workers = [pod for pod in bound if pod["metadata"]["name"].startswith("tfjob-gpu-worker-")]
            assert [pod["spec"]["nodeName"] for pod in workers] == [gpu_node, gpu_node]
