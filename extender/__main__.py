"""The `tfjob-extender` command: parse arguments, build the service, run it. No policy lives here."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from extender import explain as explain_command
from extender.config import AuthSettings, ScalerSettings, Settings
from extender.policy.model import NetworkLayer
from extender.sim import cli as sim_cli
from extender.state.manifests import SnapshotFileError
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState

if TYPE_CHECKING:
    from fastapi import APIRouter
    from kubernetes.client import ApiClient
    from prometheus_client import CollectorRegistry

    from extender.api.verbs import Service
    from extender.k8s.plans import PlanPublisher
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop

DEFAULTS = Settings()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tfjob-extender", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="answer kube-scheduler's extender calls")
    serve.add_argument("--host", default=DEFAULTS.host, help="address to bind (default %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULTS.port, help="port to bind (default %(default)s)")
    serve.add_argument(
        "--observe-host",
        default=DEFAULTS.observe_host,
        help="address of the read-only observe listener: /metrics, /debug, /ui, no verbs (default %(default)s)",
    )
    serve.add_argument(
        "--observe-port",
        type=int,
        default=DEFAULTS.observe_port,
        help="port of the observe listener (default %(default)s: none)",
    )
    source = serve.add_mutually_exclusive_group()
    source.add_argument("--kubeconfig", help="kubeconfig of the cluster to watch (default: in-cluster)")
    source.add_argument(
        "--cluster-snapshot",
        type=Path,
        help="serve from this file (a /debug/state dump or Kubernetes objects in YAML) with no API server",
    )
    serve.add_argument(
        "--scheduler-name",
        default=DEFAULTS.policy.scheduler_name,
        help="schedulerName of the pods to manage (default %(default)s)",
    )
    serve.add_argument(
        "--starvation-limit-s",
        type=float,
        default=DEFAULTS.policy.starvation_limit_s,
        help="seconds a gang may wait before it starves and capacity is held for it (default %(default)s)",
    )
    serve.add_argument(
        "--network-topology",
        type=network_layers,
        default=DEFAULTS.policy.network_topology,
        metavar="LAYER=LABEL,...",
        help="network layers, top first, used when the cluster has no ClusterNetworkTopology named default "
        "(default: spine, block, accelerator by NVIDIA topograph's labels; an empty string: none)",
    )
    serve.add_argument(
        "--own-barrier-for-gated-gangs",
        action="store_true",
        help="keep the extender's all-or-nothing barrier for scheduling.k8s.io gang PodGroups too (for a "
        "kube-scheduler running without the GenericWorkload feature gate; default: leave it to kube-scheduler)",
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULTS.max_body_bytes,
        help="largest verb request accepted, bytes (default %(default)s: 5000 node names and a Pod)",
    )
    add_auth_arguments(serve)
    simulate = commands.add_parser("simulate", help="replay a workload through our policy and the baselines")
    sim_cli.add_arguments(simulate)
    simulate.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--with-scaler",
        action="store_true",
        help="also run the scaler loop in this process (with --cluster-snapshot: only with --dry-run)",
    )
    serve.add_argument(
        "--no-loops",
        action="store_true",
        help="answer the verbs only: the preemption loop and the scaler run in their own process "
        "(`tfjob-extender loops`), and their plans reach this one through the API server",
    )
    serve.add_argument(
        "--dry-run",
        action="store_true",
        help="shadow mode: the preemption loop and the scaler plan and show what they would do, never act",
    )
    add_scaler_arguments(serve)
    loops = commands.add_parser(
        "loops", help="run the preemption loop and the scaler in a process of their own (one active cluster-wide)"
    )
    scaler = commands.add_parser("scaler", help="run only the scaler loop (scale-out, consolidation)")
    explain_command.add_arguments(
        commands.add_parser(
            "explain",
            help="ask a running extender where a TFJob, PodGroup or pod stands "
            "(exit 0 started, 1 waiting, 2 unknown, 3 extender not reachable)",
        )
    )
    dev_cluster = commands.add_parser(
        "dev-cluster",
        help="a local control plane (etcd, kube-apiserver, kwok, kube-scheduler with this extender, "
        "training-operator) on 127.0.0.1, to try the extender by hand",
    )
    dev_cluster.add_argument("action", choices=["up", "down", "status"])
    dev_cluster.add_argument("--run-dir", type=Path, help="where its state and logs live (default: a user cache)")
    dev_cluster.add_argument("--no-operator", action="store_true", help="without training-operator")
    dev_cluster.add_argument("--foreground", action="store_true", help="up: stay, and stop everything on Ctrl-C")
    dev_cluster.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    for command in (loops, scaler):
        add_loop_process_arguments(command, 8889)
    return parser.parse_args(argv)


def add_loop_process_arguments(parser: argparse.ArgumentParser, port: int) -> None:
    """Arguments of a process that runs loops on a model of its own: cluster, HTTP for /debug and /metrics."""
    parser.add_argument("--kubeconfig", help="kubeconfig of the cluster to watch (default: in-cluster)")
    parser.add_argument("--host", default=DEFAULTS.host, help="address of /debug and /metrics")
    parser.add_argument("--port", type=int, default=port, help="port of /debug and /metrics (default %(default)s)")
    parser.add_argument("--scheduler-name", default=DEFAULTS.policy.scheduler_name, help="(default %(default)s)")
    parser.add_argument("--starvation-limit-s", type=float, default=DEFAULTS.policy.starvation_limit_s)
    parser.add_argument("--dry-run", action="store_true", help="plan and show what would be done, never act")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_scaler_arguments(parser)
    add_auth_arguments(parser)


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """TLS and bearer-token checks, for a port reachable from off the loopback address."""
    group = parser.add_argument_group("TLS and authentication (for a port off the loopback address)")
    group.add_argument("--tls-cert-file", type=Path, help="serve HTTPS with this certificate (PEM)")
    group.add_argument("--tls-key-file", type=Path, help="the certificate's private key (PEM)")
    group.add_argument(
        "--tls-client-ca-file",
        type=Path,
        help="require client certificates signed by this CA (kube-scheduler's extender tlsConfig certFile/keyFile)",
    )
    group.add_argument("--auth-token-file", type=Path, help="accept bearer tokens listed in this file, one a line")
    group.add_argument(
        "--auth-token-review", action="store_true", help="accept bearer tokens the API server's TokenReview accepts"
    )
    group.add_argument("--auth-audience", action="append", default=[], help="audience a reviewed token must have")
    group.add_argument("--auth-allowed-user", action="append", default=[], help="user a reviewed token must be")


def add_scaler_arguments(parser: argparse.ArgumentParser) -> None:
    policy, loop = DEFAULTS.policy, DEFAULTS.scaler
    group = parser.add_argument_group("scaler")
    group.add_argument("--scaler-interval-s", type=float, default=loop.interval_s, help="(default %(default)s)")
    group.add_argument(
        "--scale-out-step", type=int, default=policy.scale_out_step, help="workers a job gains per tick (%(default)s)"
    )
    group.add_argument(
        "--scale-in-step",
        type=int,
        default=policy.scale_in_step,
        help="workers a job gives up per tick for a waiting gang (%(default)s)",
    )
    group.add_argument("--scale-cooldown-s", type=float, default=policy.scale_cooldown_s, help="(default %(default)s)")
    group.add_argument("--no-consolidation", action="store_true", help="never migrate workers onto their PS node")
    group.add_argument("--consolidation-budget", type=int, default=policy.consolidation_budget, help="(%(default)s)")
    group.add_argument(
        "--consolidation-interval-s", type=float, default=policy.consolidation_interval_s, help="(%(default)s)"
    )
    group.add_argument("--lease-namespace", default=loop.lease_namespace, help="(default %(default)s)")
    group.add_argument("--lease-name", default=loop.lease_name, help="(default %(default)s)")
    group.add_argument("--lease-duration-s", type=int, default=loop.lease_duration_s, help="(default %(default)s)")
    group.add_argument("--identity", default="", help="name in the Lease (default: host, pid, random suffix)")


def network_layers(text: str) -> tuple[NetworkLayer, ...]:
    """`SpineLayer=network.topology.nvidia.com/spine,BlockLayer=...`: layer=label pairs, top first."""
    layers = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, label = item.partition("=")
        if not name or not label:
            raise argparse.ArgumentTypeError(f"{item!r} is not LAYER=LABEL")
        layers.append(NetworkLayer(name, (label,)))
    return tuple(layers)


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings(
        host=args.host,
        port=args.port,
        kubeconfig=args.kubeconfig,
        cluster_snapshot=getattr(args, "cluster_snapshot", None),
        policy=replace(
            DEFAULTS.policy,
            scheduler_name=args.scheduler_name,
            starvation_limit_s=args.starvation_limit_s,
            scale_out_step=args.scale_out_step,
            scale_in_step=args.scale_in_step,
            scale_cooldown_s=args.scale_cooldown_s,
            consolidation_enabled=not args.no_consolidation,
            consolidation_budget=args.consolidation_budget,
            consolidation_interval_s=args.consolidation_interval_s,
            network_topology=getattr(args, "network_topology", DEFAULTS.policy.network_topology),
            defer_to_scheduler_gang_barrier=not getattr(args, "own_barrier_for_gated_gangs", False),
        ),
        observe_host=getattr(args, "observe_host", DEFAULTS.observe_host),
        observe_port=getattr(args, "observe_port", DEFAULTS.observe_port),
        with_scaler=getattr(args, "with_scaler", False),
        with_loops=not getattr(args, "no_loops", False),
        dry_run=getattr(args, "dry_run", False),
        max_body_bytes=getattr(args, "max_body_bytes", DEFAULTS.max_body_bytes),
        auth=AuthSettings(
            tls_cert_file=args.tls_cert_file,
            tls_key_file=args.tls_key_file,
            tls_client_ca_file=args.tls_client_ca_file,
            token_file=args.auth_token_file,
            token_review=args.auth_token_review,
            audiences=tuple(args.auth_audience),
            allowed_users=tuple(args.auth_allowed_user),
        ),
        scaler=ScalerSettings(
            interval_s=args.scaler_interval_s,
            lease_namespace=args.lease_namespace,
            lease_name=args.lease_name,
            lease_duration_s=args.lease_duration_s,
            identity=args.identity or default_identity(),
        ),
    )


def default_identity() -> str:
    import os
    import socket
    import uuid

    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def exposure_checked(settings: Settings) -> bool:
    """Print what is wrong (False: do not start) or risky about who can reach the port."""
    from extender.api.auth import exposure_warnings, settings_problems

    for problem in settings_problems(settings.auth):
        print(f"tfjob-extender: {problem}", file=sys.stderr)
    for warning in exposure_warnings(settings.host, settings.auth):
        print(f"tfjob-extender: warning: {warning}", file=sys.stderr)
    if settings.observe_port and exposure_warnings(settings.observe_host, settings.auth):
        print(
            f"tfjob-extender: note: the observe listener on {settings.observe_host}:{settings.observe_port} is "
            "read-only (no verbs); whoever reaches it can read /metrics, /debug and /ui",
            file=sys.stderr,
        )
    return not settings_problems(settings.auth)


def serve(settings: Settings, log_level: str) -> int:
    import uvicorn

    from extender.api.app import create_app, make_service
    from extender.api.auth import Reviewer, guarded, uvicorn_tls_options
    from extender.api.observe import create_observe_app, serve_together
    from extender.api.verb_protocol import protocol_for

    if not exposure_checked(settings):
        return 2
    sys.setswitchinterval(settings.switch_interval_s)
    state = ClusterState(settings.policy)
    service = make_service(settings, state, time.time)
    routers: list[APIRouter] = []
    start = stop = _nothing
    reviewer: Reviewer | None = None
    if settings.cluster_snapshot is not None:
        if settings.with_scaler and not settings.dry_run:
            print(
                "tfjob-extender: --with-scaler on a snapshot file needs --dry-run (nothing to act on)", file=sys.stderr
            )
            return 2
        try:
            count = load_snapshot_file(state, settings.cluster_snapshot)
        except SnapshotFileError as error:
            print(f"tfjob-extender: cannot load the cluster snapshot: {error}", file=sys.stderr)
            return 2
        logging.getLogger("extender").info("loaded %d objects from %s", count, settings.cluster_snapshot)
        settle_heap()
        if settings.dry_run:
            start, stop = shadow_loops(settings, state, service, routers)
    else:
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
        routers += loops.routers()
        service.loops.scaler, service.loops.preemption = loops.scaler, loops.preemption

        def start() -> None:
            publisher.start()
            informers.start()
            loops.start()
            threading.Thread(target=settle_once_synced, args=(state,), name="settle-heap", daemon=True).start()

        def stop() -> None:
            loops.stop()
            informers.stop()
            publisher.stop()

    try:
        app = guarded(create_app(service, on_start=start, on_stop=stop, routers=routers), settings.auth, reviewer)
        observe_app = (
            guarded(create_observe_app(service, routers), settings.auth, reviewer) if settings.observe_port else None
        )
    except ValueError as error:
        print(f"tfjob-extender: {error}", file=sys.stderr)
        return 2
    main = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        workers=1,
        http=protocol_for(app),
        loop="uvloop",
        timeout_keep_alive=settings.keep_alive_s,
        limit_concurrency=settings.max_connections,
        log_level=log_level,
        access_log=log_level == "debug",
        **uvicorn_tls_options(settings.auth),
    )
    observe = (
        uvicorn.Config(
            observe_app,
            host=settings.observe_host,
            port=settings.observe_port,
            http="httptools",
            loop="uvloop",
            lifespan="off",
            log_level=log_level,
            access_log=log_level == "debug",
            **uvicorn_tls_options(settings.auth),
        )
        if observe_app is not None
        else None
    )
    serve_together(main, observe)
    return 0


def shadow_loops(
    settings: Settings, state: ClusterState, service: Service, routers: list[APIRouter]
) -> tuple[Callable[[], None], Callable[[], None]]:
    """The preemption loop and (with --with-scaler) the scaler in shadow mode on an offline model: they plan
    and show what they would do; the actuator they are given is never called."""
    from extender.api.scaler import export_scaler_metrics, make_scaler_router
    from extender.loops.actuator import RecordingActuator
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop

    preemption = PreemptionLoop(state, RecordingActuator(), settings.policy, time.time, dry_run=True)
    service.loops.preemption = preemption
    loops: list[PreemptionLoop | ScalerLoop] = [preemption]
    if settings.with_scaler:
        scaler = ScalerLoop(
            state,
            RecordingActuator(),
            settings.policy,
            time.time,
            interval_s=settings.scaler.interval_s,
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


@dataclass(frozen=True, slots=True)
class Loops:
    """Which loops a process runs."""

    preemption: bool
    scaler: bool


@dataclass(frozen=True, slots=True)
class RunningLoops:
    preemption: PreemptionLoop | None
    scaler: ScalerLoop | None

    def start(self) -> None:
        for loop in (self.preemption, self.scaler):
            if loop is not None:
                loop.start()

    def stop(self) -> None:
        for loop in (self.scaler, self.preemption):
            if loop is not None:
                loop.stop()

    def routers(self) -> list[APIRouter]:
        from extender.api.scaler import make_scaler_router

        return [make_scaler_router(self.scaler, time.time)] if self.scaler is not None else []


def make_loops(
    settings: Settings,
    state: ClusterState,
    api_client: ApiClient,
    registry: CollectorRegistry,
    publisher: PlanPublisher,
    wanted: Loops,
) -> RunningLoops:
    """The wanted loops over `state`, acting through the Kubernetes actuator while this instance holds the
    Lease (one lease for both: one instance acts cluster-wide)."""
    from extender.api.scaler import export_scaler_metrics
    from extender.k8s.actuator import KubeActuator
    from extender.k8s.lease import KubeLease
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop

    lease = KubeLease(
        api_client,
        namespace=settings.scaler.lease_namespace,
        name=settings.scaler.lease_name,
        identity=settings.scaler.identity,
        duration_s=settings.scaler.lease_duration_s,
    )
    actuator = KubeActuator(api_client)
    preemption = (
        PreemptionLoop(
            state,
            actuator,
            settings.policy,
            time.time,
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
            interval_s=settings.scaler.interval_s,
            dry_run=settings.dry_run,
        )
        if wanted.scaler
        else None
    )
    if scaler is not None:
        export_scaler_metrics(registry, scaler)
    return RunningLoops(preemption, scaler)


def run_loops(settings: Settings, log_level: str, wanted: Loops) -> int:
    """Loops alone: their own model fed by informers, `/debug/scaler` and `/metrics` on their port."""
    import uvicorn
    from prometheus_client import CollectorRegistry

    from extender.api.auth import guarded, uvicorn_tls_options
    from extender.api.scaler import create_loops_app
    from extender.k8s.client import make_api_client, token_reviewer
    from extender.k8s.informer import Informers
    from extender.k8s.plans import PlanPublisher

    if not exposure_checked(settings):
        return 2
    state = ClusterState(settings.policy)
    api_client = make_api_client(settings.kubeconfig)
    informers = Informers(api_client, state)
    registry = CollectorRegistry()
    publisher = PlanPublisher(api_client)
    loops = make_loops(settings, state, api_client, registry, publisher, wanted)

    def start() -> None:
        publisher.start()
        informers.start()
        loops.start()

    def stop() -> None:
        loops.stop()
        informers.stop()
        publisher.stop()

    app = guarded(
        create_loops_app(loops.routers(), registry, on_start=start, on_stop=stop),
        settings.auth,
        token_reviewer(api_client),
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        workers=1,
        log_level=log_level,
        access_log=False,
        **uvicorn_tls_options(settings.auth),
    )
    return 0


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


def _nothing() -> None:
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        return serve(settings_from(args), args.log_level)
    if args.command == "simulate":
        return sim_cli.run(args)
    if args.command == "dev-cluster":
        from extender.devcluster import cli as dev_cluster_cli

        return dev_cluster_cli.run(args)
    if args.command == "explain":
        return explain_command.run(args)
    if args.command == "scaler":
        return run_loops(settings_from(args), args.log_level, Loops(preemption=False, scaler=True))
    if args.command == "loops":
        return run_loops(settings_from(args), args.log_level, Loops(preemption=True, scaler=True))
    return 2


if __name__ == "__main__":
    sys.exit(main())
