"""Service settings: where to listen, where the cluster is, limits of the HTTP layer, and the policy's
settings. Built once from the command line (and a policy file, `load_policy_file`) and passed explicitly;
nothing reads it from a global."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.policy.core.setting_rules import SettingValueError, policy_from_mapping
from extender.policy.core.settings import PolicySettings


class SettingsError(ValueError):
    """Settings the process cannot start with; the message is one line naming what to change."""


def load_policy_file(path: Path) -> PolicySettings:
    """The policy settings a YAML file gives: a mapping whose keys are `PolicySettings`' field names (every
    one optional; an empty file gives the defaults). Raises `SettingsError` naming the file and the key."""
    try:
        values = yaml.safe_load(path.read_text())
    except OSError as error:
        raise SettingsError(f"policy file {path}: cannot be read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise SettingsError(f"policy file {path}: not valid YAML{at}: {problem}") from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise SettingsError(f"policy file {path}: expected a mapping of setting names to values, not {values!r:.80}")
    try:
        return policy_from_mapping(values)
    except SettingValueError as error:
        raise SettingsError(f"policy file {path}: {error}") from None


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """What clients may hold of one HTTP listener: connections, bytes, time and rate (`extender.api.edge`).

    A connection is *authenticated* once its TLS client certificate or a bearer token of one of its requests
    was accepted; with no authentication configured, none is. Bounded memory: each connection holds at most
    one request head, `max_backlog_bytes` of requests read ahead and replies not yet written, and the body
    being read; all connections together at most `max_buffered_bytes` of those."""

    max_connections: int = 64
    """Connections served at once (kube-scheduler keeps one or two to the verb listener)."""
    reserved_for_authenticated: int = 16
    """Of `max_connections`, slots only authenticated connections may hold (when the listener authenticates):
    unauthenticated or idle clients never keep kube-scheduler out."""
    max_connections_per_peer: int = 16
    """Unauthenticated connections one client address may hold at once."""
    overflow_replies: int = 16
    """Connections past the limits that are still read (their first request head) and answered with a JSON
    503 at once; past these, a new connection is closed unanswered."""
    accepts_per_s: float = 200.0
    """New connections accepted per second (a token bucket of one second's worth); the rest wait in the
    kernel's backlog."""
    requests_per_s: float = 0.0
    """Requests answered per second across the listener (a token bucket of one second's worth); 0: no
    limit. Reading pauses while the bucket is empty."""
    max_line_bytes: int = 16 * 1024
    """Longest request line, or header line, bytes; longer is answered 431 (a header) or 414 (the target)."""
    max_head_bytes: int = 64 * 1024
    """Largest request head (request line and every header), bytes; larger is answered 431 and closed."""
    max_headers: int = 100
    """Most header lines in one request; more is answered 431 and closed."""
    first_byte_timeout_s: float = 10.0
    """Seconds a new connection may take (its TLS handshake included) before its first request begins."""
    head_timeout_s: float = 10.0
    """Seconds a request head may take to arrive once it has begun (one byte a second cannot hold it open)."""
    max_body_bytes: int = 3 * 2**20
    """Largest request body, bytes: 5000 node names of the longest kind (253 characters) take 1.3 MiB, and a
    Pod at most 1.5 MiB (etcd's default object limit). With `nodeCacheCapable: false` (whole Node objects,
    ~12 KiB each) that holds a few hundred nodes: raise it (`--max-body-bytes`) for larger clusters."""
    body_timeout_s: float = 10.0
    """Seconds a whole request may take to arrive; a verb then gets its `Error` (a stalled client cannot hold
    a request open)."""
    keep_alive_s: float = 120.0
    """Seconds an idle connection stays open between requests; longer than Go's 90 s idle timeout, so
    kube-scheduler never reuses a connection the server has just closed."""
    max_backlog_bytes: int = 8 * 2**20
    """Bytes of pipelined requests read ahead and of replies not yet taken by the client, per connection,
    before the connection stops reading."""
    max_buffered_bytes: int = 64 * 2**20
    """Bytes of request bodies being read, requests read ahead and replies not yet taken, over every
    connection of the listener; over it, connections with requests queued stop reading."""


VERB_LIMITS = ListenerLimits()
OBSERVE_LIMITS = ListenerLimits(
    max_connections=32,
    reserved_for_authenticated=8,
    max_connections_per_peer=8,
    accepts_per_s=100.0,
    requests_per_s=50.0,
    max_body_bytes=64 * 1024,
    keep_alive_s=75.0,
    max_backlog_bytes=4 * 2**20,
    max_buffered_bytes=16 * 2**20,
)


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8888
    observe_host: str = "127.0.0.1"
    """Address of the read-only observe listener (`/metrics`, `/debug`, `/ui`; no verbs)."""
    observe_port: int = 0
    """Port of the observe listener; 0: no observe listener."""
    observe_debug: bool = False
    """Serve `/debug/*` and `/ui` on the observe listener too (by default it serves only `/metrics`,
    `/healthz` and `/readyz`), behind `observe_auth`'s token checks."""
    observe_debug_insecure: bool = False
    """Allow `observe_debug` off the loopback address without any token check."""
    observe_auth: AuthSettings = field(default_factory=lambda: AuthSettings())
    """TLS of the observe listener and the token checks on its debug routes (never on `/metrics`, `/healthz`,
    `/readyz`); separate from `auth`, which guards the verb listener only."""
    kubeconfig: str | None = None
    """Path of a kubeconfig; None means in-cluster credentials (or the default kubeconfig)."""
    cluster_snapshot: Path | None = None
    """Serve from this file instead of an API server (offline mode)."""
    decision_history: int = 256
    """How many recent decisions `/debug/decisions` keeps."""
    decision_history_nodes: int = 50_000
    """How many node entries (feasible, failed, scored, victims) the kept decisions may hold together."""
    debug_chunk_objects: int = 16
    """Objects rendered between two hand-backs of the event loop in the large `/debug` documents (each
    step stays well under a millisecond, so the verbs are answered in between)."""
    debug_render_share: float = 0.2
    """Largest share of the process's time the streamed `/debug` documents take while they render: after
    each step the stream pauses (1 / share − 1) times as long as the step took, and one document renders
    at a time, so a dashboard polling `/debug/state` leaves kube-scheduler's calls their latency."""
    queue_explained_gangs: int = 50
    """Gangs `/debug/queue` plans to say what each waits for, highest rank first (each costs one placement
    unless its failed plan still holds); the rest are listed with their rank only."""
    shown_loop_actions: int = 50
    """Latest scaler actions and shadow plans shown by `/debug/jobs` and the page."""
    switch_interval_s: float = 0.001
    """Seconds a thread may hold the interpreter while another waits for it (Python's default is 0.005): the
    watches and any loops running in this process hand the interpreter to a waiting verb within this."""
    shutdown_grace_s: float = 15.0
    """Seconds a stopping verb listener waits for the replies to requests it has already read (a gang
    member waiting for the watch included) before it closes the connections left; under Kubernetes'
    default 30 s termination grace period."""
    model_catch_up_s: float = 0.5
    """Longest a `filter` call waits, deciding again every `model_catch_up_poll_s`, for the watch to
    deliver a gang member kube-scheduler asks about, or members of a gang it gates (so they exist), that
    the model has not seen yet; then it decides on what it has, read-only for a pod it never saw."""
    model_catch_up_poll_s: float = 0.01
    """Seconds between two such decisions."""
    policy: PolicySettings = field(default_factory=PolicySettings)
    with_scaler: bool = False
    """Run the scaler loop in the extender's process (`serve --with-scaler`)."""
    with_loops: bool = True
    """Run the preemption loop in the extender's process (`serve`, unless `--no-loops`: then the loops run in
    their own process, `tfjob-extender loops`)."""
    dry_run: bool = False
    """Shadow mode: the preemption loop and the scaler plan as usual and show what they would do, but never
    act on the cluster nor change the model (`--dry-run`)."""
    scaler: ScalerSettings = field(default_factory=lambda: ScalerSettings())
    preemption_loop: PreemptionLoopSettings = field(default_factory=PreemptionLoopSettings)
    """How the preemption loop runs: its interval, per-tick limits and retry delays (its policy is in
    `policy`)."""
    auth: AuthSettings = field(default_factory=lambda: AuthSettings())
    """TLS and who may call the verb listener (see `extender.api.auth`); nothing by default (loopback)."""
    verbs_insecure: bool = False
    """Serve the verb listener off the loopback address with neither TLS client certificates nor bearer
    tokens (`--verbs-insecure`); without it `serve` refuses to start that way."""
    verb_limits: ListenerLimits = VERB_LIMITS
    """What one client may hold of the verb listener (`docs/hostile-input.md`)."""
    observe_limits: ListenerLimits = OBSERVE_LIMITS
    """What one client may hold of an observe listener (`serve --observe-port`, a loop process's one listener)."""
    observe_openapi: bool = False
    """Serve `/openapi.json` (the debug routes' schema) on the observe listener, behind its token checks."""
    log_repeat_interval_s: float = 30.0
    """Seconds during which a warning or error repeated with the same logger and message template is
    logged once; the next one logged after them says how many were held back."""


@dataclass(frozen=True, slots=True)
class ScalerSettings:
    """How the scaler loop runs and elects its one active instance (its policy is in `PolicySettings`)."""

    interval_s: float = 2.0
    """Seconds between scaler ticks."""
    lease_namespace: str = "tfjob-system"
    """Namespace of the scaler's `coordination.k8s.io` Lease."""
    lease_name: str = "tfjob-extender-scaler"
    lease_duration_s: int = 15
    """Seconds a Lease holder that stopped renewing keeps it before another instance takes over."""
    lease_retry_period_s: float = 2.0
    """Seconds between calls to the API server about the Lease, however often the loops ask; the holder
    acts on a renewal this long at most (capped at a quarter of the duration)."""
    identity: str = ""
    """This instance's name in the Lease (default: host name, process id and a random suffix)."""


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """TLS for the HTTP port and the bearer-token checks on it (`extender.api.auth` explains each)."""

    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    token_file: Path | None = None
    token_review: bool = False
    audiences: tuple[str, ...] = ()
    allowed_users: tuple[str, ...] = ()
    """User names (e.g. `system:serviceaccount:monitoring:prometheus`) a reviewed token must belong to;
    empty: any user the API server authenticates."""

    @property
    def checks_tokens(self) -> bool:
        return self.token_file is not None or self.token_review

    @property
    def authenticates(self) -> bool:
        return self.checks_tokens or self.tls_client_ca_file is not None
