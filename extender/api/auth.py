"""Who may call an HTTP port once it is reachable from off the loopback address.

The verb listener and the observe listener are guarded apart, each by its own `AuthSettings`: the verb
listener's flags are `--tls-*` and `--auth-*`, the observe listener's `--observe-tls-*` and
`--observe-auth-*` (`flags` names the prefix in messages). The listener's connections check the tokens
(`extender.api.edge.connection`) on every path but the open ones: the probes (`OPEN_PATHS`), and on the
observe listener `/metrics` too (`OBSERVE_OPEN_PATHS`).

The Deployment binds the verbs to 127.0.0.1 inside its pod, where only kube-scheduler reaches them, and
needs none of this. Serving the verbs off loopback (`--host 0.0.0.0`, a Service in front) needs a way to
tell kube-scheduler from anyone else, and `serve` refuses to start without one (unless
`--verbs-insecure`):
- client certificates: `--tls-client-ca-file` (with `--tls-cert-file` and `--tls-key-file`, `tls_context`)
  makes the handshake refuse any client without a certificate that CA signed. This is how kube-scheduler
  authenticates to an extender (its extender `tlsConfig.certFile` / `keyFile`);
- bearer tokens, checked per request: `--auth-token-file` (tokens one per line, a mounted Secret; re-read
  when the file changes) or `--auth-token-review` (the API server's TokenReview authenticates the token;
  `TokenReviews` remembers answers and bounds how often it asks; `--auth-audience` restricts the
  audiences). A reviewed token passes only when its user is named (`--auth-allowed-user`), is in a named
  group (`--auth-allowed-group`), or may `get` the `services/proxy` of the Service `--auth-access-review`
  names (a SubjectAccessReview): deny by default, never "any authenticated identity" — a token review
  with none of the three does not start.
With both a client CA and a token source, a caller needs both. Sending tokens without TLS prints a
warning. A refused request gets a 401 with a JSON `error`, and its connection is closed.
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
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from extender.config import AuthSettings
from extender.policy.core.setting_rules import is_dns_label

OPEN_PATHS = frozenset({b"/healthz", b"/readyz"})
"""Routes of the verb listener answered without a token: probes, which reveal nothing."""
OBSERVE_OPEN_PATHS = OPEN_PATHS | {b"/metrics"}
"""Routes of the observe listener answered without a token: the probes and what Prometheus scrapes."""
TOKEN_REVIEW_CACHE_S = 60.0
"""Seconds an accepted TokenReview answer is reused for the same token."""
TOKEN_REVIEW_REFUSED_CACHE_S = 10.0
"""Seconds a refused TokenReview answer is reused for the same token."""
TOKEN_REVIEW_CACHE_ENTRIES = 1024
"""Distinct tokens whose answers are kept, each way (the oldest go first)."""
TOKEN_REVIEWS_PER_S = 10.0
"""TokenReviews a listener asks the API server for at most, per second (one second's worth at once)."""
TOKEN_FILE_RECHECK_S = 1.0
"""Seconds between looks at the token file's modification time."""
TOKEN_MAX_CHARS = 8192
"""Longer Authorization headers are refused unread."""

Identity = tuple[bool, str, tuple[str, ...]]
"""(authenticated, user name, groups), as the API server's TokenReview answers."""


class Reviewer(Protocol):
    """The API server's reviews: who a token belongs to, and whether a user may do something."""

    def __call__(self, token: str, audiences: tuple[str, ...]) -> Identity:
        """A TokenReview of `token`, for `audiences`."""

    def may_proxy(self, user: str, groups: tuple[str, ...], namespace: str, service: str) -> bool:
        """A SubjectAccessReview: whether `user` (in `groups`) may get `services/proxy` of the Service."""


def tls_context(auth: AuthSettings) -> ssl.SSLContext | None:
    """The server side of TLS `auth` asks for (None without a certificate): its certificate and key, and with
    a client CA, client certificates required."""
    if auth.tls_cert_file is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(auth.tls_cert_file), str(auth.tls_key_file) if auth.tls_key_file else None)
    if auth.tls_client_ca_file is not None:
        context.load_verify_locations(str(auth.tls_client_ca_file))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def verb_findings(host: str, auth: AuthSettings, *, insecure: bool) -> tuple[list[str], list[str]]:
    """(problems that stop the start, warnings) of the verb listener on `host` with `auth`: off the loopback
    address it needs client certificates or bearer tokens, unless `insecure` allows it without."""
    problems = settings_problems(auth)
    warnings = []
    if not _is_loopback(host) and not auth.authenticates:
        if insecure:
            warnings.append(
                f"serving the verbs on {host}, off the loopback address, with no authentication "
                "(--verbs-insecure): anyone who reaches the port can call them"
            )
        else:
            problems.append(
                f"--host {host} is off the loopback address: the verbs need --tls-client-ca-file (kube-scheduler's "
                "client certificate), --auth-token-file FILE or --auth-token-review (or --verbs-insecure to serve "
                "them to anyone)"
            )
    if not _is_loopback(host) and auth.checks_tokens and auth.tls_cert_file is None:
        warnings.append(f"serving on {host} without TLS: bearer tokens travel in clear text (--tls-cert-file)")
    return problems, warnings


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
    who = (auth.allowed_users, auth.allowed_groups, auth.access_review)
    if (auth.audiences or any(who)) and not auth.token_review:
        problems.append(
            f"{flags}auth-audience, {flags}auth-allowed-user, {flags}auth-allowed-group and "
            f"{flags}auth-access-review need {flags}auth-token-review"
        )
    if auth.token_review and not any(who):
        problems.append(
            f"{flags}auth-token-review lets no one in by itself: name who may pass ({flags}auth-allowed-user, "
            f"{flags}auth-allowed-group) or ask the API server ({flags}auth-access-review NAMESPACE/SERVICE)"
        )
    if auth.access_review is not None and access_review_target(auth.access_review) is None:
        problems.append(f"{flags}auth-access-review {auth.access_review!r} is not NAMESPACE/SERVICE")
    return problems


