"""A live demo on a local control plane: real kube-scheduler, training-operator and the extender.

Brings the control plane up (building it the first time; `extender.devcluster`), prints the address of
the live page (/ui) to watch alongside, adds three 4-CPU kwok nodes, submits a small mixed TFJob
workload, prints what happens every few seconds — which pods run where, which gangs wait and why — and
ends with a summary per job (when it started, how long it waited, how many nodes it used and whether its
PS sat beside its workers) and a PNG timeline of the run (`--timeline`, default demo-timeline.png). The
control plane and the page then stay up until Enter is pressed, unless `--no-wait`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from extender.devcluster import SCHEDULER_NAME, ControlPlaneError, LocalControlPlane, build_control_plane
from extender.devcluster.timeline import JobSpan, draw_timeline
from tests.e2e.workloads import bind_times, bound, job_pods, ps_and_workers_by_node, tfjob

NAMESPACE = "demo"
WORKLOAD = [
    # name, submitted after (s), PS, workers, CPU per pod, runs for
    ("mnist", 0, 1, 2, "1", "25s"),
    ("resnet", 2, 1, 4, "1", "30s"),
    ("bert", 4, 1, 6, "1", "20s"),
    ("tiny", 6, 1, 1, "500m", "15s"),
]
REFRESH_S = 3.0
DEADLINE_S = 240.0


def debug(plane: LocalControlPlane, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{plane.observe_url}{path}", timeout=5) as response:
        result: dict[str, Any] = json.load(response)
        return result


def show(plane: LocalControlPlane, started: float, first_bound: dict[str, float], seen: set[str]) -> bool:
    """Print one status block; True once every job's pods have finished."""
    report = debug(plane, "/debug/jobs")
    states = {j["job"].split("/", 1)[1]: j for j in report["jobs"]}
    print(f"\n--- t = {time.time() - started:5.1f}s")
    for record in report["preemptions"]:
        if record["reason"] not in seen:
            seen.add(record["reason"])
            print(f"  preemption: {record['reason']}")
    finished = 0
    for name, *_ in WORKLOAD:
        pods = job_pods(plane, NAMESPACE, name)
        running = bound(pods)
        done = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        if running and name not in first_bound:
            first_bound[name] = time.time()
        by_node: dict[str, list[str]] = {}
        for pod in running:
            role = pod["metadata"]["labels"].get("training.kubeflow.org/replica-type", "?")
            by_node.setdefault(pod["spec"]["nodeName"].removeprefix("demo-"), []).append(role)
        where = "  ".join(f"{node}[{','.join(sorted(roles))}]" for node, roles in sorted(by_node.items()))
        job = states.get(name, {"state": "-", "reason": ""})
        why = f"  ({job['reason']})" if job["state"] in ("WAITING", "STARVING", "PREEMPTED") else ""
        print(f"{name:>7}: {job['state']:<9} {len(running)}/{len(pods)} bound, {done} done  {where}{why}")
        finished += bool(pods) and done == len(pods)
    return finished == len(WORKLOAD)


