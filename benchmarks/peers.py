"""Gang schedulers side by side on one local control plane: tfjob-extender against what a platform team would
run instead — scheduler-plugins Coscheduling, Kubernetes' own gang and the default scheduler — each a real
scheduler process.

One `LocalControlPlane` (etcd, kube-apiserver serving Kubernetes' own Workload API, kwok; training-operator
only for the KOD2 workload) serves every run. A run starts the scheduler under test alone — `ours` is the
extender plus kube-scheduler with the repo's `tfjob-scheduler` profile; `coscheduling` is kube-scheduler built
with the Coscheduling plugin (`--coscheduling-binary`, profile `scheduler-plugins-scheduler` as that project's
Helm chart configures it, `permitWaitingTimeSeconds: 10`); `native` is the control plane's kube-scheduler with
the Workload API's feature gates (`GenericWorkload` in 1.37: the GangScheduling plugin joins the default
profile and a PodGroup is scheduled in one cycle) and the default profile as `native-gang-scheduler`, each
job's pods joined to a `scheduling.k8s.io` PodGroup of all of them, made before them; `ours-native` is
`ours` in native mode — the same kube-scheduler with the Workload API's gates, the extender with
`--native-gangs on`, its webhook registered for the run: the benchmark sends each TFJob naming the scheduler,
the webhook names its gang, the extender's loops make its Workload and PodGroup, and the pods (made by the
benchmark as training-operator would, from the templates the API server returned) join it; `default` is the
control plane's kube-scheduler with the default profile and no gates — submits the workload with that
`schedulerName`, measures, stops the scheduler and deletes every pod, PodGroup and TFJob before the next run.
No other scheduler runs meanwhile, so none plans, watches or writes for another's pods. Every scheduler gets
the same client rate limit and `percentageOfNodesToScore`.
Volcano is not in the line-up: the Go module proxy serves no release of `volcano.sh/volcano`
(see `VOLCANO`).

Workloads (`--workloads`), each from `--seed` on for `--seeds` seeds:
- `drain` at each of `--drain-nodes` (32 CPU nodes): plain pods, gangs of 8 (TFJob + PodGroup
  `scheduling.x-k8s.io` with `minMember: 8`, as training-operator makes them; for `native` a
  `scheduling.k8s.io` PodGroup with `minCount: 8`, the pods naming it) and one 64-pod gang, each
  created while the scheduler under test is stopped (SIGSTOP), then released: pods/s from SIGCONT to the last
  bind (`scheduler_throughput.Bench`, which also gives CPU per pod and the extender's verb latencies);
- `cpu-mix`: 8 nodes × 16 CPU, 24 TFJobs of 1 PS and 1–15 workers (1 or 2 CPU per pod), all submitted at
  once (`cpu_mix`);
- `gpu-gangs`: 8 nodes of 4 GPUs, 30 rigid TFJobs of one CPU PS and 1–8 one-GPU workers drawn as the
  simulator's `gpu-gangs` scenario draws them (`extender/sim/gpu_traces.py`), arriving three times as fast
  (`GPU_GANG_LOAD`), its times scaled by `--gpu-time-scale`;
- `kod2`: the KOD2 experiment's 3 nodes and 10 TFJobs (`extender/sim/workload.kod2`), times scaled by
  `--kod2-time-scale`, submitted to training-operator, which creates each job's PodGroup and pods. It runs
  with `--gang-scheduler-name=tfjob-scheduler` once for all the schedulers; the TFJob's pod templates name
  the scheduler under test, which training-operator keeps (it only fills an empty `schedulerName`), so every
  scheduler gets the same PodGroups (training-operator makes a `scheduling.x-k8s.io` one for any name but
  `volcano`) from one operator process, not one restart per scheduler. For `native` the benchmark makes each
  job's `scheduling.k8s.io` PodGroup before its TFJob, whose replica templates name it in
  `spec.schedulingGroup` (training-operator copies the template's spec into each pod).

Run times depend on placement, and restarts cost what they cost in a cluster: each job's training follows
where its pods are bound (`peer_training.Training`, the simulator's engine on the benchmark's clock): it
trains while runnable at the simulator's throughput model's rate for that placement
(`extender/sim/throughput.py`), loses the training since its last checkpoint when an eviction or a suspension
stops it, and when it is a second from done the benchmark writes the completion time (RFC 3339) on its pods
as `pod-complete.stage.kwok.x-k8s.io/delay`; kwok's `pod-complete-after-delay` stage
(`extender/devcluster/kwok-stages.yaml`) then completes them, so co-location shows in JCT on the real stack.
A job placed in part holds its pods and makes no progress. In the KOD2 workload the TFJobs declare what the
simulator's do (may be suspended, elastic bounds, checkpoint interval on the run's clock) and the benchmark
writes each checkpoint on the job's pods as its training code would
(`tfjob-extender.io/last-checkpoint`).

Per scheduler and seed it prints makespan, average and p95 JCT, average wait to start, the longest partial
placement, the CPU- and GPU-seconds held by pods of gangs not yet whole, workers beside their PS, nodes per
job, deadlocked (placed in part at the end) and never-started jobs, the training restarts threw away, the
restarts, and the most takings of one job within an hour; then the medians over seeds. A run ends
when every job finished, or when nothing ran and nothing changed for `--stall-s` (its unfinished jobs are
censored: they count in JCT with their time up to the end, as in the simulator's report). With `--json PATH`
it also writes one JSON record per run there (`peer_records.py`).
"""

