"""`tfjob-extender serve`: the extender's HTTP service. `serve` checks who can reach the ports, builds the model
and the service, wires the model's source — a snapshot file (`offline_wiring`, with loops only in shadow mode)
or the API server (`cluster_wiring`: informers, the plan publisher, the loops this process runs) — and runs the
verb listener (the extender's own HTTP server, `verb_listener`) and the optional read-only observe listener
(uvicorn, `observe_config`) together on one event loop (`listener_apps`: each behind its own TLS and token
checks, `--tls-*`/`--auth-*` and `--observe-*`). `settle_heap` moves a loaded model out of
the cyclic collector's reach; the benchmarks call it too.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from extender.cli.exposure import exposure_checked
from extender.cli.logs import UVICORN_LOG_CONFIG
from extender.cli.loop_process import Loops, make_loops
from extender.config import Settings
from extender.state.dump_format import SnapshotFileError
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState

if TYPE_CHECKING:
    import uvicorn
    from fastapi import APIRouter
    from starlette.types import ASGIApp

    from extender.api.auth import Reviewer
    from extender.api.edge import EdgeServer
    from extender.api.verbs import Service
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop


@dataclass(slots=True)
class Wiring:
    """What the model's source adds to the service: lifespan hooks, extra routers, the token reviewer."""

    service: Service
    start: Callable[[], None] = field(default=lambda: None)
    stop: Callable[[], None] = field(default=lambda: None)
    routers: list[APIRouter] = field(default_factory=list)
    reviewer: Reviewer | None = None


def serve(settings: Settings, log_level: str) -> int:
    from extender.api.app import make_service
    from extender.api.observe import serve_together

    if not exposure_checked(settings):
        return 2
    sys.setswitchinterval(settings.switch_interval_s)
    state = ClusterState(settings.policy)
    service = make_service(settings, state, time.time)
    if settings.cluster_snapshot is not None:
        wiring = offline_wiring(settings, state, service)
        if wiring is None:
            return 2
    else:
        wiring = cluster_wiring(settings, state, service)
    try:
        app, observe_app = listener_apps(settings, wiring)
    except ValueError as error:
        print(f"tfjob-extender: {error}", file=sys.stderr)
        return 2
    return serve_together(verb_listener(settings, log_level, app), observe_config(settings, log_level, observe_app))


def listener_apps(settings: Settings, wiring: Wiring) -> tuple[ASGIApp, ASGIApp | None]:
    """The verb listener's app (verbs, probes, debug routes) behind `--auth-*`, and with an observe port the
    observe listener's (probes, `/metrics`; with `--observe-debug` the debug routes and the page, behind
    `--observe-auth-*`). A `ValueError` says why they cannot be built."""
    from extender.api.app import create_app
    from extender.api.auth import guarded
    from extender.api.observe import create_observe_app, guarded_observe_app

    app = guarded(
        create_app(wiring.service, on_start=wiring.start, on_stop=wiring.stop, routers=wiring.routers),
        settings.auth,
        wiring.reviewer,
    )
    if not settings.observe_port:
        return app, None
    observe_app = create_observe_app(wiring.service, wiring.routers, debug_routes=settings.observe_debug)
    return app, guarded_observe_app(observe_app, settings, wiring.reviewer)


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
        wiring.start, wiring.stop = shadow_loops(settings, state, service, wiring.routers)
    return wiring


def cluster_wiring(settings: Settings, state: ClusterState, service: Service) -> Wiring:
    """Informers feeding `state`, the plan publisher, and the loops this process runs."""
    from extender.k8s.client import make_api_client, token_reviewer
    from extender.k8s.informer import Informers
    from extender.k8s.plans import PlanPublisher

    api_client = make_api_client(settings.kubeconfig)
    reviewer = token_reviewer(api_client)
    informers = Informers(api_client, state)
    publisher = PlanPublisher(api_client)
    service = replace(service, publish=publisher.publish)
    wanted = Loops(preemption=settings.with_loops, scaler=settings.with_scaler)
    loops = make_loops(settings, state, api_client, service.metrics.registry, publisher, wanted)
    service.loops.scaler, service.loops.preemption = loops.scaler, loops.preemption
    service.probes.informer_problems = informers.problems
    service.probes.lease = loops.lease.status if loops.lease is not None else None

    def start() -> None:
        publisher.start()
        informers.start()
        loops.start()
        threading.Thread(target=settle_once_synced, args=(state,), name="settle-heap", daemon=True).start()

    def stop() -> None:
        loops.stop()
        informers.stop()
        publisher.stop()

    return Wiring(service, start, stop, loops.routers(), reviewer)


def verb_listener(settings: Settings, log_level: str, app: ASGIApp) -> EdgeServer:
    """The verb listener: the extender's own HTTP server (`extender.api.edge`) on `--host`/`--port`, with
    the limits of `settings` and the TLS `--tls-*` ask for; `app` carries the `--auth-*` token checks."""
    from extender.api.auth import tls_context
    from extender.api.edge import EdgeServer

    return EdgeServer(
        app,
        settings,
        host=settings.host,
        port=settings.port,
        tls=tls_context(settings.auth),
        access_log=log_level == "debug",
    )


def observe_config(settings: Settings, log_level: str, observe_app: ASGIApp | None) -> uvicorn.Config | None:
    """With an observe port, the observe listener's uvicorn configuration (its own TLS); uvicorn's loggers
    write through the process's one handler."""
    import uvicorn

    from extender.api.auth import uvicorn_tls_options

    if observe_app is None:
        return None
    return uvicorn.Config(
        observe_app,
        host=settings.observe_host,
        port=settings.observe_port,
        http="httptools",
        loop="uvloop",
        lifespan="off",
        log_level=log_level,
        log_config=UVICORN_LOG_CONFIG,
        access_log=log_level == "debug",
        **uvicorn_tls_options(settings.observe_auth),
    )


def shadow_loops(
    settings: Settings, state: ClusterState, service: Service, routers: list[APIRouter]
) -> tuple[Callable[[], None], Callable[[], None]]:
    """The preemption loop and (with --with-scaler) the scaler in shadow mode on an offline model: they plan
    and show what they would do; the actuator they are given is never called."""
    from extender.api.loop_metrics import export_preemption_metrics
    from extender.api.scaler import export_scaler_metrics, make_scaler_router
    from extender.loops.actuator import RecordingActuator
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop

    preemption = PreemptionLoop(
        state, RecordingActuator(), settings.policy, time.time, settings.preemption_loop, dry_run=True
    )
    export_preemption_metrics(service.metrics.registry, preemption)
    service.loops.preemption = preemption
    loops: list[PreemptionLoop | ScalerLoop] = [preemption]
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

    return start, stop


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
