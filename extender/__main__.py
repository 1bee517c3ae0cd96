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

from extender.config import Settings
from extender.policy.model import NetworkLayer
from extender.state.manifests import SnapshotFileError
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState

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
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


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
        cluster_snapshot=args.cluster_snapshot,
        policy=replace(
            DEFAULTS.policy,
            scheduler_name=args.scheduler_name,
            starvation_limit_s=args.starvation_limit_s,
            network_topology=args.network_topology,
        ),
    )


def serve(settings: Settings, log_level: str) -> int:
    import uvicorn

    from extender.api.app import create_app, make_service

    state = ClusterState()
    start = stop = _nothing
    if settings.cluster_snapshot is not None:
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

        def start() -> None:
            informers.start()
            preemption.start()
            threading.Thread(target=settle_once_synced, args=(state,), name="settle-heap", daemon=True).start()

        def stop() -> None:
            preemption.stop()
            informers.stop()

    app = create_app(make_service(settings, state, time.time), on_start=start, on_stop=stop)
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
    return 2


if __name__ == "__main__":
    sys.exit(main())