import argparse
import math
import os
import signal
import statistics
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# `name as name`: the benchmark's pure parts, importable from the module users run as from their own.
from benchmarks.peer_contended import run_contended
from benchmarks.peer_drains import DRAIN_PHASES, DrainRow, run_drains
from benchmarks.peer_lineup import SCHEDULERS, VOLCANO, Lineup
from benchmarks.peer_outcomes import CONTENDED_COLUMNS, RunSummary, fmt
from benchmarks.peer_records import write_records
from extender.devcluster import LocalControlPlane, build_control_plane

# -- reports -----------------------------------------------------------------------------------------------


def print_contended(runs: list[RunSummary]) -> None:
    header = "| workload | scheduler | seed | " + " | ".join(title for _, title, _ in CONTENDED_COLUMNS) + " |"
    print("\n" + header)
    print("|" + "---|" * (3 + len(CONTENDED_COLUMNS)))
    for run in runs:
        values = run.values()
        cells = " | ".join(fmt(template, values[key]) for key, _, template in CONTENDED_COLUMNS)
        print(f"| {run.workload} | {run.scheduler} | {run.seed} | {cells} |")
    groups: dict[tuple[str, str], list[dict[str, float]]] = {}
    for run in runs:
        groups.setdefault((run.workload, run.scheduler), []).append(run.values())
    print(
        f"\nmedians over seeds (a makespan of '-': some seed left jobs unfinished)\n{header.replace('seed', 'seeds')}"
    )
    print("|" + "---|" * (3 + len(CONTENDED_COLUMNS)))
    for (workload, scheduler), rows in groups.items():
        cells = " | ".join(fmt(template, median([row[key] for row in rows])) for key, _, template in CONTENDED_COLUMNS)
        print(f"| {workload} | {scheduler} | {len(rows)} | {cells} |")


def median(values: list[float]) -> float:
    return math.nan if any(math.isnan(value) for value in values) else statistics.median(values)


