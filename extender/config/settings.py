"""The service's settings: one frozen `Settings` tree, built once from the command line and the config file
and passed explicitly; nothing reads it from a global.

The tree's leaves are declared once each with `setting` (`policy.core.setting_rules`): default, rule (unit,
range or choices), one-line help, and where it may be set. Its branches are settings objects of their own,
each held by a field declared with `group` (`config.rules`): the policy (`PolicySettings`, whose keys sit at
the config file's top level), the two loops' knobs, the Lease they share (`LeaderElectionSettings`), and
each listener's limits and TLS. Settings of one process (addresses, ports, credentials, modes) are flags
only (`in_file=False`); the rest may also come from the config file both processes read. `config.tree`
walks the declarations to read that file and to print the chart's schema; `cli.flags` builds the flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from extender.config.listeners import OBSERVE_LIMITS, VERB_LIMITS, AuthSettings, ListenerLimits
from extender.config.rules import FilePath, Text, group
from extender.config.verbs_tls import VerbsTlsSettings
from extender.config.webhook import NATIVE_GANG_MODES, WEBHOOK_LIMITS, WebhookSettings
from extender.loops.forecast_settings import StartForecastSettings
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.loops.scaler_settings import ScalerLoopSettings
from extender.policy.core.setting_rules import (
    POSITIVE_SECONDS,
    SECONDS,
    Choices,
    Name,
    Numbers,
    Switch,
    check_declared,
    setting,
)
from extender.policy.core.settings import PolicySettings

SERVE = ("serve",)
"""The command of a setting only the verb-serving process reads."""
LOOPS = ("serve", "loops")
"""The commands that run the preemption loop (and with it the native gangs' controller and webhook)."""
PORT = Numbers(0, 65535, integer=True, unit="port")
ADDRESS = Text(non_empty=True, metavar="ADDRESS")
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")


@dataclass(frozen=True, slots=True)
class LeaderElectionSettings:
    """The `coordination.k8s.io` Lease the preemption loop and the scaler share: while a process holds it,
    its loops act cluster-wide; the other instances stand by."""

    lease_namespace: str = setting("tfjob-system", Name(), "namespace of the loops' Lease")
    lease_name: str = setting("tfjob-extender-scaler", Name(), "name of the loops' Lease")
    lease_duration_s: int = setting(
        15,
        Numbers(1, integer=True, unit="seconds"),
        "seconds a holder that stopped renewing keeps the Lease before another instance takes over",
    )
    lease_retry_period_s: float = setting(
        2.0, POSITIVE_SECONDS, "seconds between calls to the API server about the Lease, however often loops ask"
    )
    """The holder acts on a renewal this long at most (capped at a quarter of the duration)."""
    identity: str = setting(
        "",
        Text(metavar="NAME"),
        "this instance's name in the Lease (default: host name, pid, random suffix)",
        in_file=False,
    )

    def __post_init__(self) -> None:
        check_declared(self)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a process of the service runs with: its listeners, where the model comes from, the policy,
    the loops, the debug views, the logs."""

    host: str = setting(
        "127.0.0.1",
        ADDRESS,
        "address of the main listener: serve's verbs; the observe listener of loops, scaler",
        in_file=False,
    )
    port: int = setting(
        8888,
        PORT,
        "port of the main listener: serve's verbs; the observe listener of loops, scaler",
        in_file=False,
        command_defaults=(("loops", 8889), ("scaler", 8889)),
    )
    observe_host: str = setting(
        "127.0.0.1",
        ADDRESS,
        "address of serve's read-only observe listener (/metrics, probes, --observe-debug's routes)",
        in_file=False,
        commands=SERVE,
    )
    observe_port: int = setting(0, PORT, "port of serve's observe listener (0: none)", in_file=False, commands=SERVE)
    observe_debug: bool = setting(
        False, Switch(), "also serve /debug/* and /ui on the observe listener, behind its token checks", in_file=False
    )
    """By default it serves only `/metrics`, `/healthz` and `/readyz`."""
    observe_debug_insecure: bool = setting(
        False,
        Switch(),
        "allow --observe-debug off the loopback address with no token check (anyone may read)",
        in_file=False,
    )
    observe_auth: AuthSettings = group(
        AuthSettings,
        "The observe listener's TLS and the token checks of its /debug and /ui",
        prefix="observe-",
        in_file=False,
    )
    """Never on `/metrics`, `/healthz`, `/readyz`; separate from `auth`, which guards the verb listener only."""
    kubeconfig: str | None = setting(
        None,
        Text(non_empty=True, optional=True, metavar="FILE"),
        "kubeconfig of the cluster (default: in-cluster)",
        in_file=False,
    )
    cluster_snapshot: Path | None = setting(
        None,
        FilePath(),
        "serve from this file (a /debug/state dump or objects in YAML) with no API server",
        in_file=False,
        commands=SERVE,
        excludes="kubeconfig",
    )
    decision_history: int = setting(
        256, Numbers(1, integer=True, unit="decisions"), "recent decisions /debug/decisions keeps"
    )
    decision_history_nodes: int = setting(
        50_000, Numbers(1, integer=True, unit="nodes"), "node entries the kept decisions may hold together"
    )
    """Feasible, failed, scored and victim nodes of every decision kept."""
    debug_chunk_objects: int = setting(
        16, Numbers(1, integer=True, unit="objects"), "objects rendered between two yields in large /debug documents"
    )
    """Each step stays well under a millisecond, so the verbs are answered in between."""
    debug_render_share: float = setting(
        0.2,
        Numbers(0.0, 1.0, low_open=True, unit="share"),
        "largest share of the process's time /debug rendering takes",
    )
    """After each step the stream pauses (1 / share − 1) times as long as the step took, and one document
    renders at a time, so a dashboard polling `/debug/state` leaves kube-scheduler's calls their latency."""
    queue_explained_gangs: int = setting(
        50, Numbers(0, integer=True, unit="gangs"), "gangs /debug/queue plans to say what each waits for"
    )
    """Highest rank first, each costs one placement unless its failed plan still holds; the rest are listed
    with their rank only."""
    shown_loop_actions: int = setting(
        50,
        Numbers(0, integer=True, unit="actions"),
        "latest scaler actions and shadow plans /debug/jobs and the page show",
    )
    switch_interval_s: float = setting(
        0.001, POSITIVE_SECONDS, "seconds a thread may hold the interpreter while another waits", commands=SERVE
    )
    """Python's default is 0.005: the watches and any loops running in this process hand the interpreter to
    a waiting verb within this."""
    shutdown_grace_s: float = setting(
        15.0, SECONDS, "seconds a stopping verb listener waits for replies to requests already read", commands=SERVE
    )
    """A gang member waiting for the watch included; then it closes the connections left. Under Kubernetes'
    default 30 s termination grace period."""
    model_catch_up_s: float = setting(
        0.5, SECONDS, "longest a filter call waits for the watch to deliver gang members it asks about", commands=SERVE
    )
    """It decides again every `model_catch_up_poll_s` until the members (or those of a gang it gates) are
    in the model; then it decides on what it has, read-only for a pod it never saw."""
    model_catch_up_poll_s: float = setting(
        0.01, POSITIVE_SECONDS, "seconds between two decisions while a filter call waits for the watch", commands=SERVE
    )
    policy: PolicySettings = group(PolicySettings, "The policy (the config file's top-level keys)", flat_in_file=True)
    with_scaler: bool = setting(
        False,
        Switch(),
        "also run the scaler loop in this process (with --cluster-snapshot: only with --dry-run)",
        in_file=False,
        commands=SERVE,
    )
    with_loops: bool = setting(
        True,
        Switch(),
        "run the preemption loop in this process (off: the verbs only; the loops run in `tfjob-extender loops`)",
        in_file=False,
        commands=SERVE,
        off_flag="no-loops",
    )
    dry_run: bool = setting(
        False,
        Switch(),
        "shadow mode: the preemption loop and the scaler plan and show what they would do, never act",
        in_file=False,
    )
    leader_election: LeaderElectionSettings = group(
        LeaderElectionSettings, "The Lease of the preemption loop and the scaler (one active instance)"
    )
    scaler_loop: ScalerLoopSettings = group(ScalerLoopSettings, "The scaler loop", prefix="scaler-")
    preemption_loop: PreemptionLoopSettings = group(
        PreemptionLoopSettings, "The preemption loop", prefix="preemption-", commands=("serve", "loops")
    )
    """How the preemption loop runs: its interval, per-tick limits and retry delays (its policy is in
    `policy`)."""
    start_forecast: StartForecastSettings = group(
        StartForecastSettings,
        "The start-time forecast of waiting gangs (in the preemption loop's process)",
        prefix="forecast-",
        commands=("serve", "loops"),
    )
    """How often and how many futures each waiting gang's start is forecast over, and its calibration."""
    auth: AuthSettings = group(
        AuthSettings,
        "The verb listener's TLS and authentication (for a port off loopback)",
        in_file=False,
        commands=SERVE,
    )
    """Who may call the verb listener (see `extender.api.auth`); nothing by default (loopback)."""
    verbs_insecure: bool = setting(
        False,
        Switch(),
        "serve the verbs off the loopback address with neither client certificates nor tokens",
        in_file=False,
        commands=SERVE,
    )
    """Without it `serve` refuses to start that way."""
    verb_limits: ListenerLimits = group(
        lambda: VERB_LIMITS,
        "The verb listener's limits",
        prefix="verb-",
        commands=SERVE,
        aliases=(("max_body_bytes", "--max-body-bytes"),),
    )
    """What one client may hold of the verb listener (`docs/hostile-input.md`)."""
    observe_limits: ListenerLimits = group(lambda: OBSERVE_LIMITS, "The observe listener's limits", prefix="observe-")
    """What one client may hold of an observe listener (`serve --observe-port`, a loop process's one listener)."""
    native_gangs: str = setting(
        "off",
        Choices(NATIVE_GANG_MODES),
        "give every TFJob naming the scheduler Kubernetes' own gang (Workload, PodGroup): off, on, or auto",
        commands=LOOPS,
    )
    """Only where the API server serves `scheduling.k8s.io/v1beta1` PodGroups (1.37); elsewhere the
    extender keeps its own barrier whatever this says (`docs/workload-api.md`). `on` says so as a warning,
    `auto` as an info line."""
    webhook: WebhookSettings = group(
        WebhookSettings,
        "The native gangs' admission webhook (TLS): its listener and certificates",
        prefix="webhook-",
        in_file=False,
        commands=LOOPS,
    )
    verbs_tls: VerbsTlsSettings = group(
        VerbsTlsSettings,
        "The certificates of kube-scheduler's calls to the verbs (mutual TLS), kept by the loops",
        prefix="verbs-tls-",
        in_file=False,
        commands=LOOPS,
    )
    webhook_limits: ListenerLimits = group(
        lambda: WEBHOOK_LIMITS, "The admission webhook listener's limits", prefix="webhook-", commands=LOOPS
    )
    """What one client may hold of the webhook's listener (`docs/hostile-input.md`)."""
    observe_openapi: bool = setting(
        False,
        Switch(),
        "serve /openapi.json (the debug routes' schema) on the observe listener, behind its tokens",
        in_file=False,
    )
    log_level: str = setting("info", Choices(LOG_LEVELS), "least severe log records written")
    log_format: str = setting(
        "text", Choices(LOG_FORMATS), "text lines, or one JSON object a line (ts, level, logger, msg, exc)"
    )
    log_repeat_interval_s: float = setting(
        30.0, SECONDS, "seconds during which a repeated warning or error is logged once (0: every one)"
    )
    """Repeated: the same logger and message template; the next one logged after them says how many were
    held back."""

    def __post_init__(self) -> None:
        check_declared(self)
