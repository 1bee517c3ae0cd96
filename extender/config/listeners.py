"""What one HTTP listener allows its clients (`ListenerLimits`) and how it is secured (`AuthSettings`).

`Settings` holds one of each per listener: the verb listener's (`verb_limits`, `auth`; flags without a
prefix, as `--host` and `--port` are its own) and the observe listener's (`observe_limits`, `observe_auth`;
flags `--observe-*`). Each field is declared once with `setting` (`policy.core.setting_rules`), so its
flag, its config file key (`verb_limits:` and `observe_limits:` sections; TLS and tokens are per process,
flags only) and its line in `--help` come from the same place. A connection is *authenticated* once its
TLS client certificate or a bearer token of one of its requests was accepted; with no authentication
configured, none is. Bounded memory: each connection holds at most one request head, `max_backlog_bytes`
of requests read ahead and replies not yet written, and the body being read; all connections together at
most `max_buffered_bytes` of those.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from extender.config.rules import FilePath, Text, Words
from extender.policy.core.setting_rules import POSITIVE_SECONDS, Numbers, Switch, check_declared, setting

CONNECTIONS = Numbers(1, integer=True, unit="connections")
"""A number of connections, 1 or more."""
SPARE_CONNECTIONS = Numbers(0, integer=True, unit="connections")
"""A number of connections, 0 or more."""
BYTES = Numbers(1, integer=True, unit="bytes")
"""A size in bytes, 1 or more."""


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """What clients may hold of one HTTP listener: connections, bytes, time and rate (`extender.api.edge`)."""

    max_connections: int = setting(64, CONNECTIONS, "connections served at once")
    """kube-scheduler keeps one or two to the verb listener."""
    reserved_for_authenticated: int = setting(
        16,
        SPARE_CONNECTIONS,
        "of max_connections, slots only authenticated connections may hold (when the listener authenticates)",
    )
    """Unauthenticated or idle clients never keep kube-scheduler out."""
    max_connections_per_peer: int = setting(
        16, CONNECTIONS, "unauthenticated connections one client address may hold at once"
    )
    overflow_replies: int = setting(
        16, SPARE_CONNECTIONS, "connections past the limits still answered with a JSON 503 (past these: closed)"
    )
    """Such a connection's first request head is read and answered at once; past these, a newcomer takes the
    place of the one that has waited longest without sending a request head (closed unanswered), or is
    closed unanswered when every one has sent its head."""
    accepts_per_s: float = setting(
        200.0, Numbers(0.0, low_open=True, unit="per second"), "new connections accepted per second"
    )
    """A token bucket of one second's worth; the rest wait in the kernel's backlog."""
    requests_per_s: float = setting(
        0.0, Numbers(0.0, unit="per second"), "requests answered per second across the listener (0: no limit)"
    )
    """A token bucket of one second's worth; reading pauses while the bucket is empty."""
    max_line_bytes: int = setting(16 * 1024, BYTES, "longest request line or header line (longer: 414 or 431)")
    max_head_bytes: int = setting(64 * 1024, BYTES, "largest request head, request line and headers (larger: 431)")
    max_headers: int = setting(100, Numbers(1, integer=True, unit="headers"), "most header lines in one request")
    first_byte_timeout_s: float = setting(
        10.0, POSITIVE_SECONDS, "seconds a new connection may take, TLS handshake included, to begin its first request"
    )
    head_timeout_s: float = setting(
        10.0, POSITIVE_SECONDS, "seconds a request head may take to arrive once it has begun"
    )
    max_body_bytes: int = setting(3 * 2**20, BYTES, "largest request body")
    """5000 node names of the longest kind (253 characters) take 1.3 MiB, and a Pod at most 1.5 MiB (etcd's
    default object limit). With `nodeCacheCapable: false` (whole Node objects, ~12 KiB each) that holds a
    few hundred nodes: raise it for larger clusters."""
    body_timeout_s: float = setting(
        10.0, POSITIVE_SECONDS, "seconds a whole request may take to arrive (a verb then gets its Error)"
    )
    keep_alive_s: float = setting(120.0, POSITIVE_SECONDS, "seconds an idle connection stays open between requests")
    """Longer than Go's 90 s idle timeout, so kube-scheduler never reuses a connection the server has just
    closed."""
    max_backlog_bytes: int = setting(
        8 * 2**20, BYTES, "requests read ahead and replies not yet taken, per connection, before it stops reading"
    )
    max_buffered_bytes: int = setting(
        64 * 2**20, BYTES, "bodies being read, requests read ahead and replies not taken, over all connections"
    )
    """Over it, connections with requests queued stop reading."""

    def __post_init__(self) -> None:
        check_declared(self)


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
class AuthSettings:
    """TLS for the HTTP port and the bearer-token checks on it (`extender.api.auth` explains each)."""

    tls_cert_file: Path | None = setting(None, FilePath(), "serve HTTPS with this certificate (PEM)")
    tls_key_file: Path | None = setting(None, FilePath(), "the certificate's private key (PEM)")
    tls_client_ca_file: Path | None = setting(None, FilePath(), "require client certificates signed by this CA (PEM)")
    """kube-scheduler's extender `tlsConfig` `certFile`/`keyFile` present such a certificate."""
    token_file: Path | None = setting(
        None, FilePath(), "accept bearer tokens listed in this file, one a line", flag="auth-token-file"
    )
    token_review: bool = setting(
        False, Switch(), "accept bearer tokens the API server's TokenReview accepts", flag="auth-token-review"
    )
    audiences: tuple[str, ...] = setting(
        (), Words("AUDIENCE"), "an audience a reviewed token must have", flag="auth-audience"
    )
    allowed_users: tuple[str, ...] = setting(
        (), Words("USER"), "a user whose reviewed token passes", flag="auth-allowed-user"
    )
    """E.g. `system:serviceaccount:monitoring:prometheus`. A token review lets in only the users named here,
    members of `allowed_groups`, and those `access_review` allows: none of the three, no one."""
    allowed_groups: tuple[str, ...] = setting(
        (), Words("GROUP"), "a group whose members' reviewed tokens pass", flag="auth-allowed-group"
    )
    access_review: str | None = setting(
        None,
        Text(non_empty=True, optional=True, metavar="NAMESPACE/SERVICE"),
        "let a reviewed token pass when its user may get services/proxy of this Service (SubjectAccessReview)",
        flag="auth-access-review",
    )
    """Who may read through the API server's proxy to the listener's Service may read it directly: the
    cluster's own RBAC decides (e.g. a Role granting `get` on `services/proxy` with that resource name)."""

    def __post_init__(self) -> None:
        check_declared(self)

    @property
    def checks_tokens(self) -> bool:
        return self.token_file is not None or self.token_review

    @property
    def authenticates(self) -> bool:
        return self.checks_tokens or self.tls_client_ca_file is not None