def print_drains(rows: list[DrainRow]) -> None:
    print(
        "\n| nodes | phase | scheduler | seed | pods | bound | pods/s | × default | partial s | sched CPU ms/pod | "
        "extender CPU ms/pod | extender CPU after release ms/pod | filter p50 / p99 ms |"
    )
    print("|" + "---|" * 13)
    baseline = {(r.nodes, r.phase, r.seed): r.result.rate for r in rows if r.scheduler == "default"}
    for r in rows:
        base = baseline.get((r.nodes, r.phase, r.seed))
        ratio = f"{r.result.rate / base:.2f}" if base else "-"
        partial = "-" if r.result.gang_partial_s is None else f"{r.result.gang_partial_s:.2f}"
        extender = r.result.cpu_ms_per_pod.get("extender")
        released = r.result.released_cpu_ms_per_pod.get("extender")
        filt = r.result.verb_ms.get("filter", (None, None))
        verb = "-" if filt[0] is None else f"{filt[0]:.2f} / {filt[1]:.2f}"
        print(
            f"| {r.nodes} | {r.phase} | {r.scheduler} | {r.seed} | {r.result.pods} | {r.result.bound} | "
            f"{r.result.rate:.1f} | {ratio} | {partial} | {r.result.cpu_ms_per_pod['sched']:.2f} | "
            f"{'-' if extender is None else f'{extender:.2f}'} | {'-' if released is None else f'{released:.2f}'} | "
            f"{verb} |"
        )
    print(
        "\nper pod bound: kube-scheduler's scheduling algorithm and its in-tree plugins (ms), its PodGroup cycles "
        "(ms), its PATCH requests (ms, calls: PodGroup status in a drain), the extender's filter and prioritize time "
        "as it measures them (ms) and calls"
    )
    print(
        "| nodes | phase | scheduler | seed | algorithm ms | in-tree ms | group cycle ms | PATCH ms | PATCH calls | "
        "ext filter ms | ext prioritize ms | filter calls | prioritize calls |"
    )
    print("|" + "---|" * 13)
    for r in rows:
        c = r.costs
        cells = " | ".join(
            "-" if key not in c else f"{c[key]:.3f}"
            for key in (
                "sched_algorithm_ms",
                "sched_in_tree_ms",
                "group_cycle_ms",
                "patch_ms",
                "patch_calls",
                "extender_filter_ms",
                "extender_prioritize_ms",
                "filter_calls",
                "prioritize_calls",
            )
        )
        print(f"| {r.nodes} | {r.phase} | {r.scheduler} | {r.seed} | {cells} |")
    print("\nmedians over seeds\n| nodes | phase | scheduler | seeds | pods/s | × default | × coscheduling |")
    print("|" + "---|" * 7)
    groups: dict[tuple[int, str, str], list[DrainRow]] = {}
    for r in rows:
        groups.setdefault((r.nodes, r.phase, r.scheduler), []).append(r)
    for (nodes, phase, scheduler), members in groups.items():
        rates = [m.result.rate for m in members]
        ratios = {}
        for peer in ("default", "coscheduling"):
            peer_rates = {(m.nodes, m.phase, m.seed): m.result.rate for m in rows if m.scheduler == peer}
            values = [
                m.result.rate / peer_rates[(m.nodes, m.phase, m.seed)]
                for m in members
                if peer_rates.get((m.nodes, m.phase, m.seed))
            ]
            ratios[peer] = f"{statistics.median(values):.2f}" if values else "-"
        print(
            f"| {nodes} | {phase} | {scheduler} | {len(members)} | {statistics.median(rates):.1f} | "
            f"{ratios['default']} | {ratios['coscheduling']} |"
        )


# -- main --------------------------------------------------------------------------------------------------


