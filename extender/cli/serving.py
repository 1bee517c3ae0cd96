"""`tfjob-extender serve`: the extender's HTTP service. `serve` checks who can reach the ports, builds the model
and the service, the parts that feed and act on it — from a snapshot file (`offline_wiring`, with loops only in
shadow mode) or from the API server (`cluster_wiring`: the plan publisher, informers, the loops this process
runs) — and its listeners: the verb listener (verbs and probes) and, with `--observe-port`, the read-only
observe listener (`extender.api.observe`), each behind its own TLS and token checks (`--tls-*`/`--auth-*` and
`--observe-*`). `extender.cli.runtime` runs them. `settle_heap` moves a loaded model out of the cyclic
collector's reach; the benchmarks call it too.
"""

from __future__ import annotations

import gc
import logging
import ssl
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from extender.cli.exposure import exposure_checked
from extender.cli.loop_process import Loops, make_loops
from extender.config import Settings
from extender.state.dump_format import SnapshotFileError
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState

if TYPE_CHECKING:
    from fastapi import APIRouter

    from extender.api.auth import Reviewer
    from extender.api.edge.server import EdgeServer
    from extender.api.verbs import Service
    from extender.cli.runtime import Part
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop


@dataclass(slots=True)
class Wiring:
    """What the model's source adds to the service: the parts to run, extra routers, the token reviewer."""

    service: Service
    parts: list[Part] = field(default_factory=list)
    routers: list[APIRouter] = field(default_factory=list)
    reviewer: Reviewer | None = None
    listeners: list[EdgeServer] = field(default_factory=list)
    """Listeners of the parts beyond the verbs and the observe routes (the admission webhook's)."""


def serve(settings: Settings, log_level: str) -> int:
    from extender.api.app import make_service
    from extender.cli.runtime import Runtime

    if not exposure_checked(settings):
        return 2
    sys.setswitchinterval(settings.switch_interval_s)
    state = ClusterState(settings.policy)
    service = make_service(settings, state, time.time)
    try:
        wiring = (
            offline_wiring(settings, state, service)
            if settings.cluster_snapshot is not None
            else cluster_wiring(settings, state, service)
        )
        if wiring is None:
            return 2
        served = listeners(settings, wiring, access_log=log_level == "debug")
        runtime = Runtime([*wiring.parts, *tls_file_watches(settings, served)], served)
    except ValueError as error:
        print(f"tfjob-extender: {error}", file=sys.stderr)
        return 2
    if settings.observe_port and settings.observe_debug:
        runtime.parts.append(sampler(wiring.service))
    return runtime.run()


def listeners(settings: Settings, wiring: Wiring, *, access_log: bool) -> list[EdgeServer]:
    """The verb listener behind `--tls-*`/`--auth-*`, and with an observe port the observe listener (probes,
    `/metrics`; with `--observe-debug` the debug routes and the page, behind `--observe-*`). A `ValueError`
    says why they cannot be built."""
    from extender.api.edge.app_responder import AppResponder
    from extender.api.observe import create_observe_app
    from extender.cli.runtime import observe_listener, verb_listener

    served = [verb_listener(wiring.service, settings, wiring.reviewer, access_log=access_log), *wiring.listeners]
    if settings.observe_port:
        app = create_observe_app(wiring.service, wiring.routers, debug_routes=settings.observe_debug)
        served.append(
            observe_listener(
                AppResponder(app),
                settings,
                wiring.reviewer,
                host=settings.observe_host,
                port=settings.observe_port,
                access_log=access_log,
            )
        )
    return served


def tls_file_watches(settings: Settings, served: list[EdgeServer]) -> list[Part]:
    """For the verb listener, and the observe listener if any, that serve TLS from files: a part reading
    those files again when they change (`api.tls_files`)."""
    from extender.api.tls_files import TlsFiles
    from extender.cli.runtime import Part

    watched = [(served[0], settings.auth)]
    if settings.observe_port:
        watched.append((served[-1], settings.observe_auth))
    parts = []
    for listener, auth in watched:
        if auth.tls_cert_file is None:
            continue

        def serve_context(context: ssl.SSLContext, listener: EdgeServer = listener) -> None:
            listener.tls = context

        files = TlsFiles(auth, serve_context)
        parts.append(Part(f"TLS files of the {listener.name}", files.start, files.stop))
    return parts


def sampler(service: Service) -> Part:
    """The page's utilisation sampler over `service`'s model (a thread)."""
    from extender.cli.runtime import Part

    return Part(
        "utilisation sampler",
        lambda: service.utilisation.start(service.state.snapshot, service.clock),
        service.utilisation.stop,
    )


