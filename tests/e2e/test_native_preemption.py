"""End to end: one party takes victims for a native gang, and which one, measured.

A control plane of its own in native mode (`native_gangs=True`, 1.37 with `GenericWorkload`) with the alpha
gate `PodGroupPreemptionPolicy` on as well. Every scene: three 4-CPU kwok nodes full with the low-priority
native gang `batch` (a PS and 11 workers of 1 CPU), then the high-priority native gang `urgent` (a PS and 3
workers) arrives. kube-scheduler runs with the repository's profile (upstream's PodGroup preemption off:
`podGroupPostFilter` without DefaultPreemption) or with that one line taken out, and the scene records who
evicted whom (`preemption_parties`) and prints the figures compared in docs/workload-api.md.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from extender.devcluster import SCHEDULER_NAME, ApiError, LocalControlPlane, build_control_plane
from extender.devcluster.plane import WORKLOAD_API
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.preemption_parties import BY_LOOP, PodWatch, SceneFigures, figures, parties
from tests.e2e.waits import OBSERVE_S
from tests.e2e.workloads import JOB, filter_summaries, ps_and_workers_by_node, tfjob, wait_bound

pytestmark = pytest.mark.e2e

POLICY_GATE = "PodGroupPreemptionPolicy"
"""Alpha in 1.37: `preemptionPolicy` on PodGroups, filled in by the priority admission from the PriorityClass."""
BIND_LIMIT_S = 60.0
"""How long the high-priority gang is given to bind whole: many rounds of both parties."""
MIN_RUN_ANNOTATION = "tfjob-extender.io/min-run-before-preemption-s"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def gated_plane() -> Iterator[LocalControlPlane]:
    control_plane = LocalControlPlane(
        build_control_plane(),
        extender_args=("--starvation-limit-s", str(STARVATION_LIMIT_S), "--min-run-before-preemption-s", "0"),
        native_gangs=True,
        apiserver_args=(f"--feature-gates={POLICY_GATE}=true",),
    )
    version = control_plane.kubernetes_version()
    if ".".join(version.lstrip("v").split(".")[:2]) != "1.37" or "1.37" not in WORKLOAD_API:
        pytest.skip(f"PodGroup preemption needs Kubernetes 1.37; the control plane is {version}")
    with control_plane:
        yield control_plane


@pytest.fixture
def gated_scene(gated_plane: LocalControlPlane, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(gated_plane, request)


SCHEDULERS = {False: "kube-scheduler", True: "kube-scheduler-upstream-preemption"}
"""Upstream's PodGroup preemption on or not → the name of the kube-scheduler process (and of its log)."""


def run_scheduler(plane: LocalControlPlane, *, upstream_gang_preemption: bool) -> None:
    """kube-scheduler again, with the repository's profile or with upstream's PodGroup preemption put back."""
    settings = copy.deepcopy(plane.scheduler_settings())
    if upstream_gang_preemption:
        for profile in settings["profiles"]:
            (profile.get("plugins") or {}).pop("podGroupPostFilter", None)
    for name in SCHEDULERS.values():
        if name in plane.processes:
            plane.stop_process(name)
    name = SCHEDULERS[upstream_gang_preemption]
    plane.start_scheduler(name, settings, feature_gates=(*plane.feature_gates, POLICY_GATE))


def upstream_preemption_runs(plane: LocalControlPlane, namespace: str, gang: str) -> list[str]:
    """What kube-scheduler said each time its PodGroup preemption ran for `gang` (its log, at -v=2, says "pod
    group preemption: ..." in the outcome of every failed PodGroup cycle that ran it)."""
    said = []
    for name in SCHEDULERS.values():
        path = plane.run_dir / f"{name}.log"
        lines = path.read_text(errors="replace").splitlines() if path.exists() else []
        said += [line for line in lines if f'podGroup="{namespace}/{gang}"' in line and "pod group preemption" in line]
    return said


def report(*lines: str) -> None:
    """Figures for the reader of a run with `-s` (docs/workload-api.md quotes them)."""
    sys.stdout.write("".join(f"\n{line}" for line in lines) + "\n")


def fill_with_batch(plane: LocalControlPlane, scene: Scene, batch_annotations: dict[str, str] | None = None) -> None:
    """Three 4-CPU nodes, PriorityClasses `<ns>-low` (10) and `<ns>-high` (1000), and the low-priority native
    gang `batch` bound on all 12 CPU."""
    ns = scene.namespace
    scene.add_nodes(3)
    for name, value in ((f"{ns}-low", 10), (f"{ns}-high", 1000)):
        plane.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value},
        )
    batch = tfjob("batch", scene=ns, workers=11, priority_class=f"{ns}-low", scheduler_name=SCHEDULER_NAME)
    batch["metadata"]["annotations"].update(batch_annotations or {})
    plane.create_tfjob(ns, batch)
    wait_bound(plane, ns, f"{JOB}=batch", 12)


