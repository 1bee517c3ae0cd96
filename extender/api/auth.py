"""Who may call an HTTP port once it is reachable from off the loopback address.

The verb listener and the observe listener are guarded apart, each by its own `AuthSettings`: the verb
listener's flags are `--tls-*` and `--auth-*`, the observe listener's `--observe-tls-*` and
`--observe-auth-*` (`flags` names the prefix in messages). On the observe listener the tokens guard only
the debug routes: `/metrics`, `/healthz` and `/readyz` stay open (`OBSERVE_OPEN_PATHS`).

The Deployment binds the verbs to 127.0.0.1 inside its pod, where only kube-scheduler reaches them, and
needs none of this. Serving off loopback (`--host 0.0.0.0`, a Service in front) calls for:
- TLS: `--tls-cert-file` and `--tls-key-file` (the listener terminates it: `tls_context` for the verb
  listener's own server, `uvicorn_tls_options` for the observe listener);
- client certificates: `--tls-client-ca-file` makes the handshake refuse any client without a
  certificate that CA signed. This is how kube-scheduler authenticates to an extender (its extender
  `tlsConfig.certFile` / `keyFile`): it can send no other credential;
- bearer tokens, checked per request on every route but `/healthz` and `/readyz`: `--auth-token-file`
  (tokens one per line, a mounted Secret; re-read when the file changes) or `--auth-token-review`
  (the API server's TokenReview authenticates the token, answers cached for `TOKEN_REVIEW_CACHE_S`;
  `--auth-audience` restricts the audiences, `--auth-allowed-user` the user names).
With both a client CA and a token source, a caller needs both. Binding off loopback with neither prints a
warning, as does sending tokens without TLS. A refused request gets a 401 with a JSON `error`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import os
import ssl
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from extender.config import AuthSettings

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Routes of the verb listener answered without a token: probes, which reveal nothing."""
OBSERVE_OPEN_PATHS = OPEN_PATHS | {"/metrics"}
"""Routes of the observe listener answered without a token: the probes and what Prometheus scrapes."""
TOKEN_REVIEW_CACHE_S = 60.0
"""Seconds a TokenReview answer (either way) is reused for the same token."""
TOKEN_REVIEW_CACHE_ENTRIES = 1024
"""Distinct tokens whose answers are kept before the cache starts afresh."""
TOKEN_FILE_RECHECK_S = 1.0
"""Seconds between looks at the token file's modification time."""
TOKEN_MAX_CHARS = 8192
"""Longer Authorization headers are refused unread."""

TokenCheck = Callable[[str], Awaitable[bool]]
Reviewer = Callable[[str, tuple[str, ...]], tuple[bool, str]]
"""(token, audiences) → (authenticated, user name), by the API server's TokenReview."""


def uvicorn_tls_options(auth: AuthSettings) -> dict[str, Any]:
    """uvicorn's keyword arguments for TLS (none without a certificate)."""
    if auth.tls_cert_file is None:
        return {}
    options: dict[str, Any] = {"ssl_certfile": str(auth.tls_cert_file), "ssl_keyfile": str(auth.tls_key_file)}
    if auth.tls_client_ca_file is not None:
        options |= {"ssl_ca_certs": str(auth.tls_client_ca_file), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options


def tls_context(auth: AuthSettings) -> ssl.SSLContext | None:
    """The server side of TLS `auth` asks for (None without a certificate): the same certificate, key and
    client CA `uvicorn_tls_options` gives uvicorn."""
    if auth.tls_cert_file is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(auth.tls_cert_file), str(auth.tls_key_file) if auth.tls_key_file else None)
    if auth.tls_client_ca_file is not None:
        context.load_verify_locations(str(auth.tls_client_ca_file))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def exposure_warnings(host: str, auth: AuthSettings) -> list[str]:
    """What an operator should hear before serving `host` with `auth`."""
    if _is_loopback(host):
        return []
    warnings = []
    if not auth.authenticates:
        warnings.append(
            f"serving on {host}, off the loopback address, with no authentication: anyone who reaches the port "
            "can call the verbs and read /debug (use --tls-client-ca-file, --auth-token-file or --auth-token-review)"
        )
    if auth.tls_cert_file is None:
        warnings.append(f"serving on {host} without TLS: requests and any bearer tokens travel in clear text")
    return warnings