def run(plane: LocalControlPlane, *, native_gangs: bool = False) -> tuple[list[JobSpan], float]:
    plane.create_namespace(NAMESPACE)
    nodes = [f"demo-node-{i}" for i in range(3)]
    for node in nodes:
        plane.create_node(node, cpu="4", memory="16Gi", labels={"e2e-scene": NAMESPACE})
    plane.wait_nodes_ready(nodes)
    print(
        "three kwok nodes of 4 CPU; submitting:",
        ", ".join(f"{n} (1 PS + {w} workers × {c} CPU, runs {d})" for n, _, _, w, c, d in WORKLOAD),
    )
    started = time.time()
    submitted: dict[str, float] = {}
    first_bound: dict[str, float] = {}
    placements: dict[str, tuple[int, int]] = {}
    preemptions_seen: set[str] = set()
    finished: dict[str, float] = {}
    while time.time() - started < DEADLINE_S:
        for name, after, ps, workers, cpu, run_for in WORKLOAD:
            if name not in submitted and time.time() - started >= after:
                scheduler = SCHEDULER_NAME if native_gangs else ""
                job = tfjob(
                    name, scene=NAMESPACE, ps=ps, workers=workers, cpu=cpu, run_for=run_for, scheduler_name=scheduler
                )
                plane.create_tfjob(NAMESPACE, job)
                submitted[name] = time.time()
        for name, *_ in WORKLOAD:
            pods = job_pods(plane, NAMESPACE, name)
            if pods and len(bound(pods)) == len(pods) and name not in placements:
                ps_nodes, workers_by_node = ps_and_workers_by_node(pods)
                beside = sum(workers_by_node[node] for node in ps_nodes)
                placements[name] = (len({p["spec"]["nodeName"] for p in pods}), beside)
        for name, *_ in WORKLOAD:
            pods = job_pods(plane, NAMESPACE, name)
            done = all((p.get("status") or {}).get("phase") == "Succeeded" for p in pods)
            if pods and done and name not in finished:
                finished[name] = time.time()
        if show(plane, started, first_bound, preemptions_seen):
            break
        time.sleep(REFRESH_S)
    print("\nsummary (a gang's pods are bound together once its whole plan is reserved)")
    print(f"{'job':>7} {'waited':>8} {'nodes':>6} {'workers beside PS':>18} {'all pods bound within':>22}")
    for name, _, _, workers, _, _ in WORKLOAD:
        waited = first_bound.get(name, time.time()) - submitted.get(name, started)
        nodes_used, beside = placements.get(name, (0, 0))
        times = bind_times(plane, NAMESPACE, job_pods(plane, NAMESPACE, name)).values()
        spread = f"{max(times) - min(times):.0f}s" if times else "-"
        print(f"{name:>7} {waited:>7.1f}s {nodes_used:>6} {beside:>11}/{workers} {spread:>22}")
    return spans(plane, started, submitted, finished), time.time() - started


def spans(
    plane: LocalControlPlane, started: float, submitted: dict[str, float], finished: dict[str, float]
) -> list[JobSpan]:
    """Per job: submitted, all pods bound, all pods succeeded (seconds into the run), and its nodes."""
    result = []
    for name, *_ in WORKLOAD:
        pods = job_pods(plane, NAMESPACE, name)
        times = bind_times(plane, NAMESPACE, pods)
        all_bound = max(times.values()) - started if pods and len(times) == len(pods) else None
        nodes = tuple(sorted({p["spec"]["nodeName"].removeprefix("demo-") for p in pods if p["spec"].get("nodeName")}))
        done = finished[name] - started if name in finished else None
        result.append(JobSpan(name, submitted.get(name, started) - started, all_bound, done, nodes))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-wait", action="store_true", help="stop as soon as the run ends")
    parser.add_argument("--timeline", type=Path, default=Path("demo-timeline.png"), help="where the PNG goes")
    parser.add_argument(
        "--native-gangs",
        action="store_true",
        help="Kubernetes 1.37's own gangs: the extender's webhook gives each TFJob a Workload and PodGroup",
    )
    args = parser.parse_args(argv)
    try:
        print("building or reusing the local control plane (the first build takes a while) ...", flush=True)
        cache = build_control_plane()
        print("starting etcd, kube-apiserver, kwok, the extender, kube-scheduler and training-operator ...", flush=True)
        with LocalControlPlane(cache, native_gangs=args.native_gangs) as plane:
            page = f"{plane.observe_url}/ui"
            print(f"the live page: {page}  (kubeconfig: {plane.kubeconfig})", flush=True)
            job_spans, length = run(plane, native_gangs=args.native_gangs)
            if args.native_gangs:
                show_native_gangs(plane)
            written = draw_timeline(job_spans, length, args.timeline, "the demo workload on three 4-CPU nodes")
            print(f"\ntimeline: {written.resolve()}")
            if not args.no_wait:
                print(f"the page stays up at {page}; press Enter to stop the control plane", flush=True)
                wait_for_enter()
    except ControlPlaneError as error:
        print(f"demo failed: {error}", file=sys.stderr)
        return 1
    return 0


def show_native_gangs(plane: LocalControlPlane) -> None:
    """Who held each job's barrier, as /debug/native-gangs says."""
    with urllib.request.urlopen(f"{plane.observe_url}/debug/native-gangs", timeout=5) as response:
        view = json.load(response)
    print(f"\nnative gangs: {'on' if view['active'] else 'off'} ({view['why']})")
    for job in view["jobs"]:
        print(f"{job['job']:>16}: barrier held by {job['barrier']}: {job['why']}")


def wait_for_enter() -> None:
    try:
        input()
    except EOFError:
        return


if __name__ == "__main__":
    sys.exit(main())
