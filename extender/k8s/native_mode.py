"""Whether native gangs are given in this cluster: the `native_gangs` setting against what the API server serves.

Native gangs need `scheduling.k8s.io/v1beta1` Workloads and PodGroups (Kubernetes 1.37 with the
`GenericWorkload` gate), whose `gang.minCount` may change as the scaler resizes a job. 1.36 serves
`v1alpha2` (its `minCount` immutable) and 1.35 `v1alpha1` Workloads whose pods name them in
`spec.workloadRef`, with no PodGroup object: there the extender keeps its own barrier whatever the setting
says, and says so once in the log (a warning for `on`, an info line for `auto`) and in `/readyz` and
`/debug/native-gangs`. The discovery documents are read again every `recheck_s`, by the controller's thread
(never on the event loop), so a cluster that turns the API on is noticed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kubernetes.client import ApiClient

from extender.k8s.client import ApiCallError, api_call
from extender.k8s.discovery import FetchJson
from extender.loops.native_gangs import NativeModeStatus
from extender.state.workload_api import API_GROUP

log = logging.getLogger(__name__)

NATIVE_VERSION = f"{API_GROUP}/v1beta1"
RESOURCES = ("workloads", "podgroups")
OLDER = {
    f"{API_GROUP}/v1alpha3": "v1alpha3 (alpha, 1.37)",
    f"{API_GROUP}/v1alpha2": "v1alpha2 (1.36: PodGroup minCount immutable)",
    f"{API_GROUP}/v1alpha1": "v1alpha1 (1.35: Workloads named by pods' spec.workloadRef, no PodGroup)",
}


def native_api(fetch: FetchJson) -> tuple[bool, str]:
    """(served, why): whether the API server serves Workloads and PodGroups in `scheduling.k8s.io/v1beta1`."""
    group = fetch(f"/apis/{API_GROUP}") or {}
    served = [str(entry.get("groupVersion")) for entry in group.get("versions") or []]
    if NATIVE_VERSION in served:
        resources = {
            str(entry.get("name")) for entry in (fetch(f"/apis/{NATIVE_VERSION}") or {}).get("resources") or []
        }
        missing = [name for name in RESOURCES if name not in resources]
        if not missing:
            return True, f"the API server serves {NATIVE_VERSION} Workloads and PodGroups"
        return False, f"the API server serves {NATIVE_VERSION} without {', '.join(missing)}"
    older = [OLDER[version] for version in served if version in OLDER]
    if older:
        return False, f"the API server serves the gang API only as {', '.join(older)}, not {NATIVE_VERSION}"
    return False, f"the API server does not serve {NATIVE_VERSION} (Kubernetes 1.37 with the GenericWorkload gate)"


class DiscoveredNativeMode:
    """The `NativeMode` of a cluster: the setting, and the discovery documents read every `recheck_s`."""

    def __init__(
        self,
        api_client: ApiClient,
        setting: str,
        *,
        recheck_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api_client
        self._setting = setting
        self._recheck_s = recheck_s
        self._clock = clock
        self._asked_at: float | None = None
        why = "native_gangs is off" if setting == "off" else "the API server has not been asked yet"
        self._status = NativeModeStatus(setting, False, why)

    def status(self) -> NativeModeStatus:
        return self._status

    def refresh(self) -> NativeModeStatus:
        if self._setting == "off":
            return self._status
        now = self._clock()
        if self._asked_at is not None and now - self._asked_at < self._recheck_s:
            return self._status
        self._asked_at = now
        try:
            served, why = native_api(self._fetch)
        except Exception as error:  # the API server unreachable or refusing: the last answer stands
            served, why = self._status.active, f"{self._status.why} (discovery failed: {error})"
        status = NativeModeStatus(self._setting, served, why)
        if (status.active, status.why) != (self._status.active, self._status.why):
            self._announce(status)
        self._status = status
        return status

    def _announce(self, status: NativeModeStatus) -> None:
        if status.active:
            log.info("native gangs: on: %s", status.why)
            return
        level = logging.WARNING if self._setting == "on" else logging.INFO
        log.log(level, "native gangs: not given here, TFJobs keep the extender's own barrier: %s", status.why)

    def _fetch(self, path: str) -> dict[str, object] | None:
        try:
            document = api_call(self._api, "GET", path)
        except ApiCallError as error:
            if error.status == 404:
                return None
            raise
        return document if isinstance(document, dict) else None
