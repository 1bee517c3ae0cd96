"""`tfjob-extender loops` and `tfjob-extender scaler`: the preemption loop and the scaler in a process of their
own, on a model fed by their own informers, acting through the Kubernetes actuator while this process holds the
Lease. `make_loops` builds the wanted loops; `serve` uses it too when the loops run inside the extender's
process.

The process's one listener (`--host`/`--port`) is an observe listener over a service made from its own model
with its loops attached (`extender.api.observe`): `/healthz`, `/readyz` — ready once every informer has
listed its kind and the Lease has been answered, leader or standby — and `/metrics` with the loops' counts;
with `--observe-debug` also `/debug/*` (the shadow plans of `--dry-run`, `/debug/scaler`) and `/ui`, behind
`--observe-auth-*`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from extender.cli.exposure import exposure_checked
from extender.config import Settings
from extender.state.store import ClusterState

if TYPE_CHECKING:
    from fastapi import APIRouter
    from kubernetes.client import ApiClient
    from prometheus_client import CollectorRegistry

    from extender.api.edge.server import EdgeServer
    from extender.api.readiness import Probes
    from extender.cli.native_wiring import NativeGangParts
    from extender.k8s.lease import KubeLease
    from extender.k8s.plans import PlanPublisher
    from extender.k8s.verbs_tls import VerbsCertificateKeeper
    from extender.loops.actuator import Actuator
    from extender.loops.forecast_loop import ForecastLoop
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop


@dataclass(frozen=True, slots=True)
class Loops:
    """Which loops a process runs."""

    preemption: bool
    scaler: bool


@dataclass(frozen=True, slots=True)
class RunningLoops:
    preemption: PreemptionLoop | None
    scaler: ScalerLoop | None
    lease: KubeLease | None = None
    """The Lease the loops take turns on (None when no loop runs)."""
    native: NativeGangParts | None = None
    """The native gangs' controller and webhook (with the preemption loop, unless `native_gangs` is off)."""
    forecast: ForecastLoop | None = None
    """The start-time forecast (with the preemption loop, whose run clock it reads)."""
    verbs_certificates: VerbsCertificateKeeper | None = None
    """The keeper of the verbs' certificates (with `--verbs-tls-secret`), in every replica."""

    def start(self) -> None:
        for loop in (self.verbs_certificates, self.preemption, self.scaler, self.native, self.forecast):
            if loop is not None:
                loop.start()

    def stop(self) -> None:
        for loop in (self.forecast, self.native, self.scaler, self.preemption, self.verbs_certificates):
            if loop is not None:
                loop.stop()

    def routers(self) -> list[APIRouter]:
        from extender.api.native_gangs import make_native_gangs_router
        from extender.api.scaler import make_scaler_router

        routers = [make_scaler_router(self.scaler, time.time)] if self.scaler is not None else []
        if self.native is not None:
            routers.append(make_native_gangs_router(self.native.view))
        return routers

    def listeners(self) -> list[EdgeServer]:
        """The admission webhook's listener, when this process serves it."""
        return [self.native.listener] if self.native is not None and self.native.listener is not None else []

    def probes(self, probes: Probes) -> None:
        """Show the native gangs' summary in `/readyz`."""
        from extender.api.native_gangs import native_gangs_summary

        if self.native is not None:
            view = self.native.view
            probes.native_gangs = lambda: native_gangs_summary(view)


