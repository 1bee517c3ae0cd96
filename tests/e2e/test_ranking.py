"""End to end: rank order between waiting TFJobs — starvation is bounded, equal weights go in arrival order.

The extender under test runs with a starvation limit of `STARVATION_LIMIT_S` seconds.
"""

from __future__ import annotations

import time

import pytest

from extender.devcluster import LocalControlPlane
from tests.e2e.conftest import STARVATION_LIMIT_S, Scene
from tests.e2e.waits import wait_until
from tests.e2e.workloads import JOB, bind_times, bound, job_pods, tfjob, wait_bound

pytestmark = pytest.mark.e2e
SMALL_JOB_S = 10.0
"""How long each small job of the stream runs."""
STREAM_EVERY_S = 2.5
SCHEDULING_SLACK_S = 15.0
"""kube-scheduler's retry backoff (up to 10 s) and the watch round trips."""
ARRIVAL_GAP_S = 2.0
"""Between two submissions whose order matters: creation timestamps have a resolution of one second."""


def test_a_big_light_job_starts_within_its_starvation_limit_under_a_stream_of_small_heavy_jobs(
    plane: LocalControlPlane, scene: Scene
) -> None:
    scene.add_nodes(3)
    ns = scene.namespace
    deadline_s = STARVATION_LIMIT_S + SMALL_JOB_S + SCHEDULING_SLACK_S
    started = time.time()
    submitted = 0
    big_created = 0.0

    def stream_until_big_started() -> bool:
        """Submit the small jobs as they fall due, the big one after two of them; true once it is bound."""
        nonlocal submitted, big_created
        elapsed = time.time() - started
        if submitted * STREAM_EVERY_S <= elapsed:
            # 1 PS + 3 workers of 0.5 CPU / 512 MiB: cheap per worker, so a high KOD2 weight
            small = tfjob(
                f"small-{submitted}", scene=ns, workers=3, cpu="500m", memory="512Mi", run_for=f"{SMALL_JOB_S:.0f}s"
            )
            plane.create_tfjob(ns, small)
            submitted += 1
        if not big_created and elapsed >= 2 * STREAM_EVERY_S:
            # 1 PS + 11 workers of 1 CPU / 4 GiB: the whole cluster, and a low KOD2 weight
            plane.create_tfjob(ns, tfjob("big", scene=ns, workers=11, memory="4Gi"))
            big_created = time.time()
        return bool(big_created) and len(bound(job_pods(plane, ns, "big"))) == 12

    # the big job is created after 2 × STREAM_EVERY_S and must start within deadline_s + 30 s of that
    wait_until("the big job to start", stream_until_big_started, 2 * STREAM_EVERY_S + deadline_s + 30, interval_s=0.25)
    times = bind_times(plane, ns, job_pods(plane, ns, "big"))
    waited = max(times.values()) - int(big_created)
    assert waited <= deadline_s, f"started after {waited:.0f}s; limit {STARVATION_LIMIT_S:.0f}s + one job"
    assert submitted > 6, "the stream of small jobs kept the cluster busy meanwhile"


def test_with_equal_weights_the_earlier_job_starts_first(plane: LocalControlPlane, scene: Scene) -> None:
    scene.add_nodes(3)
    ns = scene.namespace
    plane.create_tfjob(ns, tfjob("filler", scene=ns, workers=11, run_for="15s"))
    wait_bound(plane, ns, f"{JOB}=filler", 12)
    plane.create_tfjob(ns, tfjob("first", scene=ns, workers=7))
    time.sleep(ARRIVAL_GAP_S)
    plane.create_tfjob(ns, tfjob("second", scene=ns, workers=7))
    wait_bound(plane, ns, f"{JOB}=first", 8, timeout_s=90)
    assert not bound(job_pods(plane, ns, "second")), "only one of the two fits; the earlier one goes first"
