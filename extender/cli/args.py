"""Arguments of the `tfjob-extender` command and the `Settings` they make. `parse_args` builds one parser
with a subcommand per mode (serve, simulate, loops, scaler, explain, dev-cluster); the `add_*_arguments`
helpers add the groups of options several subcommands share (scaler tuning, TLS and tokens of the verb
listener and of the observe listener, a loop process's cluster and port; the policy file and flags come
from `extender.cli.policy_args`), and `settings_from` turns the parsed namespace into the frozen
`Settings` the rest of the program reads, its policy merged and checked by `policy_args.policy_from`.
Nothing here starts anything.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from extender import __version__
from extender import explain as explain_command
from extender.cli.limit_args import add_limit_arguments, limits_from
from extender.cli.policy_args import add_policy_arguments, policy_from
from extender.config import OBSERVE_LIMITS, VERB_LIMITS, AuthSettings, ScalerSettings, Settings
from extender.sim import cli as sim_cli

DEFAULTS = Settings()
POLICY = DEFAULTS.policy
COMMAND_DESCRIPTION = "The `tfjob-extender` command: parse arguments, build the service, run it. No policy lives here."
"""`tfjob-extender --help`'s description."""
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="tfjob-extender", description=COMMAND_DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tfjob-extender {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="answer kube-scheduler's extender calls")
    add_serve_arguments(serve)
    add_serve_loop_arguments(serve)
    simulate = commands.add_parser("simulate", help="replay a workload through our policy and the baselines")
    sim_cli.add_arguments(simulate)
    simulate.add_argument("--log-level", default="warning", choices=LOG_LEVELS)
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
    add_dev_cluster_arguments(
        commands.add_parser(
            "dev-cluster",
            help="a local control plane (etcd, kube-apiserver, kwok, kube-scheduler with this extender, "
            "training-operator) on 127.0.0.1, to try the extender by hand",
        )
    )
    for command in (loops, scaler):
        add_loop_process_arguments(command, 8889)
    return parser.parse_args(argv)


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    """`serve`: listeners, where the model comes from, policy knobs, limits, logs, TLS and tokens."""
    serve.add_argument("--host", default=DEFAULTS.host, help="address of the verb listener (default %(default)s)")
    serve.add_argument(
        "--port", type=int, default=DEFAULTS.port, help="port of the verb listener (default %(default)s)"
    )
    serve.add_argument(
        "--observe-host",
        default=DEFAULTS.observe_host,
        help="address of the read-only observe listener: /metrics, /healthz, /readyz, and with --observe-debug "
        "/debug and /ui; no verbs (default %(default)s)",
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
    add_policy_arguments(serve)
    add_log_arguments(serve)
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        help="largest verb request accepted, bytes (the same as --verb-max-body-bytes; default "
        f"{VERB_LIMITS.max_body_bytes}: 5000 node names and a Pod)",
    )
    serve.add_argument(
        "--verbs-insecure",
        action="store_true",
        help="serve the verbs off the loopback address with neither client certificates nor bearer tokens "
        "(without it, --host off loopback needs --tls-client-ca-file, --auth-token-file or --auth-token-review)",
    )
    add_auth_arguments(serve)
    add_observe_arguments(serve, "the observe listener")
    add_limit_arguments(serve, "verb", VERB_LIMITS)
    add_limit_arguments(serve, "observe", OBSERVE_LIMITS)


def add_serve_loop_arguments(serve: argparse.ArgumentParser) -> None:
    """`serve`: which loops run in the process, shadow mode, and the scaler's tuning."""
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


def add_dev_cluster_arguments(dev_cluster: argparse.ArgumentParser) -> None:
    """`dev-cluster ACTION`: the local control plane's action and where it lives."""
    dev_cluster.add_argument("action", choices=["up", "down", "status"])
    dev_cluster.add_argument("--run-dir", type=Path, help="where its state and logs live (default: a user cache)")
    dev_cluster.add_argument("--no-operator", action="store_true", help="without training-operator")
    dev_cluster.add_argument(
        "--with-kueue",
        action="store_true",
        help="up: with Kueue admitting TFJobs (built by hack/build-kueue.sh the first time; see docs/kueue.md)",
    )
    dev_cluster.add_argument("--foreground", action="store_true", help="up: stay, and stop everything on Ctrl-C")
    dev_cluster.add_argument("--log-level", default="warning", choices=LOG_LEVELS)


def add_loop_process_arguments(parser: argparse.ArgumentParser, port: int) -> None:
    """Arguments of a process that runs loops on a model of its own: cluster, policy, and its one listener
    (`/healthz`, `/readyz`, `/metrics`; with --observe-debug `/debug` and `/ui`), an observe listener."""
    parser.add_argument("--kubeconfig", help="kubeconfig of the cluster to watch (default: in-cluster)")
    parser.add_argument(
        "--host", default=DEFAULTS.host, help="address of /metrics, /healthz, /readyz (default %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=port, help="port of /metrics, /healthz, /readyz (default %(default)s)"
    )
    add_policy_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="plan and show what would be done, never act")
    add_log_arguments(parser)
    add_scaler_arguments(parser)
    add_observe_arguments(parser, "this process's listener")
    add_limit_arguments(parser, "observe", OBSERVE_LIMITS)


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="info", choices=LOG_LEVELS)
    parser.add_argument(
        "--log-format",
        default="text",
        choices=LOG_FORMATS,
        help="text lines, or one JSON object per line (ts, level, logger, msg, exc) (default %(default)s)",
    )


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    """TLS and bearer-token checks of the verb listener, for a port reachable from off the loopback address."""
    group = parser.add_argument_group("TLS and authentication of the verb listener (for a port off loopback)")
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


