"""The local control plane, started once per test session, and per-test isolation on it.

The control plane is expensive to start (≈30 s) and cheap to share. Each test gets its own namespace
and creates its own kwok nodes, labelled with the test's name; when it ends, its pods are deleted (no
garbage collector runs) and its nodes removed, so the next test starts on an empty cluster.
Without Go and without cached binaries the tests are skipped with the reason — except in CI, where a
missing control plane is a failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from extender.devcluster import ApiError, LocalControlPlane, build_control_plane
from extender.devcluster.resources import source

STARVATION_LIMIT_S = 20.0
"""The extender under test lets a gang wait this long before capacity is held for it."""
MIN_RUN_S = 0.0
"""The extender under test may preempt a job as soon as it runs: the scenes compress minutes into seconds,
and the minimum run before preemption is covered by the unit tests."""


def skip_without_control_plane() -> None:
    """Skip the test when the control plane can be neither built (no Go) nor reused (no cached build), but
    not in CI, where a missing control plane is a failure."""
    printed = subprocess.run(
        ["bash", str(source().build_script), "--print-dir"], check=True, capture_output=True, text=True
    )
    cached = Path(printed.stdout.strip()) / "bin" / "kube-apiserver"
    if shutil.which("go") is None and not cached.exists() and os.environ.get("CI") != "true":
        pytest.skip("end-to-end tests need Go (to build the local control plane) or a cached build")


@pytest.fixture(scope="session")
def plane() -> Iterator[LocalControlPlane]:
    skip_without_control_plane()
    args = ("--starvation-limit-s", str(STARVATION_LIMIT_S), "--min-run-before-preemption-s", str(MIN_RUN_S))
    with LocalControlPlane(build_control_plane(), extender_args=args) as control_plane:
        yield control_plane


@contextlib.contextmanager
def extender_run_with(plane: LocalControlPlane, *args: str) -> Iterator[None]:
    """The shared extender restarted with `args` added to its command line, and put back as it was after."""
    plain = plane.extender_args
    plane.stop_extender()
    plane.extender_args = (*plain, *args)
    plane.start_extender()
    try:
        yield
    finally:
        plane.stop_extender()
        plane.extender_args = plain
        plane.start_extender()


class Scene:
    """One test's corner of the shared cluster: a namespace and its own nodes."""

    def __init__(self, plane: LocalControlPlane, name: str) -> None:
        self.plane = plane
        self.namespace = name
        self.nodes: list[str] = []
        try:
            plane.create_namespace(name)
        except ApiError as error:
            if error.status != 409:
                raise

    def add_nodes(
        self, count: int, *, cpu: str = "4", memory: str = "16Gi", gpu: int = 0, labels: dict[str, str] | None = None
    ) -> list[str]:
        names = [f"{self.namespace}-n{len(self.nodes) + i}" for i in range(count)]
        for name in names:
            node_labels = {**(labels or {}), "e2e-scene": self.namespace}
            self.plane.create_node(name, cpu=cpu, memory=memory, gpu=gpu, labels=node_labels)
        self.nodes += names
        self.plane.wait_nodes_ready(names)
        return names

    def cleanup(self) -> None:
        paths = [
            f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/tfjobs/{job['metadata']['name']}"
            for job in self.plane.get(f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/tfjobs")["items"]
        ]
        paths += [
            f"/api/v1/namespaces/{self.namespace}/pods/{pod['metadata']['name']}?gracePeriodSeconds=0"
            for pod in self.plane.pods(self.namespace)
        ]
        paths += [f"/api/v1/nodes/{node}" for node in self.nodes]
        for path in paths:
            try:
                self.plane.delete(path)
            except ApiError as error:
                if error.status != 404:
                    raise


def scene_on(plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    """The body of a scene fixture: a namespace of its own on `plane` for the test, cleaned up after it."""
    current = Scene(plane, scene_name(request))
    try:
        yield current
    finally:
        current.cleanup()


def scene_name(request: pytest.FixtureRequest) -> str:
    """The test's name as a namespace name."""
    return re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:50].rstrip("-")


@pytest.fixture
def scene(plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(plane, request)
