"""Arguments of the `tfjob-extender` command. `parse_args` builds one parser with a subcommand per mode
(serve, simulate, loops, scaler, explain, probe, dev-cluster). The commands that run the service (`serve`, `loops`,
`scaler`) take the settings' flags and `--config`, all generated from the settings' declarations
(`extender.cli.flags`), which also turns the parsed namespace into the frozen `Settings` the rest of the
program reads (`settings_from`). Nothing here starts anything.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from extender import __version__
from extender import explain as explain_command
from extender import probe as probe_command
from extender import what_if as what_if_command
from extender.cli.flags import add_settings_flags, settings_from
from extender.config.settings import LOG_LEVELS
from extender.preflight import command as preflight_command
from extender.replay import command as replay_command
from extender.sim import cli as sim_cli

__all__ = ["SERVICE_COMMANDS", "parse_args", "settings_from"]

COMMAND_DESCRIPTION = "The `tfjob-extender` command: parse arguments, build the service, run it. No policy lives here."
"""`tfjob-extender --help`'s description."""
SERVICE_COMMANDS = {
    "serve": "answer kube-scheduler's extender calls",
    "loops": "run the preemption loop and the scaler in a process of their own (one active cluster-wide)",
    "scaler": "run only the scaler loop (scale-out, consolidation)",
}
"""The commands that run the service, and so take the settings' flags."""
SERVICE_USAGE = "%(prog)s [--config FILE] [FLAG ...]"
"""Their usage line: their flags, one per setting, are listed below it."""
EXPLAIN_HELP = (
    "ask a running extender where a TFJob, PodGroup or pod stands (exit 0 started, 1 waiting, 2 unknown, 3 extender "
    "not reachable), or with --what-if FILE what would happen to a TFJob not submitted yet (exit 0 would start now, "
    "1 would wait, 2 never or invalid, 3 extender not reachable)"
)
"""`explain`'s help and description: what it answers and its exit codes."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tfjob-extender", description=COMMAND_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tfjob-extender {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    add_settings_flags(commands.add_parser("serve", help=SERVICE_COMMANDS["serve"], usage=SERVICE_USAGE), "serve")
    simulate = commands.add_parser("simulate", help="replay a workload through our policy and the baselines")
    sim_cli.add_arguments(simulate)
    simulate.add_argument("--log-level", default="warning", choices=LOG_LEVELS)
    for command in ("loops", "scaler"):
        add_settings_flags(commands.add_parser(command, help=SERVICE_COMMANDS[command], usage=SERVICE_USAGE), command)
    explain = commands.add_parser("explain", help=EXPLAIN_HELP, description=EXPLAIN_HELP)
    explain_command.add_arguments(explain)
    what_if_command.add_arguments(explain)
    probe_command.add_arguments(
        commands.add_parser(
            "probe", help="ask running listeners whether they are ready (exit 0 every one ready, 1 otherwise)"
        )
    )
    preflight_command.add_arguments(commands.add_parser("preflight", help=preflight_command.HELP))
    replay_command.add_arguments(commands.add_parser("replay", help=replay_command.HELP))
    add_dev_cluster_arguments(
        commands.add_parser(
            "dev-cluster",
            help="a local control plane (etcd, kube-apiserver, kwok, kube-scheduler with this extender, "
            "training-operator) on 127.0.0.1, to try the extender by hand",
        )
    )
    return parser.parse_args(argv)


def add_dev_cluster_arguments(dev_cluster: argparse.ArgumentParser) -> None:
    """`dev-cluster ACTION`: the local control plane's action and where it lives."""
    dev_cluster.add_argument("action", choices=["up", "down", "status"])
    dev_cluster.add_argument("--run-dir", type=Path, help="where its state and logs live (default: a user cache)")
    dev_cluster.add_argument("--no-operator", action="store_true", help="without training-operator")
    dev_cluster.add_argument(
        "--native-gangs",
        action="store_true",
        help="Kubernetes' own gangs (1.37, GenericWorkload on): the extender's admission webhook gives each TFJob "
        "naming the scheduler a Workload and PodGroup",
    )
    dev_cluster.add_argument(
        "--with-kueue",
        action="store_true",
        help="up: with Kueue admitting TFJobs (built by hack/build-kueue.sh the first time; see docs/kueue.md)",
    )
    dev_cluster.add_argument(
        "--with-controllers",
        action="store_true",
        help="up: with kube-controller-manager (Deployments, ReplicaSets, garbage collection, namespaces) and a "
        "default-profile kube-scheduler, so `helm install` of the chart creates and runs its pods",
    )
    dev_cluster.add_argument("--foreground", action="store_true", help="up: stay, and stop everything on Ctrl-C")
    dev_cluster.add_argument("--log-level", default="warning", choices=LOG_LEVELS)
