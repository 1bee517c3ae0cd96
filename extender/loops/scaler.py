"""The scaler loop: grows running elastic TFJobs into idle capacity and consolidates them onto their PS.

Level-triggered: every `interval_s` (`ScalerLoopSettings`) the active instance plans from a fresh snapshot
with the pure planners (`policy.scaling.scale_out`) and carries the actions out through a `ScalingActuator`:
- scale-out: the new workers' reservations are committed first (the extender steers the pods, whose
  names are deterministic, to the nodes counted on), then the Worker replicas are raised, conditioned on
  the count planned from; if that count changed meanwhile the step is dropped and its plan released;
- migration: the worker pod is deleted (only that UID); once it is gone, the PS node is reserved for its
  replacement (training-operator recreates every index below `replicas` under the same name). A pod
  that becomes terminating voids its own reservation, hence the order. While a migration is in flight
  the loop polls its settlement every `MIGRATION_SETTLE_POLL_S`.
A model unchanged since a plan that found nothing to do is not planned again for `replan_unchanged_s`
(a steady cluster costs next to nothing); any change to the model plans at the next tick.
Scale-in for a waiting gang is not done here: the preemption loop is the one place that shrinks a job
for a gang (through `policy.preemption.scale_in`), so two loops never act on one job for one gang.
The plan also goes on the TFJob (annotation `tfjob-extender.io/worker-plan`, in the same patch as the
replicas), from which the preemption loop of an extender in another process reserves it.
Only the instance holding the leadership (a `coordination.k8s.io` Lease) plans; followers idle. Cooldowns
come from the TFJob's `tfjob-extender.io/scaled-at` / `consolidated-at` annotations, written with each
action, so they survive a restart or a new leader. Every action is an Event on the TFJob, an entry of
`records` and a count in `counts` (the HTTP layer serves them at `/debug/scaler` and `/metrics`); jobs
left alone get one Event per reason. Each action's kind and outcome are `Literal`s (`scaler_records`), with
the reason an action was not done beside them.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from extender.loops.actuator import EvictionRefused, ScalingActuator
from extender.loops.leadership import AlwaysLeader, LeaderElector, tick_role
from extender.loops.scaler_records import (
    ACTION_KINDS,
    Migration,
    ScalerActionKind,
    ScalerCounts,
    ScalerOutcome,
    ScalerRecord,
)
from extender.loops.scaler_settings import ScalerLoopSettings
from extender.loops.ticking import Ticker
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.takings import takings_with
from extender.policy.scaling.consolidation import plan_consolidation
from extender.policy.scaling.scale_out import ActionKind, ScalingAction, plan_scale_out
from extender.state.convert import (
    CONSOLIDATED_AT_ANNOTATION,
    SCALED_AT_ANNOTATION,
    WORKER_PLAN_ANNOTATION,
    plan_annotation,
)
from extender.state.gang_annotations import TAKEN_ANNOTATION
from extender.state.store import ClusterState

log = logging.getLogger(__name__)

MIGRATION_SETTLE_POLL_S = 0.2
"""Seconds between checks of in-flight migrations (to reserve the PS node as soon as the old pod is gone)."""
LONGEST_PAUSE_S = 0.5
"""Longest sleep between two wake-ups of the loop with no migration in flight: a stop is seen within it."""


@dataclass
class ScalerLoop:
    state: ClusterState
    actuator: ScalingActuator
    settings: PolicySettings
    clock: Callable[[], float]
    leader: LeaderElector = field(default_factory=AlwaysLeader)
    counts: ScalerCounts = field(default_factory=ScalerCounts)
    loop_settings: ScalerLoopSettings = field(default_factory=ScalerLoopSettings)
    dry_run: bool = False
    """Shadow mode: plan as usual and record each action with the outcome `dry-run`, but never act through
    the actuator nor change the model."""
    records: deque[ScalerRecord] = field(init=False)
    left_alone: dict[str, str] = field(default_factory=dict)
    """TFJob → why the scaler left it alone at the last tick."""
    leading: bool = False
    last_action: dict[str, float] = field(default_factory=dict)
    last_consolidation: dict[str, float] = field(default_factory=dict)
    migrations: dict[str, Migration] = field(default_factory=dict)
    _reported: set[tuple[str, str]] = field(default_factory=set)
    _quiet: tuple[int, float] = (-1, 0.0)
    """(model generation, time) of the last plan that found nothing to do."""
    _next_tick: float = 0.0
    _ticker: Ticker | None = None

    def __post_init__(self) -> None:
        self.records = deque(maxlen=self.loop_settings.actions_kept)

    @property
    def interval_s(self) -> float:
        """Seconds between ticks (what `/debug/scaler` shows)."""
        return self.loop_settings.interval_s

    def start(self) -> None:
        self._ticker = Ticker("scaler-loop", self._wake, self._pause_s)
        self._ticker.start()

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        self.leader.release()

    def _pause_s(self) -> float:
        return MIGRATION_SETTLE_POLL_S if self.migrations else min(self.interval_s, LONGEST_PAUSE_S)

    def _wake(self) -> None:
        """A tick every `interval_s`; in between, only the settlement of migrations in flight."""
        if not self.state.is_synced():
            return
        now = self.clock()
        if now >= self._next_tick:
            self._next_tick = now + self.interval_s
            self.tick(now)
        elif self.migrations:
            self.settle_migrations(self.state.snapshot(), now)

    def tick(self, now: float) -> list[ScalerRecord]:
        """One pass on a fresh snapshot; returns the actions carried out (none unless leading)."""
        self.leading = self.leader.holds()
        self.counts.ticks[tick_role(self.leading)] += 1
        if not self.leading:
            return []
        self.state.release_expired(now)
        self.settle_migrations(self.state.snapshot(), now)
        snapshot = self.state.snapshot()
        generation, at = self._quiet
        if snapshot.generation == generation and now - at < min(
            self.loop_settings.replan_unchanged_s, self.settings.scale_cooldown_s
        ):
            return []
        cooldowns = self.cooldowns(snapshot)
        done: list[ScalerRecord] = []
        grow = plan_scale_out(snapshot, self.settings, now, cooldowns)
        if self.dry_run:
            moves = plan_consolidation(snapshot, self.settings, now, cooldowns, self.last_consolidation)
            planned = (*grow.actions, *moves.actions)
            shadow = [self._record(action, now, "dry-run", "planned, not carried out") for action in planned]
            self.left_alone = dict(grow.skipped)
            self.records.extend(shadow)
            self._quiet = (snapshot.generation, now)
            return shadow
        self._report_left_alone(grow.skipped)
        for action in grow.actions:
            done.append(self._scale_out(action, snapshot, now))
            cooldowns[action.job] = now
        moves = plan_consolidation(self.state.snapshot(), self.settings, now, cooldowns, self.last_consolidation)
        for action in moves.actions:
            done.append(self._migrate(action, snapshot, now))
        self.records.extend(done)
        self._quiet = (-1, 0.0) if done else (self.state.snapshot().generation, now)
        return done

    def settle_migrations(self, snapshot: ClusterSnapshot, now: float) -> None:
        """Reserve the target for each migrated worker once its old pod is gone; forget settled ones."""
        for key, migration in list(self.migrations.items()):
            pod = snapshot.pods.get(key)
            if pod is not None and pod.uid == migration.old_uid:
                continue
            if pod is not None and pod.holds_node:
                log.info("migrated %s now runs on %s (planned %s)", key, pod.node_name, migration.target.node)
                del self.migrations[key]
                continue
            if now - migration.started > self.settings.default_plan_timeout_s:
                del self.migrations[key]
                continue
            if key not in snapshot.reservations:
                expires = now + self.settings.default_plan_timeout_s
                target = replace(migration.target, expires_at=expires)
                self.state.commit(LedgerChange(reserve=(target,)), decided_on=snapshot.generation)

    def cooldowns(self, snapshot: ClusterSnapshot) -> dict[str, float]:
        """Last action per job: ours, and scale-ins the preemption loop carried out in this model."""
        last = dict(self.last_action)
        for record in snapshot.preemptions.values():
            for job in record.scaled_in:
                last[job] = max(last.get(job, record.at), record.at)
        return last

    def _scale_out(self, action: ScalingAction, snapshot: ClusterSnapshot, now: float) -> ScalerRecord:
        group = action.placements[0].group if action.placements else ""
        if not self.state.commit(LedgerChange(reserve=action.placements), decided_on=snapshot.generation):
            return self._record(action, now, "stale", "the cluster changed since the plan was made")
        outcome: ScalerOutcome = "done"
        detail = ""
        try:
            annotations = {SCALED_AT_ANNOTATION: f"{now:.3f}", WORKER_PLAN_ANNOTATION: _plan_annotation(action)}
            resize = self.actuator.resize_workers(
                action.job, action.replicas_from, action.replicas_to, annotations, action.reason
            )
            self.counts.conflicts += resize.conflicts
            if not resize.applied:
                outcome = "stale"
                detail = f"the job has {resize.observed} workers now, planned from {action.replicas_from}"
        except Exception as error:
            log.exception("scale-out of %s failed", action.job)
            outcome, detail = "failed", str(error)
        if outcome != "done":
            self.state.commit(LedgerChange(release_groups=(group,) if group else ()), decided_on=None)
        else:
            self.last_action[action.job] = now
            self.actuator.record_event("TFJob", action.job, "ScaledOut", action.reason)
        return self._record(action, now, outcome, detail)

    def _migrate(self, action: ScalingAction, snapshot: ClusterSnapshot, now: float) -> ScalerRecord:
        pod = snapshot.pods.get(action.pods[0])
        outcome: ScalerOutcome = "done"
        detail = ""
        try:
            if pod is None or not self.actuator.restart_pod(pod, action.reason):
                outcome, detail = "stale", "the pod is already gone"
            else:
                self.migrations[pod.key] = Migration(pod.uid, action.placements[0], now)
                annotations = {
                    CONSOLIDATED_AT_ANNOTATION: f"{now:.3f}",
                    WORKER_PLAN_ANNOTATION: _plan_annotation(action),
                    TAKEN_ANNOTATION: takings_with(snapshot.jobs.get(action.job), now),
                }
                self.actuator.annotate_job(action.job, annotations)
        except EvictionRefused as error:
            log.info("migration of %s not done: %s", action.pods[0], error)
            outcome, detail = "refused", str(error)
        except Exception as error:
            log.exception("migration of %s failed", action.pods[0])
            outcome, detail = "failed", str(error)
        if outcome == "done":
            self.last_consolidation[action.job] = now
            self.last_action[action.job] = now
            self.actuator.record_event("TFJob", action.job, "WorkerMigrated", action.reason)
        return self._record(action, now, outcome, detail)

    def _record(self, action: ScalingAction, now: float, outcome: ScalerOutcome, detail: str = "") -> ScalerRecord:
        kind = ACTION_KINDS[action.kind]
        self.counts.actions[(kind, outcome)] += 1
        plan = tuple((r.pod, r.node) for r in action.placements)
        record = ScalerRecord(
            now,
            kind,
            action.job,
            action.replicas_from,
            action.replicas_to,
            action.pods,
            plan,
            action.reason,
            outcome,
            detail,
        )
        log.info("%s %s: %s (%s)", kind, action.job, action.reason, record.outcome)
        return record

    def _report_left_alone(self, skipped: tuple[tuple[str, str], ...]) -> None:
        self.left_alone = dict(skipped)
        for job, reason in skipped:
            if (job, reason) in self._reported:
                continue
            self._reported.add((job, reason))
            self.counts.left_alone += 1
            self.actuator.record_event("TFJob", job, "NotScaled", reason)


def _plan_annotation(action: ScalingAction) -> str:
    """The action's placements as the TFJob annotation an extender in another process steers by."""
    expires = max((r.expires_at for r in action.placements), default=0.0)
    return plan_annotation({r.pod.split("/", 1)[1]: r.node for r in action.placements}, expires)


__all__ = ["ActionKind", "Migration", "ScalerActionKind", "ScalerCounts", "ScalerLoop", "ScalerOutcome", "ScalerRecord"]
