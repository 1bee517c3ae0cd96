"""The native gangs' controller: keeps each TFJob's `scheduling.k8s.io` Workload and PodGroup as
`native_gangs.plan_native_gangs` says, acting through a `NativeGangActuator`.

Level-triggered, on a thread of its own (`Ticker`), every `interval_s`, and sooner when TFJobs come or go:
it counts the model's TFJobs every `look_s` (a few microseconds; a pass over 2000 TFJobs costs about 5 ms,
so status changes alone do not bring one), so a new TFJob's PodGroup is made about `look_s` after the model
sees the TFJob, not up to a whole interval later while its pods wait for it. Each pass asks the
`NativeMode` whether native gangs are given here (the API server's discovery, looked up at most every so
often), and, only while this instance holds the Lease the other loops hold and the model has listed every
kind, plans from a fresh snapshot and carries the writes out. What it made is found again by listing the
Workloads it labelled (at the first tick it leads and every `relist_s`), so a restart or a new leader starts
from the cluster, not from memory; every write is idempotent (a creation that finds the object made counts
as made, a deletion that finds it gone as done). A write the watch has not shown yet counts as done for
`WRITE_SETTLE_S`, so it is not made twice. With `dry_run` it plans and records, never writes. Every write
is a `NativeGangRecord`, kept for `/debug/native-gangs`.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from extender.loops.leadership import AlwaysLeader, LeaderElector
from extender.loops.native_gangs import KeptGang, NativeGangAction, NativeModeStatus, plan_native_gangs
from extender.loops.ticking import Ticker
from extender.state.store import ClusterState
from extender.state.workload_api import API_GROUP

log = logging.getLogger(__name__)

WRITE_SETTLE_S = 10.0
"""Seconds a PodGroup write counts as done before the watch shows it."""
RECORDS_KEPT = 100

Outcome = Literal["done", "failed", "dry-run"]


class NativeGangActuator(Protocol):
    def list_kept(self) -> dict[str, KeptGang]:
        """The Workloads the extender made, by `namespace/name`."""

    def create(self, action: NativeGangAction) -> None:
        """The TFJob's Workload, then its PodGroup (owned by the TFJob); either found made counts as made."""

    def resize(self, action: NativeGangAction) -> None:
        """Set the PodGroup's and the Workload's template's minCount."""

    def delete(self, action: NativeGangAction) -> None:
        """The PodGroup, then the Workload; either found gone counts as deleted."""


class NativeMode(Protocol):
    def refresh(self) -> NativeModeStatus:
        """The status, asking the API server again when the last answer is old."""

    def status(self) -> NativeModeStatus:
        """The last status, without asking."""


@dataclass(frozen=True, slots=True)
class NativeGangRecord:
    at: float
    action: NativeGangAction
    outcome: Outcome
    error: str = ""


@dataclass
class NativeGangLoop:
    state: ClusterState
    actuator: NativeGangActuator
    mode: NativeMode
    scheduler_name: str
    clock: Callable[[], float]
    leader: LeaderElector = field(default_factory=AlwaysLeader)
    interval_s: float = 1.0
    look_s: float = 0.05
    """Seconds between two counts of the model's TFJobs; a pass as soon as their number changed."""
    relist_s: float = 60.0
    dry_run: bool = False
    managed_namespaces: tuple[str, ...] = ()
    """The namespaces whose TFJobs get a native gang (none: every one; `PolicySettings.managed_namespaces`)."""
    records: deque[NativeGangRecord] = field(default_factory=lambda: deque(maxlen=RECORDS_KEPT))
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(action kind, outcome) → writes."""
    leading: bool = False
    kept: dict[str, KeptGang] | None = None
    """What the extender made, as last listed and written since (None: to be listed)."""
    last_error: str = ""
    _listed_at: float = 0.0
    _written: dict[str, tuple[int, float]] = field(default_factory=dict)
    """PodGroup key → (minCount written, when), until the model shows it."""
    _ticker: Ticker | None = None
    _passed: tuple[int, float] | None = None
    """(the model's TFJobs, counted; when) at the last pass."""

    def start(self) -> None:
        self._ticker = Ticker("native-gangs", self._wake, lambda: self.look_s)
        self._ticker.start()

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()

    def _wake(self) -> None:
        """A pass when TFJobs came or went since the last one, or `interval_s` has passed."""
        now, jobs = self.clock(), len(self.state.snapshot().jobs)
        if self._passed is not None and self._passed[0] == jobs and now - self._passed[1] < self.interval_s:
            return
        self._passed = (jobs, now)
        self.tick(now)

    def tick(self, now: float) -> list[NativeGangRecord]:
        """One pass; the writes made (none unless native gangs are given here and this instance leads)."""
        status = self.mode.refresh()
        if not status.active or not self.state.is_synced():
            self.kept = None
            return []
        self.leading = self.leader.holds()
        if not self.leading:
            self.kept = None
            return []
        snapshot = self.state.snapshot()
        if not snapshot.jobs_synced:
            return []
        try:
            if self.kept is None or now - self._listed_at >= self.relist_s:
                self.kept = self.actuator.list_kept()
                self._listed_at = now
                self.last_error = ""
        except Exception as error:
            self.last_error = f"listing the Workloads made: {error}"
            raise
        groups = {key: group.min_member for key, group in snapshot.groups.items() if group.api_group == API_GROUP}
        actions = plan_native_gangs(snapshot.jobs, self.kept, self._settled(groups, now), self.scheduler_name)
        return [self._carry_out(action, now) for action in actions]

    def _settled(self, groups: dict[str, int], now: float) -> dict[str, int]:
        """The model's PodGroups with the writes it has not shown yet on top."""
        for key, (min_count, at) in list(self._written.items()):
            if groups.get(key) == min_count or now - at >= WRITE_SETTLE_S:
                del self._written[key]
            else:
                groups[key] = min_count
        return groups

    def _carry_out(self, action: NativeGangAction, now: float) -> NativeGangRecord:
        assert self.kept is not None
        if self.dry_run:
            return self._record(NativeGangRecord(now, action, "dry-run"))
        write = {"create": self.actuator.create, "resize": self.actuator.resize, "delete": self.actuator.delete}
        try:
            write[action.kind](action)
        except Exception as error:
            log.warning("native gang %s: %s failed: %s", action.key, action.kind, error)
            self.kept = None
            return self._record(NativeGangRecord(now, action, "failed", str(error)[:300]))
        if action.kind == "delete":
            self.kept.pop(action.key, None)
            self._written.pop(action.key, None)
        else:
            self.kept[action.key] = KeptGang(action.namespace, action.name, action.job_uid, action.min_count)
            self._written[action.key] = (action.min_count, now)
        log.info("native gang %s: %s (minCount %d): %s", action.key, action.kind, action.min_count, action.reason)
        return self._record(NativeGangRecord(now, action, "done"))

    def _record(self, record: NativeGangRecord) -> NativeGangRecord:
        self.records.append(record)
        self.counts[(record.action.kind, record.outcome)] += 1
        return record
