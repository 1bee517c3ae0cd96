"""The peer benchmark's drains: the throughput benchmark's drain against each scheduler of the line-up.

`run_drains` makes each count of drain nodes, then per seed and scheduler runs the chosen phases (plain pods,
gangs of 8, one 64-pod gang) through `PeerBench`, the throughput benchmark's `Bench` pointed at the scheduler
that runs now; for a scheduler with Kubernetes' own gangs each gang is a `scheduling.k8s.io` PodGroup of all
its pods instead of scheduler-plugins' one, its members joined to it (plain pods stay plain). Around each
phase `drain_costs` reads the running totals of kube-scheduler's and the extender's Prometheus metrics
(`metric_sums`), so a `DrainRow` holds the phase's result and its costs per pod bound.
"""

from __future__ import annotations

import argparse
import os
import re
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import orjson

from benchmarks.peer_lineup import SCHEDULERS, Lineup, Scheduler
from benchmarks.peer_workloads import join_native_group, native_podgroup, native_podgroups_path, set_nodes
from benchmarks.scheduler_throughput import Bench, Phase, Result
from extender.devcluster import UNVERIFIED_TLS, LocalControlPlane, kwok_node
from tests.e2e.bulk import Api

IN_TREE_POINTS = ("PreFilter", "Filter", "PostFilter", "PreScore", "Score", "Reserve", "Permit")
"""kube-scheduler's extension points whose plugin time counts as its own work in a scheduling attempt."""
DRAIN_NODE_CPU, DRAIN_NODE_MEMORY, DRAIN_NODE_PODS = "32", "128Gi", 250
"""Each drain node: as the throughput benchmark's."""


DRAIN_PHASES = (("plain", 0), ("gang8", 8), ("gang64", 64))
EXTENDER_GANGS_TIMEOUT_S = 300.0
"""Longest wait for the extender to make every native gang of a drain before the scheduler is resumed."""


class PeerBench(Bench):
    """The throughput benchmark's drain, against whichever scheduler of the line-up runs now."""

    scheduler: Scheduler = SCHEDULERS["ours"]

    def scheduler_name(self, phase: Phase) -> str:
        return self.scheduler.pod_scheduler

    def job_object(self, name: str, workers: int, scheduler: str) -> dict[str, Any]:
        """For gangs the extender makes, the TFJob names the scheduler in its templates, so its webhook names
        the gang (after the TFJob) and its loops make the Workload and PodGroup."""
        body = super().job_object(name, workers, scheduler)
        if self.scheduler.gangs_by_extender:
            for replica in body["spec"]["tfReplicaSpecs"].values():
                replica["template"]["spec"]["schedulerName"] = scheduler
        return body

    def before_release(self, namespace: str, gangs: int) -> None:
        """For gangs the extender makes: until it has made every one (how long that took is printed)."""
        if not self.scheduler.gangs_by_extender or not gangs:
            return
        started = time.monotonic()
        path = native_podgroups_path(self.plane.workload_api_version, namespace)
        while len(self.api.call("GET", path)["items"]) < gangs:
            if time.monotonic() - started > EXTENDER_GANGS_TIMEOUT_S:
                raise RuntimeError(f"the extender made too few of {gangs} native gangs in {namespace}")
            time.sleep(0.2)
        print(f"# the extender made {gangs} native gangs within {time.monotonic() - started:.1f}s", flush=True)

    def create_group(self, namespace: str, job: str, size: int) -> None:
        if self.scheduler.gangs_by_extender:
            return
        if not self.scheduler.native_gangs:
            super().create_group(namespace, job, size)
            return
        version = self.plane.workload_api_version
        self.api.call(
            "POST", native_podgroups_path(version, namespace), orjson.dumps(native_podgroup(version, job, size))
        )

    def member(self, pod: dict[str, Any], job: str) -> dict[str, Any]:
        if self.scheduler.native_gangs:
            join_native_group(pod["spec"], job)
        return pod

    def pids(self, phase: Phase) -> dict[str, tuple[int, ...]]:
        extender = {"extender": (self.plane.pid("extender"),)} if self.scheduler.with_extender else {}
        return {
            "sched": (self.plane.pid(self.scheduler.process),),
            "bench": (os.getpid(),),
            **extender,
            **{name: (self.plane.pid(name),) for name in ("kube-apiserver", "etcd", "kwok")},
        }


