"""Whether a request read in full may be answered: the door's overflow, the listener's bearer tokens.

A connection asks `token_refused` once a request's head is read (a token known to be refused is answered
before the body is read), and `admission` for the request at the head of its queue. The answer is a refusal (a JSON
reply that closes the connection), `AskReviews` (the token needs the API server's TokenReview: the
connection asks in a task and then asks again, when the answer is remembered), or None: answer it. A
connection in the door's overflow is answered with a 503 unless its request authenticates and the door
then finds it a slot; on a listener with tokens, a path that is not open needs one the checks accept
(401). A request that passes authenticates its connection with the door.
"""

from __future__ import annotations

from dataclasses import dataclass

import httptools

from extender.api.auth import TokenChecks, bearer_token
from extender.api.edge.door import Door, Tenant
from extender.api.edge.encoding import Reply, Request, error_for, json_error
from extender.api.edge.states import Place

UNAUTHENTICATED = "a bearer token this server accepts is required"


@dataclass(frozen=True, slots=True)
class AskReviews:
    """The token must be asked of the API server before the request can be admitted."""

    token: str


def admission(
    request: Request,
    path: bytes,
    tenant: Tenant,
    door: Door,
    tokens: TokenChecks | None,
    open_paths: frozenset[bytes],
) -> Reply | AskReviews | None:
    """A refusal of `request` on `path`, `AskReviews`, or None: it may be answered (see the module's text)."""
    needs_token = tokens is not None and path not in open_paths
    if tokens is not None and (needs_token or tenant.place is Place.OVERFLOW):
        token = bearer_token(request.header(b"authorization"))
        known = tokens.known(token) if token is not None else False
        if known is None:
            assert token is not None
            return AskReviews(token)
        if known and not door.authenticated(tenant):
            return over_limit(path, door)
        if not known and needs_token:
            return unauthenticated()
    if tenant.place is Place.OVERFLOW:
        return over_limit(path, door)
    return None


def token_refused(
    request: Request, tenant: Tenant, door: Door, tokens: TokenChecks | None, open_paths: frozenset[bytes]
) -> bool:
    """Whether `request`, its head read, carries a token already known to be refused on a path that needs
    one: it is refused before its body is read. A token known to pass authenticates `tenant` at once."""
    if tokens is None:
        return False
    try:
        needs_token = request.path() not in open_paths
    except httptools.HttpParserInvalidURLError:
        return False
    token = bearer_token(request.header(b"authorization"))
    known = tokens.known(token) if token is not None else False
    if known:
        door.authenticated(tenant)
    return needs_token and known is False


def over_limit(path: bytes, door: Door) -> Reply:
    limit = door.limits.max_connections
    return error_for(path, 503, f"over the limit of {limit} connections served at once; try again")


def unauthenticated() -> Reply:
    return json_error(401, UNAUTHENTICATED, close=True, headers=((b"www-authenticate", b"Bearer"),))