def add_observe_arguments(parser: argparse.ArgumentParser, listener: str) -> None:
    """The debug routes of an observe listener, their own token checks, and its TLS."""
    group = parser.add_argument_group(
        f"debug routes, TLS and authentication of {listener} (/metrics, /healthz, /readyz always stay open)"
    )
    group.add_argument("--observe-debug", action="store_true", help=f"also serve /debug/* and /ui on {listener}")
    group.add_argument(
        "--observe-debug-insecure",
        action="store_true",
        help="allow --observe-debug off the loopback address with no --observe-auth-token-file or "
        "--observe-auth-token-review (anyone who reaches the port reads the cluster's state)",
    )
    group.add_argument("--observe-tls-cert-file", type=Path, help=f"serve {listener} over HTTPS with this certificate")
    group.add_argument("--observe-tls-key-file", type=Path, help="the certificate's private key (PEM)")
    group.add_argument(
        "--observe-auth-token-file",
        type=Path,
        help="accept bearer tokens listed in this file, one a line, on /debug and /ui",
    )
    group.add_argument(
        "--observe-auth-token-review",
        action="store_true",
        help="accept bearer tokens the API server's TokenReview accepts, on /debug and /ui",
    )
    group.add_argument(
        "--observe-auth-audience", action="append", default=[], help="audience a reviewed token must have"
    )
    group.add_argument("--observe-auth-allowed-user", action="append", default=[], help="user a reviewed token must be")


def add_scaler_arguments(parser: argparse.ArgumentParser) -> None:
    loop = DEFAULTS.scaler
    group = parser.add_argument_group("scaler")
    group.add_argument("--scaler-interval-s", type=float, default=loop.interval_s, help="(default %(default)s)")
    group.add_argument(
        "--scale-out-step", type=int, help=f"workers a job gains per tick (default {POLICY.scale_out_step})"
    )
    group.add_argument(
        "--scale-in-step",
        type=int,
        help=f"workers a job gives up per tick for a waiting gang (default {POLICY.scale_in_step})",
    )
    group.add_argument("--scale-cooldown-s", type=float, help=f"(default {POLICY.scale_cooldown_s:g})")
    group.add_argument(
        "--no-consolidation",
        action="store_false",
        dest="consolidation_enabled",
        default=None,
        help="never migrate workers onto their PS node",
    )
    group.add_argument("--consolidation-budget", type=int, help=f"(default {POLICY.consolidation_budget})")
    group.add_argument("--consolidation-interval-s", type=float, help=f"(default {POLICY.consolidation_interval_s:g})")
    group.add_argument("--lease-namespace", default=loop.lease_namespace, help="(default %(default)s)")
    group.add_argument("--lease-name", default=loop.lease_name, help="(default %(default)s)")
    group.add_argument("--lease-duration-s", type=int, default=loop.lease_duration_s, help="(default %(default)s)")
    group.add_argument("--identity", default="", help="name in the Lease (default: host, pid, random suffix)")


def auth_from(args: argparse.Namespace, prefix: str) -> AuthSettings:
    """The TLS and token settings of one listener: the verb listener's flags (`prefix` "") or the observe
    listener's (`prefix` "observe_"); a flag the command lacks counts as not given."""

    def given(name: str) -> Any:
        return getattr(args, prefix + name, None)

    return AuthSettings(
        tls_cert_file=given("tls_cert_file"),
        tls_key_file=given("tls_key_file"),
        tls_client_ca_file=given("tls_client_ca_file"),
        token_file=given("auth_token_file"),
        token_review=bool(given("auth_token_review")),
        audiences=tuple(given("auth_audience") or ()),
        allowed_users=tuple(given("auth_allowed_user") or ()),
    )


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings of `serve`, `loops` or `scaler`; `SettingsError` (a one-line reason) when they are wrong."""
    return Settings(
        host=args.host,
        port=args.port,
        kubeconfig=args.kubeconfig,
        cluster_snapshot=getattr(args, "cluster_snapshot", None),
        policy=policy_from(args),
        observe_host=getattr(args, "observe_host", DEFAULTS.observe_host),
        observe_port=getattr(args, "observe_port", DEFAULTS.observe_port),
        observe_debug=args.observe_debug,
        observe_debug_insecure=args.observe_debug_insecure,
        observe_auth=auth_from(args, "observe_"),
        with_scaler=getattr(args, "with_scaler", False),
        with_loops=not getattr(args, "no_loops", False),
        dry_run=getattr(args, "dry_run", False),
        verb_limits=replace(
            limits_from(args, "verb", VERB_LIMITS),
            max_body_bytes=getattr(args, "max_body_bytes", None)
            or limits_from(args, "verb", VERB_LIMITS).max_body_bytes,
        ),
        observe_limits=limits_from(args, "observe", OBSERVE_LIMITS),
        verbs_insecure=getattr(args, "verbs_insecure", False),
        auth=auth_from(args, ""),
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
