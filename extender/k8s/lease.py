"""Leader election through a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it.

- No Lease yet: create it naming this instance (a 409 means another instance was first).
- The Lease names this instance: renew `renewTime`.
- It names another holder: take it over only once its record has stayed unchanged for a whole
  `leaseDurationSeconds` of *our* monotonic clock (so clock skew between machines cannot cut a lease
  short), or at once if the holder released it (empty `holderIdentity`).
Every write carries the resourceVersion that was read, so of two instances racing for an expired Lease
exactly one wins; the other gets 409 and stays a follower. A clean stop releases the Lease.

The loops ask on every tick, and the preemption loop ticks on watch events — many a second on a busy
cluster — so the API server is asked at most once per `retry_period_s`; in between the last answer
stands. The holder thus acts on a successful renewal for at most the retry period, capped at a quarter
of the duration, so it has asked again (and stepped down if that failed) before any other instance may take
over; a failed call, a conflict or another holder ends the holding at once. `status` tells whether the
API server has answered yet and why the last call failed (an RBAC refusal, say), for `/readyz`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient

from extender.k8s.client import ApiCallError, api_call
from extender.loops.leadership import LeaseStatus

log = logging.getLogger(__name__)

RETRIES_PER_DURATION = 4
"""The retry period is at most the Lease duration over this: a holder renews several times per duration."""


class KubeLease:
    def __init__(
        self,
        api_client: ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        duration_s: int,
        retry_period_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.identity = identity
        self._api = api_client
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self._name = name
        self._duration_s = duration_s
        self._retry_period_s = min(retry_period_s, duration_s / RETRIES_PER_DURATION)
        self._clock = clock
        self._observed: tuple[str, float] = ("", 0.0)
        self._holding = False
        self._asked_at: float | None = None
        self._lease = f"{namespace}/{name}"
        self._answered = False
        self._error: str | None = None

    def status(self) -> LeaseStatus:
        return LeaseStatus(self.identity, self._lease, self._answered, self._holding, self._error)

    def holds(self) -> bool:
        now = self._clock()
        if self._asked_at is not None and now - self._asked_at < self._retry_period_s:
            return self._holding
        self._asked_at = now
        try:
            self._holding = self._try()
            self._answered, self._error = True, None
        except ApiCallError as error:
            log.warning("lease %s: %s", self._name, error)
            self._holding, self._error = False, str(error)
        except OSError as error:
            log.warning("lease %s: API server unreachable: %s", self._name, error)
            self._holding, self._error = False, f"API server unreachable: {error}"
        return self._holding

    def release(self) -> None:
        if not self._holding:
            return
        try:
            lease = self._call("GET", self._path)
            if lease["spec"].get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = None
                lease["spec"]["leaseDurationSeconds"] = 1
                self._call("PUT", self._path, lease)
        except (ApiCallError, OSError) as error:
            log.warning("lease %s: could not release: %s", self._name, error)
        self._holding = False
        self._asked_at = None

    def _try(self) -> bool:
        now = self._clock()
        try:
            lease = self._call("GET", self._path)
        except ApiCallError as error:
            if error.status != 404:
                raise
            return self._create()
        spec: dict[str, Any] = lease.get("spec") or {}
        version = lease["metadata"]["resourceVersion"]
        if version != self._observed[0]:
            self._observed = (version, now)
        holder = spec.get("holderIdentity") or ""
        if holder == self.identity:
            spec["renewTime"] = _micro_time()
            return self._write(lease)
        duration = float(spec.get("leaseDurationSeconds") or self._duration_s)
        if holder and now - self._observed[1] < duration:
            return False
        log.info("lease %s: taking over from %r", self._name, holder or "nobody")
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=self._duration_s,
            acquireTime=_micro_time(),
            renewTime=_micro_time(),
            leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1,
        )
        lease["spec"] = spec
        return self._write(lease)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        return api_call(self._api, method, path, body)

    def _create(self) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self._name},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._duration_s,
                "acquireTime": _micro_time(),
                "renewTime": _micro_time(),
                "leaseTransitions": 0,
            },
        }
        try:
            self._call("POST", self._collection, body)
        except ApiCallError as error:
            if error.status == 409:
                return False
            raise
        log.info("lease %s: acquired (created)", self._name)
        return True

    def _write(self, lease: dict[str, Any]) -> bool:
        try:
            self._call("PUT", self._path, lease)
        except ApiCallError as error:
            if error.status == 409:
                return False
            raise
        return True


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
