"""Bulk API calls for benchmarks on the local control plane: raw JSON over keep-alive HTTPS connections,
one per thread, many requests in flight (the typed client is far too slow to create thousands of pods)."""

from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import orjson

from extender.devcluster import UNVERIFIED_TLS

CLEAR_POLL_S = 0.5
"""Seconds between two checks that a namespace being cleared has no pod left."""


class Api:
    """Raw JSON calls to the API server over one keep-alive HTTPS connection per thread. A thread that is done
    calls `release_thread`; `close` closes what is left (every connection opened here is closed by one or the
    other, never left to the garbage collector)."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._local = threading.local()
        self._open: set[http.client.HTTPSConnection] = set()
        self._open_lock = threading.Lock()

    def connect(self, timeout: float | None = 60) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=UNVERIFIED_TLS, timeout=timeout)

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        ok: tuple[int, ...] = (200, 201),
        content_type: str = "application/json",
    ) -> Any:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = content_type
        for attempt in range(3):
            connection = self._thread_connection()
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except (http.client.HTTPException, OSError):
                self.release_thread()
                if attempt == 2:
                    raise
                continue
            if response.status not in ok:
                raise RuntimeError(f"{method} {path}: HTTP {response.status}: {data[:300]!r}")
            return orjson.loads(data) if data else None
        raise AssertionError("unreachable")

    def _thread_connection(self) -> http.client.HTTPSConnection:
        connection: http.client.HTTPSConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self.connect()
            with self._open_lock:
                self._open.add(connection)
        return connection

    def release_thread(self) -> None:
        """Close the calling thread's connection (its next call opens another)."""
        connection: http.client.HTTPSConnection | None = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            with self._open_lock:
                self._open.discard(connection)
            connection.close()

    def close(self) -> None:
        """Close every connection still open, whichever thread opened it."""
        with self._open_lock:
            connections, self._open = self._open, set()
        for connection in connections:
            connection.close()


def run_threads(api: Api, count: int, target: Callable[[], None]) -> None:
    """`target` in `count` threads at once, each releasing its connection of `api` when it is done."""

    def run() -> None:
        try:
            target()
        finally:
            api.release_thread()

    threads = [threading.Thread(target=run, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def create_all(api: Api, requests: list[tuple[str, str, bytes]], threads: int, rate: float | None) -> dict[str, float]:
    """POST (path, name, body) in order from `threads` connections, at `rate` per second (None: at once);
    returns name → the monotonic time its POST was sent."""
    sent: dict[str, float] = {}
    lock = threading.Lock()
    position = iter(range(len(requests)))
    started = time.monotonic()

    def worker() -> None:
        while True:
            with lock:
                index = next(position, None)
            if index is None:
                return
            if rate:
                delay = started + index / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            path, name, body = requests[index]
            sent[name] = time.monotonic()
            api.call("POST", path, body)

    run_threads(api, threads, worker)
    return sent


def delete_all(api: Api, paths: list[str], threads: int) -> None:
    """DELETE every path from `threads` connections (one by one: a deletecollection of thousands of objects
    can outlast the API server's request timeout); an object already gone counts as deleted."""
    pending = iter(paths)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                path = next(pending, None)
            if path is None:
                return
            api.call("DELETE", path, ok=(200, 202, 404))

    run_threads(api, threads, worker)


def list_all(api: Api, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = f"?limit=1000&continue={urllib.parse.quote(token)}" if token else "?limit=1000"
        page = api.call("GET", f"{path}{query}")
        items += page["items"]
        token = page["metadata"].get("continue") or ""
        if not token:
            return items


def clear_namespace(api: Api, namespace: str, threads: int, timeout_s: float, native_podgroups: str = "") -> None:
    """Delete what a run left in `namespace`: its TFJobs first (so training-operator recreates no pod), then
    its pods one by one from `threads` connections (`delete_all`), then its PodGroups — scheduler-plugins'
    and, given the `apiVersion` Kubernetes' own are served in (`native_podgroups`), those; returns once no
    pod is left, and raises RuntimeError when pods are still there after `timeout_s` seconds."""
    api.call("DELETE", f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs")
    base = f"/api/v1/namespaces/{namespace}/pods"
    names = [pod["metadata"]["name"] for pod in list_all(api, base)]
    delete_all(api, [f"{base}/{name}?gracePeriodSeconds=0" for name in names], threads)
    api.call("DELETE", f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups")
    if native_podgroups:
        api.call("DELETE", f"/apis/{native_podgroups}/namespaces/{namespace}/podgroups")
    deadline = time.monotonic() + timeout_s
    while api.call("GET", f"{base}?limit=1")["items"]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"pods of {namespace} were not deleted")
        time.sleep(CLEAR_POLL_S)
