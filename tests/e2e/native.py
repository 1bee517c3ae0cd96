"""What the end-to-end tests of native mode share: a control plane of their own in native mode (Kubernetes
1.37 with the `GenericWorkload` gate, the extender with `--native-gangs on` and its webhook; skipped on other
releases, whose gang API native mode does not use), and what to read back: a TFJob's Workload and PodGroup,
every Workload and PodGroup the extender made in a namespace (by its label), the PodGroup's `minCount`, and
the extender's `/debug/native-gangs`.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import ApiError, LocalControlPlane, build_control_plane
from extender.devcluster.plane import WORKLOAD_API
from extender.k8s.native_gangs import MANAGED_BY, MANAGED_BY_LABEL
from tests.e2e.waits import wait_until

Obj = dict[str, Any]
NONE_LEFT = {"workloads": None, "podgroups": None}
"""What `native_objects` reads of a TFJob whose native gang is gone."""


@contextlib.contextmanager
def native_control_plane(extender_args: tuple[str, ...]) -> Iterator[LocalControlPlane]:
    """A started control plane in native mode with `extender_args`; the test is skipped before 1.37."""
    control_plane = LocalControlPlane(build_control_plane(), extender_args=extender_args, native_gangs=True)
    version = control_plane.kubernetes_version()
    if ".".join(version.lstrip("v").split(".")[:2]) != "1.37" or "1.37" not in WORKLOAD_API:
        pytest.skip(f"native gangs need Kubernetes 1.37 (scheduling.k8s.io/v1beta1); the control plane is {version}")
    with control_plane:
        yield control_plane


def native_objects(plane: LocalControlPlane, namespace: str, name: str) -> dict[str, Obj | None]:
    """The Workload and PodGroup `name` (None for each that does not exist)."""
    found: dict[str, Obj | None] = {}
    for plural in ("workloads", "podgroups"):
        try:
            found[plural] = plane.get(f"/apis/{plane.workload_api_version}/namespaces/{namespace}/{plural}/{name}")
        except ApiError as error:
            if error.status != 404:
                raise
            found[plural] = None
    return found


def made_by_the_extender(plane: LocalControlPlane, namespace: str) -> list[str]:
    """`plural/name` of every Workload and PodGroup in `namespace` labelled as the extender's."""
    selector = urllib.parse.quote(f"{MANAGED_BY_LABEL}={MANAGED_BY}")
    found = []
    for plural in ("workloads", "podgroups"):
        path = f"/apis/{plane.workload_api_version}/namespaces/{namespace}/{plural}?labelSelector={selector}"
        found += [f"{plural}/{item['metadata']['name']}" for item in plane.get(path)["items"]]
    return found


def gang_min_count(plane: LocalControlPlane, namespace: str, name: str) -> int | None:
    """The PodGroup's `gang.minCount` (None while it does not exist)."""
    group = native_objects(plane, namespace, name)["podgroups"]
    return None if group is None else int(group["spec"]["schedulingPolicy"]["gang"]["minCount"])


def wait_min_count(plane: LocalControlPlane, namespace: str, name: str, count: int, timeout_s: float = 30) -> None:
    """Wait until the PodGroup `name` exists with `minCount` = `count` and its Workload's template says so too."""

    def both_say() -> bool:
        made = native_objects(plane, namespace, name)
        workload, group = made["workloads"], made["podgroups"]
        if workload is None or group is None:
            return False
        template = int(workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"])
        return template == int(group["spec"]["schedulingPolicy"]["gang"]["minCount"]) == count

    wait_until(f"{namespace}/{name}'s gang at minCount {count}", both_say, timeout_s)


def wait_native_gone(plane: LocalControlPlane, namespace: str, name: str, why: str, timeout_s: float = 30) -> None:
    wait_until(
        f"{name}'s Workload and PodGroup deleted ({why})",
        lambda: native_objects(plane, namespace, name) == NONE_LEFT,
        timeout_s,
    )


def debug_native_gangs(plane: LocalControlPlane) -> Obj:
    with urllib.request.urlopen(f"{plane.observe_url}/debug/native-gangs", timeout=5) as response:
        view: Obj = json.load(response)
    return view


def native_writes(plane: LocalControlPlane, job: str) -> list[tuple[str, int]]:
    """(kind, minCount) of each write carried out that `/debug/native-gangs` lists for the TFJob
    `namespace/name`, oldest first."""
    writes = debug_native_gangs(plane)["writes"]
    return [(w["kind"], w["minCount"]) for w in writes if w["job"] == job and w["outcome"] == "done"]
