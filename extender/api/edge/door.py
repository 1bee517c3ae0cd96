"""The door of one listener: which connections are served, how fast new ones come in, how much they hold.

- **Slots.** At most `max_connections` connections are served at once. When the listener authenticates
  (tokens or client certificates), unauthenticated ones hold at most `max_connections −
  reserved_for_authenticated` of them, and one client address at most `max_connections_per_peer`, so
  neither idle sockets nor one noisy client keep kube-scheduler (or a token holder) out.
- **Displacement.** A newcomer that finds no slot takes the one of the oldest *fresh* connection — one that
  has not finished a request in `FRESH_GRACE_S` since it was accepted (sockets opened and left idle, or
  dribbling a head) — which is closed. A connection that finished a request, or authenticated, is never
  displaced. Without authentication every client is equal, and this is what lets kube-scheduler in past a
  pile of idle sockets.
- **Overflow.** Past the slots, `overflow_replies` connections are read until their first request and
  answered with a JSON 503 — unless that request authenticates and a slot is free or reserved for it. When
  the overflow is full, a newcomer takes the place of the overflow connection that has waited longest
  without sending a whole request head, which is closed unanswered: a client that sends its request at
  once (kube-scheduler, a token holder) always gets it read, however many idle sockets came before. Only
  when every overflow connection has sent its head is a newcomer closed unanswered (refusing costs a
  close, nothing more).
- **Rates.** New connections are accepted at `accepts_per_s` and requests answered at `requests_per_s`
  (token buckets holding one second's worth; 0: unlimited); the listener waits rather than refuses.
- **Bytes.** The bytes of request heads and bodies held and of replies not yet taken, over every
  connection; over `max_buffered_bytes`, unproven connections stop reading.

Nothing here touches a socket: connections tell the door what they do and the door answers with a place
or a wait.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from extender.api.edge.states import Place, Standing
from extender.config import ListenerLimits

TOKEN_SLACK = 1e-9
"""Tokens short of a whole one that still count as one (the clock's rounding)."""
FRESH_GRACE_S = 1.0
"""Seconds a new connection may take to finish its first request before a newcomer may displace it
(kube-scheduler writes its request as soon as it has connected)."""


class Tenant(Protocol):
    """What the door knows of a connection."""

    peer: str
    standing: Standing
    place: Place
    accepted_at: float

    def displace(self) -> None:
        """Close at once: a newcomer takes its place."""


class TokenBucket:
    """`rate` tokens a second, at most one second's worth held; `rate` 0: always a token."""

    def __init__(self, rate: float, clock: Callable[[], float]) -> None:
        self.rate = rate
        self.clock = clock
        self.tokens = max(rate, 1.0)
        self.filled_at = clock()

    def wait(self) -> float:
        """Take a token: 0.0 if one was there, else the seconds until one is (nothing taken then)."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        self.tokens = min(max(self.rate, 1.0), self.tokens + (now - self.filled_at) * self.rate)
        self.filled_at = now
        if self.tokens >= 1.0 - TOKEN_SLACK:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class Door:
    """The admission and accounting of one listener (see the module's text)."""

    def __init__(self, limits: ListenerLimits, *, authenticates: bool, clock: Callable[[], float] = time.monotonic):
        self.limits = limits
        self.authenticates = authenticates
        self.clock = clock
        self.served: set[Tenant] = set()
        self.overflow: set[Tenant] = set()
        self.unheard: dict[Tenant, None] = {}
        """Overflow connections that have not sent a whole request head yet, oldest first."""
        self.unauthenticated_by_peer: Counter[str] = Counter()
        self.fresh: dict[Tenant, None] = {}
        """Served connections that have finished no request yet, oldest first."""
        self.accepts = TokenBucket(limits.accepts_per_s, clock)
        self.requests = TokenBucket(limits.requests_per_s, clock)
        self.buffered = 0

    @property
    def unauthenticated_limit(self) -> int:
        reserved = self.limits.reserved_for_authenticated if self.authenticates else 0
        return max(1, self.limits.max_connections - reserved)

    def unauthenticated_served(self) -> int:
        return sum(1 for tenant in self.served if tenant.standing is not Standing.AUTHENTICATED)

    def admit(self, tenant: Tenant) -> Place:
        """The place of a connection just accepted (its `standing` says whether its TLS client certificate
        authenticated it already); a fresh connection it displaces is closed."""
        tenant.accepted_at = self.clock()
        if self._fits(tenant) or self._displace_for(tenant):
            self._serve(tenant)
            return Place.SLOT
        if len(self.overflow) < self.limits.overflow_replies or self._displace_unheard():
            self.overflow.add(tenant)
            self.unheard[tenant] = None
            return Place.OVERFLOW
        return Place.REFUSED

    def _displace_unheard(self) -> bool:
        """Close the overflow connection that has waited longest without sending a request head."""
        if not self.unheard:
            return False
        old = next(iter(self.unheard))
        self.release(old)
        old.displace()
        return True

    def _fits(self, tenant: Tenant) -> bool:
        if len(self.served) >= self.limits.max_connections:
            return False
        if tenant.standing is Standing.AUTHENTICATED:
            return True
        return (
            self.unauthenticated_served() < self.unauthenticated_limit
            and self.unauthenticated_by_peer[tenant.peer] < self.limits.max_connections_per_peer
        )

    def _displace_for(self, tenant: Tenant) -> bool:
        """Close the oldest fresh connection past its grace so that `tenant` takes its place: one of the same
        client when that client is at its own limit, else any."""
        peer_full = (
            tenant.standing is not Standing.AUTHENTICATED
            and self.unauthenticated_by_peer[tenant.peer] >= self.limits.max_connections_per_peer
        )
        due = self.clock() - FRESH_GRACE_S
        for old in self.fresh:
            if old.accepted_at > due:
                return False
            if peer_full and old.peer != tenant.peer:
                continue
            self.release(old)
            old.displace()
            return True
        return False

    def _serve(self, tenant: Tenant) -> None:
        tenant.place = Place.SLOT
        self.served.add(tenant)
        if tenant.standing is Standing.FRESH:
            self.fresh[tenant] = None
        if tenant.standing is not Standing.AUTHENTICATED:
            self.unauthenticated_by_peer[tenant.peer] += 1

    def heard(self, tenant: Tenant) -> None:
        """`tenant` sent a whole request head: in the overflow, it is no longer displaced for a newcomer."""
        self.unheard.pop(tenant, None)

    def proven(self, tenant: Tenant) -> None:
        """A request was answered on `tenant`: it can no longer be displaced."""
        self.fresh.pop(tenant, None)
        if tenant.standing is Standing.FRESH:
            tenant.standing = Standing.PROVEN

    def authenticated(self, tenant: Tenant) -> bool:
        """`tenant` presented an accepted credential; False when it is in the overflow and no slot is free for it."""
        if tenant.standing is Standing.AUTHENTICATED:
            return tenant.place is Place.SLOT
        if tenant.place is Place.SLOT:
            self._forget_unauthenticated(tenant)
            self.fresh.pop(tenant, None)
            tenant.standing = Standing.AUTHENTICATED
            return True
        tenant.standing = Standing.AUTHENTICATED
        if len(self.served) < self.limits.max_connections or self._displace_for(tenant):
            self.overflow.discard(tenant)
            self.unheard.pop(tenant, None)
            self._serve(tenant)
            return True
        return False

    def release(self, tenant: Tenant) -> None:
        """`tenant` is closed: its place is free."""
        if tenant in self.served:
            self.served.discard(tenant)
            self.fresh.pop(tenant, None)
            if tenant.standing is not Standing.AUTHENTICATED:
                self._forget_unauthenticated(tenant)
        self.overflow.discard(tenant)
        self.unheard.pop(tenant, None)
        tenant.place = Place.REFUSED

    def _forget_unauthenticated(self, tenant: Tenant) -> None:
        self.unauthenticated_by_peer[tenant.peer] -= 1
        if self.unauthenticated_by_peer[tenant.peer] <= 0:
            del self.unauthenticated_by_peer[tenant.peer]

    def hold(self, size: int) -> None:
        """`size` more (or, negative, fewer) bytes held by the listener's connections."""
        self.buffered += size

    @property
    def over_buffered(self) -> bool:
        return self.buffered > self.limits.max_buffered_bytes