def preempt_for_urgent(
    plane: LocalControlPlane, scene: Scene, party: str, batch_annotations: dict[str, str] | None = None
) -> tuple[SceneFigures, list[Obj], dict[str, str]]:
    """The scene: `batch` fills the nodes, `urgent` arrives; its figures, urgent's pods (none if it never
    bound whole) and who evicted each victim."""
    ns = scene.namespace
    fill_with_batch(plane, scene, batch_annotations)
    watch = PodWatch(plane, ns).start()
    created_at = time.time()
    plane.create_tfjob(
        ns, tfjob("urgent", scene=ns, workers=3, priority_class=f"{ns}-high", scheduler_name=SCHEDULER_NAME)
    )
    try:
        pods = wait_bound(plane, ns, f"{JOB}=urgent", 4, timeout_s=BIND_LIMIT_S)
    except (AssertionError, TimeoutError):
        pods = []
    time.sleep(OBSERVE_S)
    watch.stop()
    who = parties(plane, ns, watch.evicted("batch"), "batch")
    found = figures(party, watch, who, created_at=created_at, preemptor=("urgent", 4), victim="batch")
    report(f"FIGURES {found.line()}", f"VICTIMS {sorted(who.items())}")
    report(*(f"WAITS {life.name}: {life.waits}" for life in watch.lives.values() if life.job == "urgent"))
    runs = upstream_preemption_runs(plane, ns, "urgent")
    report(f"UPSTREAM PREEMPTION RAN {len(runs)} times" + (f", first: {runs[0][-300:]}" if runs else ""))
    if not pods:
        report(f"EXTENDER'S FILTER {filter_summaries(plane, ns, plane.pods(ns, f'{JOB}=urgent'))}")
    return found, pods, who


def test_a_podgroup_takes_its_preemption_policy_from_its_priority_class_only(
    gated_plane: LocalControlPlane, gated_scene: Scene
) -> None:
    """The field cannot be the lever: the priority admission fills it from the PriorityClass and refuses
    any other value, and kube-scheduler refuses a gang whose pods' policy differs from it."""
    path = f"/apis/{gated_plane.workload_api_version}/namespaces/{gated_scene.namespace}/podgroups"
    group: Obj = {
        "apiVersion": gated_plane.workload_api_version,
        "kind": "PodGroup",
        "metadata": {"name": "never"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "preemptionPolicy": "Never"},
    }
    with pytest.raises(ApiError) as refused:
        gated_plane.post(path, group)
    assert refused.value.status == 403, refused.value
    report(f"REFUSED {refused.value}")
    del group["spec"]["preemptionPolicy"]
    made = gated_plane.post(path, {**group, "metadata": {"name": "default"}})
    assert made["spec"]["preemptionPolicy"] == "PreemptLowerPriority", made["spec"]


def test_without_the_lever_kube_scheduler_preempts_for_a_native_gang(
    gated_plane: LocalControlPlane, gated_scene: Scene
) -> None:
    run_scheduler(gated_plane, upstream_gang_preemption=True)
    try:
        found, _, _ = preempt_for_urgent(gated_plane, gated_scene, "both parties (no lever)")
    finally:
        run_scheduler(gated_plane, upstream_gang_preemption=False)
    assert upstream_preemption_runs(gated_plane, gated_scene.namespace, "urgent"), "kube-scheduler never tried"
    assert BY_LOOP in found.evicted_by and found.bind_whole_s > 0, found


def test_kube_scheduler_alone_finds_no_room_through_the_extender(
    gated_plane: LocalControlPlane, gated_scene: Scene
) -> None:
    """Upstream as the only party (the loop may not take the batch within the hour): its preemption runs, but
    its dry run asks the extender's filter, which answers from its model where the batch still runs."""
    run_scheduler(gated_plane, upstream_gang_preemption=True)
    try:
        found, pods, _ = preempt_for_urgent(
            gated_plane, gated_scene, "kube-scheduler alone", {MIN_RUN_ANNOTATION: "3600"}
        )
    finally:
        run_scheduler(gated_plane, upstream_gang_preemption=False)
    assert upstream_preemption_runs(gated_plane, gated_scene.namespace, "urgent"), "kube-scheduler never tried"
    assert (found.evicted_by, pods) == ((), []), found


def test_with_the_lever_only_the_loop_evicts_and_the_gang_binds_whole_beside_its_ps(
    gated_plane: LocalControlPlane, gated_scene: Scene
) -> None:
    run_scheduler(gated_plane, upstream_gang_preemption=False)
    found, pods, who = preempt_for_urgent(gated_plane, gated_scene, "the extender's loop alone (the lever)")
    assert upstream_preemption_runs(gated_plane, gated_scene.namespace, "urgent") == []
    assert found.evicted_by == (BY_LOOP,), who
    assert found.victim_gangs_whole and found.bind_whole_s > 0, found
    ps, workers = ps_and_workers_by_node(pods)
    (ps_node,) = ps
    assert workers[ps_node] == 3, (ps, workers)
