"""The `tfjob-extender` command: parse arguments, build the service, run it. No policy lives here."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from extender.config import ScalerSettings, Settings
from extender.policy.model import NetworkLayer
from extender.sim import cli as sim_cli
from extender.state.manifests import SnapshotFileError
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState

if TYPE_CHECKING:
    from fastapi import APIRouter
    from kubernetes.client import ApiClient
    from prometheus_client import CollectorRegistry

    from extender.scaler import ScalerLoop

DEFAULTS = Settings()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tfjob-extender", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="answer kube-scheduler's extender calls")
    serve.add_argument("--host", default=DEFAULTS.host, help="address to bind (default %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULTS.port, help="port to bind (default %(default)s)")
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
    simulate = commands.add_parser("simulate", help="replay a workload through our policy and the baselines")
    sim_cli.add_arguments(simulate)
    simulate.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--with-scaler", action="store_true", help="also run the scaler loop in this process (needs --kubeconfig)"
    )
    add_scaler_arguments(serve)
    scaler = commands.add_parser("scaler", help="run only the scaler loop (scale-out, consolidation)")
    scaler.add_argument("--kubeconfig", help="kubeconfig of the cluster to watch (default: in-cluster)")
    scaler.add_argument("--host", default=DEFAULTS.host, help="address of /debug/scaler and /metrics")
    scaler.add_argument(
        "--port", type=int, default=8889, help="port of /debug/scaler and /metrics (default %(default)s)"
    )
    scaler.add_argument("--scheduler-name", default=DEFAULTS.policy.scheduler_name, help="(default %(default)s)")
    scaler.add_argument("--starvation-limit-s", type=float, default=DEFAULTS.policy.starvation_limit_s)
    scaler.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    add_scaler_arguments(scaler)
    return parser.parse_args(argv)


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
    from dataclasses import replace

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
        with_scaler=getattr(args, "with_scaler", False),
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


def serve(settings: Settings, log_level: str) -> int:
    import uvicorn

    from extender.api.app import create_app, make_service

    state = ClusterState()
    service = make_service(settings, state, time.time)
    routers: list[APIRouter] = []
    start = stop = _nothing
    if settings.cluster_snapshot is not None:
        if settings.with_scaler:
            print("tfjob-extender: --with-scaler needs a cluster, not a snapshot file", file=sys.stderr)
            return 2
        try:
            count = load_snapshot_file(state, settings.cluster_snapshot)
        except SnapshotFileError as error:
            print(f"tfjob-extender: cannot load the cluster snapshot: {error}", file=sys.stderr)
            return 2
        logging.getLogger("extender").info("loaded %d objects from %s", count, settings.cluster_snapshot)
        settle_heap()
    else:
        from extender.k8s.actuator import KubeActuator
        from extender.k8s.client import make_api_client
        from extender.k8s.informer import Informers
        from extender.preemptor import PreemptionLoop

        api_client = make_api_client(settings.kubeconfig)
        informers = Informers(api_client, state)
        preemption = PreemptionLoop(state, KubeActuator(api_client), settings.policy, time.time)
        scaler = make_scaler(settings, state, api_client, service.metrics.registry) if settings.with_scaler else None
        if scaler is not None:
            from extender.api.scaler import make_scaler_router

            routers.append(make_scaler_router(scaler, time.time))

        def start() -> None:
            informers.start()
            preemption.start()
            if scaler is not None:
                scaler.start()
            threading.Thread(target=settle_once_synced, args=(state,), name="settle-heap", daemon=True).start()

        def stop() -> None:
            if scaler is not None:
                scaler.stop()
            preemption.stop()
            informers.stop()

    app = create_app(service, on_start=start, on_stop=stop, routers=routers)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        workers=1,
        http="httptools",
        loop="uvloop",
        timeout_keep_alive=settings.keep_alive_s,
        log_level=log_level,
        access_log=log_level == "debug",
    )
    return 0


def make_scaler(
    settings: Settings, state: ClusterState, api_client: ApiClient, registry: CollectorRegistry
) -> ScalerLoop:
    """The scaler loop over `state`, acting through the Kubernetes actuator while it holds the Lease."""
    from extender.k8s.actuator import KubeActuator
    from extender.k8s.lease import KubeLease
    from extender.scaler import ScalerLoop, ScalerMetrics

    lease = KubeLease(
        api_client,
        namespace=settings.scaler.lease_namespace,
        name=settings.scaler.lease_name,
        identity=settings.scaler.identity,
        duration_s=settings.scaler.lease_duration_s,
    )
    return ScalerLoop(
        state,
        KubeActuator(api_client),
        settings.policy,
        time.time,
        leader=lease,
        metrics=ScalerMetrics(registry),
        interval_s=settings.scaler.interval_s,
    )


def run_scaler(settings: Settings, log_level: str) -> int:
    """The scaler alone: its own model fed by informers, `/debug/scaler` and `/metrics` on its port."""
    import uvicorn
    from prometheus_client import CollectorRegistry

    from extender.api.scaler import create_scaler_app
    from extender.k8s.client import make_api_client
    from extender.k8s.informer import Informers

    state = ClusterState()
    api_client = make_api_client(settings.kubeconfig)
    informers = Informers(api_client, state)
    registry = CollectorRegistry()
    scaler = make_scaler(settings, state, api_client, registry)

    def start() -> None:
        informers.start()
        scaler.start()

    def stop() -> None:
        scaler.stop()
        informers.stop()

    app = create_scaler_app(scaler, registry, time.time, on_start=start, on_stop=stop)
    uvicorn.run(app, host=settings.host, port=settings.port, workers=1, log_level=log_level, access_log=False)
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
    if args.command == "scaler":
        return run_scaler(settings_from(args), args.log_level)
    return 2


if __name__ == "__main__":
    sys.exit(main())
