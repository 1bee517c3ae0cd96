"""Publishes the gang plans this process reserves onto their PodGroups, off the decision path.

A plan reserved in one process's ledger must reach every other process that decides on the same
cluster — another extender replica, the loops running in a process of their own, this extender after a
restart — and they all read the API server. So each reserved plan is written on its PodGroups as the
annotation `tfjob-extender.io/plan` (`convert.GANG_PLAN_ANNOTATION`), which every model imports
(`ClusterState._import_plan`). Writing is a merge patch done by a daemon thread: `publish` only records
the latest plan per PodGroup and returns, so a verb never waits on the API server. A failed write is
logged and retried with the next plan for that PodGroup; the reservation itself is already held locally.
"""

from __future__ import annotations

import logging
import threading

from kubernetes.client import ApiClient

from extender.k8s.client import api_call
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import GroupView
from extender.state.convert import GANG_PLAN_ANNOTATION
from extender.state.gang_annotations import group_plans
from extender.state.kinds import BY_KIND
from extender.state.store import GROUP_KINDS

log = logging.getLogger(__name__)

RETRY_AFTER_S = 1.0
"""Seconds before retrying writes after a failure."""


class PlanPublisher:
    def __init__(self, api_client: ApiClient) -> None:
        self._api = api_client
        self._pending: dict[str, tuple[str, str]] = {}
        """PodGroup key → (path, plan annotation) still to write."""
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.written = 0
        self.failed = 0

    def publish(self, change: LedgerChange, snapshot: ClusterSnapshot) -> None:
        """Record the plans `change` reserves, per PodGroup, to be written soon."""
        plans = {
            key: (path, value)
            for key, (group, value) in group_plans(change.reserve, snapshot).items()
            if (path := group_path(group)) is not None
        }
        if plans:
            with self._wake:
                self._pending.update(plans)
                self._wake.notify()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="plan-publisher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                batch, self._pending = self._pending, {}
            failed = False
            for group, (path, value) in batch.items():
                body = {"metadata": {"annotations": {GANG_PLAN_ANNOTATION: value}}}
                try:
                    api_call(self._api, "PATCH", path, body, "application/merge-patch+json")
                    self.written += 1
                except Exception as error:  # an unreachable API server must not end the thread
                    self.failed += 1
                    failed = True
                    log.warning("could not write the plan of %s: %s", group, error)
            if failed:
                with self._wake:
                    self._wake.wait(RETRY_AFTER_S)


def group_path(group: GroupView) -> str | None:
    """The PodGroup's path in the API group it was read from."""
    for kind in GROUP_KINDS:
        resource = BY_KIND[kind]
        if resource.api_version.split("/")[0] == group.api_group:
            return f"/apis/{resource.api_version}/namespaces/{group.namespace}/{resource.plural}/{group.name}"
    return None