def parse_list(text: str, allowed: Sequence[str], what: str) -> list[str]:
    chosen = [item for item in text.split(",") if item]
    unknown = [item for item in chosen if item not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return chosen


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="drain,cpu-mix,gpu-gangs,kod2")
    parser.add_argument("--schedulers", default="ours,ours-native,native,coscheduling,default")
    parser.add_argument("--coscheduling-binary", type=Path, help="kube-scheduler built with the Coscheduling plugin")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--seeds", type=int, default=1, help="how many seeds, from --seed on")
    parser.add_argument("--drain-nodes", default="500,5000", help="comma-separated node counts of the drains")
    parser.add_argument("--drain-phases", default="plain,gang8,gang64", help="comma-separated subset")
    parser.add_argument("--pods", type=int, default=2000, help="pods per drain phase (the 64-pod gang: 64)")
    parser.add_argument("--gpu-time-scale", type=float, default=0.1, help="gpu-gangs arrivals and run times ×")
    parser.add_argument("--kod2-time-scale", type=float, default=0.1, help="kod2 arrivals and run times ×")
    parser.add_argument("--qps", type=float, default=5000, help="every scheduler's client QPS")
    parser.add_argument("--burst", type=int, default=5000, help="every scheduler's client burst")
    parser.add_argument("--threads", type=int, default=16, help="concurrent API requests when creating")
    parser.add_argument(
        "--stall-s",
        type=float,
        default=330,
        help="end a run after this long with nothing running and nothing changing (default: past kube-scheduler's "
        "5-minute retry of pods no event moved)",
    )
    parser.add_argument("--phase-timeout-s", type=float, default=1800, help="longest drain phase")
    parser.add_argument("--run-timeout-s", type=float, default=1800, help="longest contended run")
    parser.add_argument("--settle-s", type=float, default=3, help="idle time after a start or a clean-up")
    parser.add_argument("--json", type=Path, help="write one JSON record per run to this file")
    parser.add_argument(
        "--extender-arg", action="append", default=[], help="one more flag for the extender (repeat for more)"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    args.drain_nodes = [int(n) for n in args.drain_nodes.split(",") if n]
    args.drain_phases = parse_list(args.drain_phases, [key for key, _ in DRAIN_PHASES], "drain phases")
    workloads = parse_list(args.workloads, ("drain", "cpu-mix", "gpu-gangs", "kod2"), "workloads")
    keys = parse_list(args.schedulers, tuple(SCHEDULERS), "schedulers")
    if "coscheduling" in keys and args.coscheduling_binary is None:
        print("# coscheduling: skipped, no --coscheduling-binary given", flush=True)
        keys.remove("coscheduling")
    elif "coscheduling" in keys and not args.coscheduling_binary.is_file():
        raise SystemExit(f"--coscheduling-binary {args.coscheduling_binary}: no such file")
    print(f"# {VOLCANO}", flush=True)
    schedulers = [SCHEDULERS[key] for key in keys]
    seeds = list(range(args.seed, args.seed + args.seeds))
    plane = LocalControlPlane(
        build_control_plane(),
        with_operator=False,
        with_extender=False,
        with_scheduler=False,
        scheduler_qps=args.qps,
        scheduler_burst=args.burst,
        workload_api=True,
        extender_args=tuple(args.extender_arg),
    )
    with plane:
        print(
            f"# {plane.kubernetes_version()}; schedulers {', '.join(keys)}; seeds {seeds}; client qps={args.qps:g} "
            f"burst={args.burst}; load average at start {os.getloadavg()[0]:.2f}; run dir {plane.run_dir}",
            flush=True,
        )
        lineup = Lineup(plane, args.coscheduling_binary)
        drains: list[DrainRow] = []
        runs: list[RunSummary] = []
        loads: list[float] = []
        sampler = LoadSampler(loads)
        sampler.start()
        try:
            for key in workloads:
                if key == "drain":
                    run_drains(plane, lineup, schedulers, args, seeds, drains)
                else:
                    run_contended(plane, lineup, schedulers, key, args, seeds, runs)
        finally:
            sampler.stop()
            if drains:
                print_drains(drains)
            if runs:
                print_contended(runs)
            if args.json is not None:
                write_records(args.json, drains, runs)
                print(f"# {len(drains) + len(runs)} records written to {args.json}", flush=True)
            if loads:
                mean, peak = statistics.fmean(loads), max(loads)
                print(f"\n# load average (1 min) during the run: mean {mean:.2f}, max {peak:.2f}")


class LoadSampler:
    """The 1-minute load average every 10 s, so a report says how busy the machine was."""

    def __init__(self, into: list[float], every_s: float = 10.0) -> None:
        self.into = into
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.into.append(os.getloadavg()[0])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


if __name__ == "__main__":
    main()