def access_review_target(text: str) -> tuple[str, str] | None:
    """(namespace, Service) of `--auth-access-review NAMESPACE/SERVICE`, None if it is not that."""
    namespace, slash, service = text.partition("/")
    names = (namespace, service)
    if not slash or not all(is_dns_label(name) for name in names):
        return None
    return namespace, service


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TokenFile:
    """Bearer tokens listed in a file, one per line (blank lines and `#` comments, indented or not, skipped);
    re-read when the file changes."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._looked_at = -TOKEN_FILE_RECHECK_S
        self._modified = -1
        self._tokens: tuple[bytes, ...] = ()
        self._reload()

    def __call__(self, token: str) -> bool:
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
                    lines = (line.strip() for line in self._path.read_text().splitlines())
                    self._tokens = tuple(line.encode() for line in lines if line and not line.startswith("#"))
                    self._modified = modified
            except OSError:
                self._tokens = ()


@dataclass
class TokenReviews:
    """Bearer tokens the API server authenticates (TokenReview) as a user who may pass: one named, one in a
    named group, or one a SubjectAccessReview allows (`access`: namespace and Service). An answer is reused
    for the same token: an accepted one for `TOKEN_REVIEW_CACHE_S`, a refused one for
    `TOKEN_REVIEW_REFUSED_CACHE_S` (in a cache of its own, so a flood of bad tokens never evicts a good
    one); at most `TOKEN_REVIEWS_PER_S` tokens a second are reviewed, a token past that rate is refused
    unasked (and not remembered)."""

    review: Reviewer
    audiences: tuple[str, ...] = ()
    allowed_users: tuple[str, ...] = ()
    allowed_groups: tuple[str, ...] = ()
    access: tuple[str, str] | None = None
    clock: Callable[[], float] = time.monotonic
    _accepted: OrderedDict[bytes, float] = field(default_factory=OrderedDict)
    _refused: OrderedDict[bytes, float] = field(default_factory=OrderedDict)
    _allowance: float = TOKEN_REVIEWS_PER_S
    _allowance_at: float = 0.0

    def known(self, token: str) -> bool | None:
        """The remembered answer for `token`, or None: it must be asked (`accepts`)."""
        digest = _digest(token)
        now = self.clock()
        for answers, answer in ((self._accepted, True), (self._refused, False)):
            until = answers.get(digest)
            if until is not None:
                if until > now:
                    return answer
                del answers[digest]
        return None

    async def accepts(self, token: str) -> bool:
        known = self.known(token)
        if known is not None:
            return known
        if not self._take_allowance():
            return False
        try:
            allowed = await asyncio.to_thread(self._passes, token)
        except Exception:
            return False
        answers, ttl = (
            (self._accepted, TOKEN_REVIEW_CACHE_S) if allowed else (self._refused, TOKEN_REVIEW_REFUSED_CACHE_S)
        )
        answers[_digest(token)] = self.clock() + ttl
        while len(answers) > TOKEN_REVIEW_CACHE_ENTRIES:
            answers.popitem(last=False)
        return allowed

    def _passes(self, token: str) -> bool:
        authenticated, user, groups = self.review(token, self.audiences)
        if not authenticated:
            return False
        if user in self.allowed_users or set(groups) & set(self.allowed_groups):
            return True
        return self.access is not None and self.review.may_proxy(user, groups, *self.access)

    def _take_allowance(self) -> bool:
        now = self.clock()
        self._allowance = min(TOKEN_REVIEWS_PER_S, self._allowance + (now - self._allowance_at) * TOKEN_REVIEWS_PER_S)
        self._allowance_at = now
        if self._allowance < 1.0:
            return False
        self._allowance -= 1.0
        return True


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class TokenChecks:
    """The token checks of one listener: a token any of them accepts passes."""

    def __init__(self, files: list[TokenFile], reviews: TokenReviews | None) -> None:
        self.files = files
        self.reviews = reviews

    def known(self, token: str) -> bool | None:
        """Whether `token` passes, when that is known without asking the API server; None: `accepts` asks."""
        if any(check(token) for check in self.files):
            return True
        if self.reviews is None:
            return False
        return self.reviews.known(token)

    async def accepts(self, token: str) -> bool:
        known = self.known(token)
        if known is not None:
            return known
        assert self.reviews is not None
        return await self.reviews.accepts(token)


def bearer_token(authorization: bytes | None) -> str | None:
    """The token of an `Authorization: Bearer …` header value (None: none, or longer than `TOKEN_MAX_CHARS`)."""
    if authorization is None or len(authorization) > TOKEN_MAX_CHARS:
        return None
    scheme, _, token = authorization.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def token_checks(auth: AuthSettings, reviewer: Reviewer | None, *, flags: str = "--") -> TokenChecks | None:
    """The token checks `auth` asks for, None when it asks for none. `flags` names the flags' prefix in
    messages; a `ValueError` says why they cannot be built."""
    files = [TokenFile(auth.token_file)] if auth.token_file is not None else []
    reviews = None
    if auth.token_review:
        if reviewer is None:
            raise ValueError(f"{flags}auth-token-review needs an API server (not --cluster-snapshot)")
        access = access_review_target(auth.access_review) if auth.access_review else None
        reviews = TokenReviews(reviewer, auth.audiences, auth.allowed_users, auth.allowed_groups, access)
    if not files and reviews is None:
        return None
    return TokenChecks(files, reviews)
