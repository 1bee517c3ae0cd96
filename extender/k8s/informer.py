"""List+watch of every kind the cluster model follows, one daemon thread per kind.

Each loop lists the collection (paginated) into the model — the first time page by page as the pages
arrive, later by replacing the kind with the full list — and marks the kind synced, then watches from the
list's resourceVersion, applying ADDED / MODIFIED / DELETED events and following BOOKMARKs. A kind served
under one of several versions (Kubernetes' own PodGroup) is first looked up in the API server's discovery
documents (`extender.k8s.discovery`). A watch that ends normally is restarted from the last
resourceVersion; a `410 Gone` (as an HTTP status or an ERROR event) means that version has been compacted
away, so the loop lists again instead of resuming from a stale version. A broken watch marks its kind
unsynced until the list is done again, and attempts back off exponentially with jitter, at most a second
apart. A kind served by a CustomResourceDefinition the cluster lacks (404), or by an API version it does
not serve, counts as synced and empty, and is looked for again periodically. Objects are decoded as raw
JSON (orjson); the client's typed models are never built, they are too slow for thousands of pods.
`problems` tells, per kind not listed yet or broken, why its last attempt failed (an RBAC refusal is said
in so many words), for `/readyz`.
"""

from __future__ import annotations

import gc
import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from extender.k8s.discovery import served_resource_type
from extender.k8s.pages import prefetched_pages
from extender.state.feed import ModelFeed
from extender.state.kinds import RESOURCE_TYPES, Kind, ResourceType

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class InformerTimings:
    list_page_size: int = 500
    """Objects per list page."""
    watch_timeout_s: int = 300
    """Server-side watch duration before it is renewed."""
    read_timeout_s: float = 10.0
    """Client read timeout; the loop notices a stop request at least this often."""
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 1.0
    """Longest wait between attempts to reach the API server: a restarted one is seen within a second or
    two (the model answers `cache not synced` meanwhile: no decision is made on a model that missed events)."""
    missing_kind_recheck_s: float = 30.0
    """How often a kind whose CRD is absent is looked for again."""


