"""The peer benchmark's line-up: which schedulers run, and how each is started and stopped.

Each `Scheduler` names the `schedulerName` its pods carry, its kube-scheduler's process in the control plane,
and whether its gangs are Kubernetes' own (`native_gangs`). `Lineup` starts one of them at a time on the shared
`LocalControlPlane` — the extender (its verbs on the plane's `extender_port`, its `/metrics` on
`observe_port`) and kube-scheduler with the repo's profile for `ours`, the Coscheduling build with
scheduler-plugins' profile for `coscheduling`, the default profile for `default`, and for `native` the default
profile under a name of its own with the feature gates of the plane's Workload API (`GenericWorkload` in
1.37, which adds the GangScheduling plugin to the default profile and schedules a PodGroup in one cycle) —
and for `ours-native` the extender in native mode (`--native-gangs on`: its admission webhook, registered
for the run, names each TFJob's gang in its replica templates, and its loops make the job's Workload and
PodGroup) beside kube-scheduler with the repo's profile and the Workload API's gates — all from the plane's
own scheduler settings, so every scheduler gets the same client rate limit and `percentageOfNodesToScore`,
and stops it (and the extender, and the webhook's registration) when the run leaves it. Only `native` and
`ours-native` run with feature gates; the others run without, as they would on a cluster where the Workload
API is off.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extender.devcluster import LocalControlPlane
from extender.devcluster.objects import SCHEDULER_NAME
from extender.devcluster.processes import free_port
from extender.devcluster.webhook import CONFIGURATIONS, WEBHOOK_CONFIGURATION, register_webhook

VOLCANO = (
    "Volcano: left out — the Go module proxy answers 403 'This module version is not available' for "
    "volcano.sh/volcano v1.13.0 and v1.12.2, so its cmd/scheduler cannot be built here"
)
METRICS_WITHOUT_AUTH = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*"
"""kube-scheduler's /metrics and its Go profiles (`/debug/pprof/`) answer the benchmark without a token review
(it listens on 127.0.0.1 only)."""


@dataclass(frozen=True)
class Scheduler:
    key: str
    pod_scheduler: str
    """The `schedulerName` its pods carry."""
    process: str
    """Its kube-scheduler's process name in the control plane."""
    native_gangs: bool = False
    """Its gangs are Kubernetes' own: a `scheduling.k8s.io` PodGroup per job, made before the job's pods, which
    join it by `spec.schedulingGroup.podGroupName`; its kube-scheduler runs with the Workload API's gates."""
    with_extender: bool = False
    """kube-scheduler runs the repo's profile, calling the extender."""
    gangs_by_extender: bool = False
    """Its native gangs are the extender's: its webhook names each TFJob's gang as the TFJob is created and its
    loops make the Workload and PodGroup (the benchmark makes none); otherwise the benchmark makes them, as an
    integrating controller would."""


SCHEDULERS = {
    "ours": Scheduler("ours", SCHEDULER_NAME, "kube-scheduler", with_extender=True),
    "ours-native": Scheduler(
        "ours-native", SCHEDULER_NAME, "kube-scheduler", native_gangs=True, with_extender=True, gangs_by_extender=True
    ),
    "coscheduling": Scheduler("coscheduling", "scheduler-plugins-scheduler", "cosched-scheduler"),
    "default": Scheduler("default", "default-scheduler", "default-scheduler"),
    "native": Scheduler("native", "native-gang-scheduler", "native-scheduler", native_gangs=True),
}
COSCHEDULING_PROFILE: dict[str, Any] = {
    "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "PrioritySort"}]}},
    "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}],
}
"""As scheduler-plugins' Helm chart (`as-a-second-scheduler`) configures the plugin."""


OURS_ONLY = ("extenders", "podInitialBackoffSeconds", "podMaxBackoffSeconds")
"""What the repo's configuration sets for ours alone: a peer runs the stock profile (without our plugin
settings, so it keeps kube-scheduler's own PodGroup preemption) and kube-scheduler's default pod backoff."""


class Lineup:
    """Starts one scheduler under test at a time on the control plane, and stops it."""

    def __init__(self, plane: LocalControlPlane, coscheduling_binary: Path | None) -> None:
        self.plane = plane
        self.coscheduling_binary = coscheduling_binary
        self.port = 0
        """The secure port of the kube-scheduler under test (its /metrics), while one runs."""

    def settings(self, scheduler: Scheduler) -> dict[str, Any]:
        settings = self.plane.scheduler_settings()
        if scheduler.with_extender:
            return settings
        stock = {key: value for key, value in settings["profiles"][0].items() if key != "plugins"}
        profile = {**stock, "schedulerName": scheduler.pod_scheduler}
        if scheduler.key == "coscheduling":
            profile.update(COSCHEDULING_PROFILE)
        return {**{key: value for key, value in settings.items() if key not in OURS_ONLY}, "profiles": [profile]}

    def feature_gates(self, scheduler: Scheduler) -> tuple[str, ...]:
        """The gates the scheduler's kube-scheduler runs with: the Workload API's for native gangs, else none."""
        if not scheduler.native_gangs:
            return ()
        if not self.plane.feature_gates:
            raise RuntimeError(f"{scheduler.key} needs a control plane serving the Workload API (workload_api=True)")
        return self.plane.feature_gates

    def fresh_extender_ports(self) -> None:
        """New ports for the extender's listeners before each start: a port the last extender let go may have
        been taken since as the local port of some client's connection, which would refuse the bind."""
        self.plane.extender_port, self.plane.observe_port, self.plane.webhook_port = (free_port() for _ in range(3))

    @contextlib.contextmanager
    def running(self, scheduler: Scheduler) -> Iterator[None]:
        binary = self.coscheduling_binary if scheduler.key == "coscheduling" else None
        if scheduler.with_extender:
            self.fresh_extender_ports()
        if scheduler.gangs_by_extender:
            register_webhook(self.plane, self.plane.webhook_port, scheduler.pod_scheduler)
        if scheduler.with_extender:
            self.plane.start_extender(native_gangs=scheduler.gangs_by_extender)
        try:
            self.port = self.plane.start_scheduler(
                scheduler.process,
                self.settings(scheduler),
                binary=binary,
                extra_args=(METRICS_WITHOUT_AUTH,),
                feature_gates=self.feature_gates(scheduler),
            )
            try:
                yield
            finally:
                self.plane.stop_process(scheduler.process)
        finally:
            if scheduler.with_extender:
                self.plane.stop_extender()
            if scheduler.gangs_by_extender:
                self.plane.delete(f"{CONFIGURATIONS}/{WEBHOOK_CONFIGURATION}")