def offline_wiring(settings: Settings, state: ClusterState, service: Service) -> Wiring | None:
    """Load the snapshot file into `state` (None: it cannot be served; the reason is printed)."""
    if settings.with_scaler and not settings.dry_run:
        print("tfjob-extender: --with-scaler on a snapshot file needs --dry-run (nothing to act on)", file=sys.stderr)
        return None
    assert settings.cluster_snapshot is not None
    try:
        count = load_snapshot_file(state, settings.cluster_snapshot)
    except SnapshotFileError as error:
        print(f"tfjob-extender: cannot load the cluster snapshot: {error}", file=sys.stderr)
        return None
    logging.getLogger("extender").info("loaded %d objects from %s", count, settings.cluster_snapshot)
    settle_heap()
    wiring = Wiring(service)
    if settings.dry_run:
        wiring.parts.append(shadow_loops(settings, state, service, wiring.routers))
    return wiring


def cluster_wiring(settings: Settings, state: ClusterState, service: Service) -> Wiring:
    """Informers feeding `state`, the plan publisher, and the loops this process runs (a `ValueError` says why
    they cannot be built)."""
    from extender.cli.runtime import Part
    from extender.k8s.client import ApiReviews, make_api_client
    from extender.k8s.informer import Informers
    from extender.k8s.plans import PlanPublisher

    api_client = make_api_client(settings.kubeconfig)
    reviewer = ApiReviews(api_client)
    informers = Informers(api_client, state)
    publisher = PlanPublisher(api_client)
    service = replace(service, publish=publisher.publish)
    wanted = Loops(preemption=settings.with_loops, scaler=settings.with_scaler)
    loops = make_loops(settings, state, api_client, service.metrics.registry, publisher, wanted)
    service.loops.scaler, service.loops.preemption = loops.scaler, loops.preemption
    service.loops.forecast = loops.forecast
    service.probes.informer_problems = informers.problems
    service.probes.lease = loops.lease.status if loops.lease is not None else None
    loops.probes(service.probes)

    settler = threading.Thread(target=settle_once_synced, args=(state,), name="settle-heap", daemon=True)
    parts = [
        Part("plan publisher", publisher.start, publisher.stop),
        Part("informers", informers.start, informers.stop),
        Part("loops", loops.start, loops.stop),
        Part("heap settler", settler.start, lambda: None),
    ]
    return Wiring(service, parts, loops.routers(), reviewer, loops.listeners())


def shadow_loops(settings: Settings, state: ClusterState, service: Service, routers: list[APIRouter]) -> Part:
    """The preemption loop and (with --with-scaler) the scaler in shadow mode on an offline model: they plan
    and show what they would do; the actuator they are given is never called. The start-time forecast runs
    beside them (it writes no Event here)."""
    from extender.api.loop_metrics import export_forecast_metrics, export_preemption_metrics
    from extender.api.scaler import export_scaler_metrics, make_scaler_router
    from extender.cli.runtime import Part
    from extender.loops.actuator import RecordingActuator
    from extender.loops.forecast_loop import ForecastLoop
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop

    preemption = PreemptionLoop(
        state, RecordingActuator(), settings.policy, time.time, settings.preemption_loop, dry_run=True
    )
    export_preemption_metrics(service.metrics.registry, preemption)
    service.loops.preemption = preemption
    forecast = ForecastLoop(
        state, settings.policy, lambda: preemption.suspensions.clock, time.time, settings.start_forecast
    )
    export_forecast_metrics(service.metrics.registry, forecast)
    service.loops.forecast = forecast
    loops: list[PreemptionLoop | ScalerLoop | ForecastLoop] = [preemption, forecast]
    if settings.with_scaler:
        scaler = ScalerLoop(
            state,
            RecordingActuator(),
            settings.policy,
            time.time,
            loop_settings=settings.scaler_loop,
            dry_run=True,
        )
        routers.append(make_scaler_router(scaler, time.time))
        export_scaler_metrics(service.metrics.registry, scaler)
        service.loops.scaler = scaler
        loops.append(scaler)

    def start() -> None:
        for loop in loops:
            loop.start()

    def stop() -> None:
        for loop in loops:
            loop.stop()

    return Part("shadow loops", start, stop)


def settle_heap() -> None:
    """Move the loaded model out of the cyclic collector's reach: a full collection over a large model
    would otherwise stall a scheduling call for milliseconds."""
    gc.collect()
    gc.freeze()


def settle_once_synced(state: ClusterState, poll_s: float = 0.5) -> None:
    """Settle the heap once the informers' first lists are in the model."""
    while not state.is_synced():
        time.sleep(poll_s)
    settle_heap()