def observe_findings(host: str, auth: AuthSettings, *, debug: bool, insecure: bool) -> tuple[list[str], list[str]]:
    """(problems that stop the start, warnings) of an observe listener on `host`: its debug routes
    (`debug`) off the loopback address need a token check unless `insecure` allows them without one."""
    problems = settings_problems(auth, "--observe-")
    warnings = []
    if debug and not auth.checks_tokens and not _is_loopback(host):
        if insecure:
            warnings.append(
                f"/debug and /ui on {host}, off the loopback address, with no authentication "
                "(--observe-debug-insecure): anyone who reaches the port reads the cluster's state"
            )
        else:
            problems.append(
                f"--observe-debug on {host}, off the loopback address, needs --observe-auth-token-file FILE or "
                "--observe-auth-token-review (or --observe-debug-insecure to serve /debug and /ui to anyone)"
            )
    if auth.checks_tokens and not debug:
        warnings.append("--observe-auth-* guard only /debug and /ui, which only --observe-debug serves")
    if debug and auth.checks_tokens and auth.tls_cert_file is None and not _is_loopback(host):
        warnings.append(
            f"observe listener on {host} without TLS: bearer tokens travel in clear text (--observe-tls-cert-file)"
        )
    return problems, warnings


def settings_problems(auth: AuthSettings, flags: str = "--") -> list[str]:
    """Combinations that cannot work, named by their flags (`flags`: `--` or `--observe-`)."""
    problems = []
    if (auth.tls_cert_file is None) != (auth.tls_key_file is None):
        problems.append(f"{flags}tls-cert-file and {flags}tls-key-file go together")
    if auth.tls_client_ca_file is not None and auth.tls_cert_file is None:
        problems.append(f"{flags}tls-client-ca-file needs {flags}tls-cert-file and {flags}tls-key-file")
    if (auth.audiences or auth.allowed_users) and not auth.token_review:
        problems.append(f"{flags}auth-audience and {flags}auth-allowed-user need {flags}auth-token-review")
    return problems


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenFile:
    """Bearer tokens listed in a file, one per line (blank lines and `#` comments skipped)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._looked_at = -TOKEN_FILE_RECHECK_S
        self._modified = -1
        self._tokens: tuple[bytes, ...] = ()
        self._reload()

    async def __call__(self, token: str) -> bool:
        self._reload()
        offered = token.encode()
        return any(hmac.compare_digest(offered, known) for known in self._tokens)

    def _reload(self) -> None:
        with self._lock:
            now = self._clock()
            if now - self._looked_at < TOKEN_FILE_RECHECK_S:
                return
            self._looked_at = now
            try:
                modified = os.stat(self._path).st_mtime_ns
                if modified != self._modified:
                    lines = self._path.read_text().splitlines()
                    self._tokens = tuple(
                        line.strip().encode() for line in lines if line.strip() and not line.startswith("#")
                    )
                    self._modified = modified
            except OSError:
                self._tokens = ()


@dataclass
class TokenReviews:
    """Bearer tokens the API server authenticates (TokenReview), answers cached per token."""

    review: Reviewer
    audiences: tuple[str, ...] = ()
    allowed_users: tuple[str, ...] = ()
    clock: Callable[[], float] = time.monotonic
    _answers: dict[bytes, tuple[float, bool]] = field(default_factory=dict)

    async def __call__(self, token: str) -> bool:
        digest = hashlib.sha256(token.encode()).digest()
        cached = self._answers.get(digest)
        if cached is not None and cached[0] > self.clock():
            return cached[1]
        try:
            authenticated, user = await asyncio.to_thread(self.review, token, self.audiences)
        except Exception:
            return False
        allowed = authenticated and (not self.allowed_users or user in self.allowed_users)
        if len(self._answers) >= TOKEN_REVIEW_CACHE_ENTRIES:
            self._answers.clear()
        self._answers[digest] = (self.clock() + TOKEN_REVIEW_CACHE_S, allowed)
        return allowed


class AuthGate:
    """ASGI middleware: a request passes with an accepted bearer token (or to an open path)."""

    def __init__(self, app: ASGIApp, check: TokenCheck, open_paths: frozenset[str] = OPEN_PATHS) -> None:
        self.app = app
        self.check = check
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        if token is not None and await self.check(token):
            await self.app(scope, receive, send)
            return
        body = orjson.dumps({"error": "a bearer token this server accepts is required"})
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization" and len(value) <= TOKEN_MAX_CHARS:
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def guarded(
    app: ASGIApp,
    auth: AuthSettings,
    reviewer: Reviewer | None,
    *,
    open_paths: frozenset[str] = OPEN_PATHS,
    flags: str = "--",
) -> ASGIApp:
    """`app` behind the token checks `auth` asks for (a token any of them accepts passes; `open_paths` need
    none); unchanged when it asks for none. `flags` names the flags' prefix in messages."""
    checks: list[TokenCheck] = []
    if auth.token_file is not None:
        checks.append(TokenFile(auth.token_file))
    if auth.token_review:
        if reviewer is None:
            raise ValueError(f"{flags}auth-token-review needs an API server (not --cluster-snapshot)")
        checks.append(TokenReviews(reviewer, auth.audiences, auth.allowed_users))
    if not checks:
        return app

    async def accepted(token: str) -> bool:
        for check in checks:
            if await check(token):
                return True
        return False

    return AuthGate(app, accepted, open_paths)