class StatusError(Exception):
    """The API server answered with a status other than 200."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class Informers:
    """Starts and stops one list+watch loop per resource type."""

    def __init__(
        self,
        api_client: ApiClient,
        state: ModelFeed,
        *,
        timings: InformerTimings = InformerTimings(),
        resource_types: tuple[ResourceType, ...] = RESOURCE_TYPES,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._api = api_client
        self._state = state
        self._timings = timings
        self._types = resource_types
        self._jitter = jitter
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._fed: set[Kind] = set()
        """Kinds whose list has begun feeding the model (a list that failed half way is redone whole)."""
        self._problems: dict[Kind, str] = {}
        """Kind → why its last list or watch failed, until it is listed again."""

    def problems(self) -> dict[str, str]:
        """Kind → why its last list or watch failed, for every kind not listed since."""
        return {kind.value: problem for kind, problem in dict(self._problems).items()}

    def start(self) -> None:
        for resource_type in self._types:
            thread = threading.Thread(
                target=self._run, args=(resource_type,), name=f"informer-{resource_type.plural}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 15.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads.clear()

    def _run(self, resource_type: ResourceType) -> None:
        delay = self._timings.backoff_initial_s
        while not self._stop.is_set():
            try:
                served = served_resource_type(resource_type, self._get_json)
                if served is None:
                    self._absent(resource_type)
                version = self._list(served) if served is not None else None
                self._problems.pop(resource_type.kind, None)
                if served is None or version is None:
                    self._stop.wait(self._timings.missing_kind_recheck_s)
                    continue
                delay = self._timings.backoff_initial_s
                self._watch_until_gone(served, version)
            except Gone:
                self._state.mark_unsynced(resource_type.kind)
                log.info("%s: resourceVersion expired, listing again", resource_type.plural)
            except (StatusError, ApiException, HTTPError, OSError, ValueError) as error:
                self._state.mark_unsynced(resource_type.kind)
                self._problems[resource_type.kind] = failure(resource_type, error)
                log.warning("%s: %s; listing again in %.1fs", resource_type.plural, error, delay)
                self._stop.wait(delay * (0.5 + self._jitter()))
                delay = min(delay * 2, self._timings.backoff_max_s)

    def _get(self, path: str, query: dict[str, Any], timeout: float) -> Any:
        """The streaming urllib3 response of a GET; a non-200 status raises `StatusError`."""
        method, url, headers, _, _ = self._api.param_serialize(
            "GET",
            path,
            query_params=list(query.items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(method, url, header_params=headers, _request_timeout=timeout).response
        if response.status != 200:
            body = response.read()[:300]
            response.release_conn()
            raise StatusError(response.status, f"GET {path}: HTTP {response.status}: {body!r}")
        return response

    def _get_json(self, path: str) -> Any:
        """A small JSON document (discovery); None when the API server answers 404."""
        try:
            response = self._get(path, {}, self._timings.read_timeout_s)
        except StatusError as error:
            if error.status == 404:
                return None
            raise
        try:
            return orjson.loads(response.read())
        finally:
            response.release_conn()

    def _absent(self, resource_type: ResourceType) -> None:
        """No version of the kind is served: synced and empty until it is looked for again."""
        log.info(
            "%s: %s is not served by this cluster; treating as empty", resource_type.plural, resource_type.api_group
        )
        self._state.replace(resource_type.kind, [])
        self._state.mark_synced(resource_type.kind)

    def _list(self, resource_type: ResourceType) -> str | None:
        """List everything into the model; the list's resourceVersion, or None when the kind is absent.

        The first list of a kind feeds the model page by page as the pages arrive (the model holds nothing
        of that kind yet, so adding each object is the same as replacing the kind), the next page already
        on its way (`pages`), and each page's raw objects are dropped once converted. After each page the
        heap is frozen (`gc.freeze`): the model only grows during a first list, and without that every
        collection the next pages' decoding triggers would walk the whole model again (100 000 pods take
        twice as long to take in). A relist, or a first list that failed half way, replaces the kind whole,
        dropping what went away."""
        first = resource_type.kind not in self._fed
        self._fed.add(resource_type.kind)
        items: list[Mapping[str, Any]] = []
        metadata: Mapping[str, Any] = {}
        try:
            for body in prefetched_pages(lambda token: self._page(resource_type, token)):
                page = orjson.loads(body)
                if first:
                    for item in page.get("items") or []:
                        self._state.apply(resource_type.kind, "ADDED", _typed(item, resource_type))
                    gc.freeze()
                else:
                    items += [_typed(item, resource_type) for item in page.get("items") or []]
                metadata = page.get("metadata") or {}
                del page, body
        except StatusError as error:
            if error.status == 404 and resource_type.optional:
                log.info("%s: not served by this cluster (no CRD); treating as empty", resource_type.plural)
                self._state.replace(resource_type.kind, [])
                self._state.mark_synced(resource_type.kind)
                return None
            if error.status == 410:
                raise Gone from error
            raise
        if not first:
            self._state.replace(resource_type.kind, items)
        self._state.mark_synced(resource_type.kind)
        return str(metadata.get("resourceVersion") or "")

    def _page(self, resource_type: ResourceType, token: str) -> bytes:
        """The body of one list page: the first for an empty `token`, else the one it continues to."""
        query: dict[str, Any] = {"limit": self._timings.list_page_size}
        if token:
            query["continue"] = token
        response = self._get(resource_type.list_path, query, self._timings.read_timeout_s * 3)
        try:
            return bytes(response.read())
        finally:
            response.release_conn()

    def _watch_until_gone(self, resource_type: ResourceType, version: str) -> None:
        while not self._stop.is_set():
            query = {
                "watch": "1",
                "allowWatchBookmarks": "true",
                "timeoutSeconds": self._timings.watch_timeout_s,
                "resourceVersion": version,
            }
            try:
                response = self._get(resource_type.list_path, query, self._timings.read_timeout_s)
            except StatusError as error:
                if error.status == 410:
                    raise Gone from error
                raise
            try:
                for event in _events(response):
                    version = self._handle(resource_type, event, version)
                    if self._stop.is_set():
                        return
            except HTTPError as error:
                if "Read timed out" not in str(error):
                    raise
            finally:
                response.release_conn()

    def _handle(self, resource_type: ResourceType, event: Mapping[str, Any], version: str) -> str:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone
            raise ValueError(f"watch error: {obj.get('message', obj)}")
        new_version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._state.apply(resource_type.kind, kind, _typed(obj, resource_type))
        return new_version


def failure(resource_type: ResourceType, error: Exception) -> str:
    """Why a list or watch failed, in words; a 403 names the permission missing."""
    status = getattr(error, "status", None)
    if status == 403:
        group = resource_type.api_group or "the core API group"
        return (
            f"forbidden (HTTP 403): this process's service account may not list and watch {resource_type.plural} "
            f"in {group} (check its RBAC rules)"
        )
    return f"{type(error).__name__}: {str(error)[:300]}"


def _events(response: Any) -> Iterator[Mapping[str, Any]]:
    """Watch events from a streamed response, one JSON document per line."""
    pending = b""
    for chunk in response.stream(amt=65536, decode_content=True):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield orjson.loads(line)
    if pending.strip():
        yield orjson.loads(pending)


def _typed(obj: Mapping[str, Any], resource_type: ResourceType) -> Mapping[str, Any]:
    """List items carry no kind / apiVersion; the model's conversion messages name the kind."""
    if "kind" in obj:
        return obj
    return {**obj, "kind": resource_type.manifest_kind, "apiVersion": resource_type.api_version}
