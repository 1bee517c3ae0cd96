"""The reads the command-line tools make of an API server (`preflight`, `replay`), one request at a time
through `client.api_call`: the server's version first, which tells a server that cannot be asked
(`Unreachable`: no answer, or credentials refused) from one that refuses a read later; a list, page by
page; an object that may not exist. `CONNECTION_ERRORS` is what the client raises when the connection
cannot be made or breaks, for the callers to turn into `Unreachable` around their reads.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

import urllib3
from kubernetes import client

from extender.k8s.client import ApiCallError, api_call

PAGE_SIZE = 500
"""Objects per page of a list, in objects."""
NOT_FOUND = 404
CREDENTIALS_REFUSED = 401
CONNECTION_ERRORS = (urllib3.exceptions.HTTPError, OSError)
"""What the client raises when the API server cannot be reached or the connection breaks."""


class Unreachable(RuntimeError):
    """The API server could not be asked: no connection, or it refused the credentials."""


def server_version(api: client.ApiClient) -> dict[str, Any]:
    """`GET /version`; `Unreachable` when it is not answered (a connection error is the caller's to turn into
    `Unreachable`, around all its reads)."""
    try:
        return dict(api_call(api, "GET", "/version") or {})
    except ApiCallError as error:
        if error.status == CREDENTIALS_REFUSED:
            raise Unreachable(f"the API server refused the credentials: {error}") from error
        raise Unreachable(f"the API server did not answer GET /version: {error}") from error


def list_all(api: client.ApiClient, path: str, **query: str) -> list[dict[str, Any]]:
    """Every object of a list, page by page."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        parameters = {**query, "limit": str(PAGE_SIZE), **({"continue": token} if token else {})}
        page = api_call(api, "GET", f"{path}?{urllib.parse.urlencode(parameters)}") or {}
        items += page.get("items") or []
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return items


def get_or_none(api: client.ApiClient, path: str) -> dict[str, Any] | None:
    """The object at `path`, None when there is none (404)."""
    try:
        found: dict[str, Any] | None = api_call(api, "GET", path)
    except ApiCallError as error:
        if error.status == NOT_FOUND:
            return None
        raise
    return found