def make_loops(
    settings: Settings,
    state: ClusterState,
    api_client: ApiClient,
    registry: CollectorRegistry,
    publisher: PlanPublisher,
    wanted: Loops,
) -> RunningLoops:
    """The wanted loops over `state`, acting through the Kubernetes actuator while this instance holds the
    Lease (one lease for both: one instance acts cluster-wide), their counts exported on `registry`."""
    from extender.api.loop_metrics import export_forecast_metrics, export_preemption_metrics
    from extender.api.scaler import export_scaler_metrics
    from extender.cli.native_wiring import make_native_gangs
    from extender.k8s.actuator import KubeActuator
    from extender.k8s.lease import KubeLease
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop

    lease = KubeLease(
        api_client,
        namespace=settings.leader_election.lease_namespace,
        name=settings.leader_election.lease_name,
        identity=settings.leader_election.identity,
        duration_s=settings.leader_election.lease_duration_s,
        retry_period_s=settings.leader_election.lease_retry_period_s,
    )
    actuator = KubeActuator(api_client)
    preemption = (
        PreemptionLoop(
            state,
            actuator,
            settings.policy,
            time.time,
            settings.preemption_loop,
            dry_run=settings.dry_run,
            leader=lease,
            publish=publisher.publish,
        )
        if wanted.preemption
        else None
    )
    scaler = (
        ScalerLoop(
            state,
            actuator,
            settings.policy,
            time.time,
            leader=lease,
            loop_settings=settings.scaler_loop,
            dry_run=settings.dry_run,
        )
        if wanted.scaler
        else None
    )
    if preemption is not None:
        export_preemption_metrics(registry, preemption)
    if scaler is not None:
        export_scaler_metrics(registry, scaler)
    native = make_native_gangs(settings, state, api_client, lease) if wanted.preemption else None
    forecast = make_forecast_loop(settings, state, preemption, actuator) if preemption is not None else None
    if forecast is not None:
        export_forecast_metrics(registry, forecast)
    held = lease if preemption is not None or scaler is not None else None
    return RunningLoops(preemption, scaler, held, native, forecast, make_verbs_certificates(settings, api_client))


def make_verbs_certificates(settings: Settings, api_client: ApiClient) -> VerbsCertificateKeeper | None:
    """The keeper of the verbs' certificates, when `--verbs-tls-secret` names where to keep them."""
    from extender.k8s.verbs_tls import VerbsCertificateKeeper, VerbsTlsSource

    verbs = settings.verbs_tls
    if not verbs.secret:
        return None
    source = VerbsTlsSource(verbs.namespace, verbs.secret, verbs.service_hosts, verbs.certificate_days)
    return VerbsCertificateKeeper(api_client, source)


def make_forecast_loop(
    settings: Settings, state: ClusterState, preemption: PreemptionLoop, actuator: Actuator
) -> ForecastLoop:
    """The start-time forecast over `state`, reading `preemption`'s run clock, telling through `actuator`."""
    from extender.loops.forecast_loop import ForecastLoop

    return ForecastLoop(
        state,
        settings.policy,
        lambda: preemption.suspensions.clock,
        time.time,
        settings.start_forecast,
        actuator,
        lambda: preemption.leading and not preemption.dry_run,
    )


def run_loops(settings: Settings, log_level: str, wanted: Loops) -> int:
    """Loops alone: their own model fed by informers, an observe listener on their port."""
    from extender.api.app import make_service
    from extender.api.edge.app_responder import AppResponder
    from extender.api.observe import create_observe_app
    from extender.cli.runtime import Part, Runtime, observe_listener
    from extender.k8s.client import ApiReviews, make_api_client
    from extender.k8s.informer import Informers
    from extender.k8s.plans import PlanPublisher

    if not exposure_checked(settings, verbs=False):
        return 2
    state = ClusterState(settings.policy)
    api_client = make_api_client(settings.kubeconfig)
    informers = Informers(api_client, state)
    publisher = PlanPublisher(api_client)
    service = make_service(settings, state, time.time)
    try:
        loops = make_loops(settings, state, api_client, service.metrics.registry, publisher, wanted)
    except ValueError as error:
        print(f"tfjob-extender: {error}", file=sys.stderr)
        return 2
    service.loops.scaler, service.loops.preemption = loops.scaler, loops.preemption
    service.loops.forecast = loops.forecast
    service.probes.informer_problems = informers.problems
    service.probes.lease = loops.lease.status if loops.lease is not None else None
    service.probes.needs_lease = True
    loops.probes(service.probes)
    parts = [
        Part("plan publisher", publisher.start, publisher.stop),
        Part("informers", informers.start, informers.stop),
        Part("loops", loops.start, loops.stop),
    ]
    if settings.observe_debug:
        parts.append(
            Part(
                "utilisation sampler",
                lambda: service.utilisation.start(service.state.snapshot, service.clock),
                service.utilisation.stop,
            )
        )
    app = create_observe_app(service, loops.routers(), debug_routes=settings.observe_debug)
    try:
        listener = observe_listener(
            AppResponder(app),
            settings,
            ApiReviews(api_client),
            host=settings.host,
            port=settings.port,
            access_log=log_level == "debug",
        )
    except ValueError as error:
        print(f"tfjob-extender: {error}", file=sys.stderr)
        return 2
    return Runtime(parts, [listener, *loops.listeners()]).run()