SCHEDULER_SUMS = {
    "algorithm": ("scheduler_scheduling_algorithm_duration_seconds_sum", {}),
    "group_cycle": ("scheduler_podgroup_scheduling_attempt_duration_seconds_sum", {}),
    "patch": ("rest_client_request_duration_seconds_sum", {"verb": "PATCH"}),
    "patch_calls": ("rest_client_request_duration_seconds_count", {"verb": "PATCH"}),
    **{
        point: ("scheduler_framework_extension_point_duration_seconds_sum", {"extension_point": point})
        for point in IN_TREE_POINTS
    },
}
"""What is read from the kube-scheduler under test: the time its scheduling algorithm took (in-tree plugins and
extender calls), the time of each extension point its plugins ran (the extender is none of them), the time of its
PodGroup cycles (all members' algorithms and the PodGroup status PATCH each cycle ends with, in the scheduling
loop), and its PATCH requests (in a drain where everything fits, only those PodGroup status PATCHes)."""
EXTENDER_SUMS = {
    "filter_s": ("tfjob_extender_verb_duration_seconds_sum", {"verb": "filter"}),
    "prioritize_s": ("tfjob_extender_verb_duration_seconds_sum", {"verb": "prioritize"}),
    "filter_calls": ("tfjob_extender_verb_duration_seconds_count", {"verb": "filter"}),
    "prioritize_calls": ("tfjob_extender_verb_duration_seconds_count", {"verb": "prioritize"}),
}


def metric_sums(text: str, wanted: dict[str, tuple[str, dict[str, str]]]) -> dict[str, float]:
    """Key → the sum over the series of `text` (Prometheus text format) with that name and those labels."""
    sums = dict.fromkeys(wanted, 0.0)
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        name, _, rest = line.partition("{")
        labels = dict(re.findall(r'(\w+)="([^"]*)"', rest[: rest.rfind("}")])) if rest else {}
        if not rest:
            name = line.split(" ", 1)[0]
        for key, (metric, selector) in wanted.items():
            if name == metric and all(labels.get(k) == v for k, v in selector.items()):
                sums[key] += float(line.rsplit(" ", 1)[1])
    return sums


def read_metrics(url: str, token: str = "") -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=10, context=UNVERIFIED_TLS if token else None) as response:
        return str(response.read().decode())


@dataclass
class DrainRow:
    nodes: int
    scheduler: str
    phase: str
    seed: int
    result: Result
    costs: dict[str, float] = field(default_factory=dict)
    """Per pod bound: kube-scheduler's algorithm and in-tree plugin milliseconds, the extender's verb
    milliseconds and calls (`metric_sums` over the phase)."""


def run_drains(
    plane: LocalControlPlane,
    lineup: Lineup,
    schedulers: list[Scheduler],
    args: argparse.Namespace,
    seeds: list[int],
    rows: list[DrainRow],
) -> None:
    """Every drain of the line-up, appended to `rows` as it ends (an interrupted run still reports them)."""
    api = Api(plane.api_port, plane.token)
    bench = PeerBench(plane, args)
    try:
        for count in args.drain_nodes:
            nodes = [
                kwok_node(f"drain-{i:05d}", cpu=DRAIN_NODE_CPU, memory=DRAIN_NODE_MEMORY, pods=DRAIN_NODE_PODS)
                for i in range(count)
            ]
            set_nodes(api, nodes, args.threads)
            time.sleep(args.settle_s)
            for seed in seeds:
                for scheduler in schedulers:
                    bench.scheduler = scheduler
                    with lineup.running(scheduler):
                        time.sleep(args.settle_s)
                        for phase_key, size in DRAIN_PHASES:
                            if phase_key not in args.drain_phases:
                                continue
                            phase = Phase(
                                f"{scheduler.key}-{phase_key}",
                                f"{count}n {scheduler.key} {phase_key}",
                                scheduler.key,
                                size,
                            )
                            before = drain_costs(plane, lineup, scheduler)
                            result = bench.run(phase, "drain")
                            after = drain_costs(plane, lineup, scheduler)
                            costs = {
                                key: (after[key] - before[key]) / max(1, result.bound) * (1 if "calls" in key else 1000)
                                for key in after
                            }
                            rows.append(DrainRow(count, scheduler.key, phase_key, seed, result, costs))
    finally:
        api.close()
        bench.api.close()


def drain_costs(plane: LocalControlPlane, lineup: Lineup, scheduler: Scheduler) -> dict[str, float]:
    """The running totals `DrainRow.costs` is the difference of (the clean-up between phases calls no verb
    and schedules nothing)."""
    sums = metric_sums(read_metrics(f"https://127.0.0.1:{lineup.port}/metrics", plane.token), SCHEDULER_SUMS)
    totals = {
        "sched_algorithm_ms": sums["algorithm"],
        "sched_in_tree_ms": sum(sums[p] for p in IN_TREE_POINTS),
        "group_cycle_ms": sums["group_cycle"],
        "patch_ms": sums["patch"],
        "patch_calls": sums["patch_calls"],
    }
    if scheduler.with_extender:
        extender = metric_sums(read_metrics(f"{plane.observe_url}/metrics"), EXTENDER_SUMS)
        totals.update(
            {
                "extender_filter_ms": extender["filter_s"],
                "extender_prioritize_ms": extender["prioritize_s"],
                "filter_calls": extender["filter_calls"],
                "prioritize_calls": extender["prioritize_calls"],
            }
        )
    return totals
