"""The preemption executor: carries out what the loop chose, through the actuator, on the committed model.

Admitting a gang, or holding the workers a scaler planned on TFJobs (`tfjob-extender.io/worker-plan`), is one
commit. A preemption is carried out in an order that never acts on a stale decision: the Eviction API's dry
run for every victim; one commit reserving the freed room for the preemptor gang (refused if the model moved
under the plan); the announcement on its first PodGroup (`tfjob-extender.io/preemption`, so a process serving
`filter` apart from this loop knows the victims first); then the evictions, the suspensions (`suspension`),
the scale-in writes and the other PodGroups' plans. A PodDisruptionBudget refusal, in the dry run or for real,
abandons the preemption whole, withdraws its reservation and announcement, and the gang is tried again after
`pdb_retry_s`. Half-placed gangs past their deadline are completed or released whole here too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from extender.loops.actuator import Actuator, EvictionRefused
from extender.loops.preemption_counts import PreemptionCounts, PreemptionOutcome
from extender.loops.suspension import SuspensionKeeper
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.core.takings import takings_with
from extender.policy.core.views import GangKey, PodView, PreemptionRecord, Role
from extender.policy.gang.planner import GangVerdict
from extender.policy.preemption.choice import carried_out
from extender.policy.preemption.victims import PreemptionPlan
from extender.policy.rank.partial import PartialGang
from extender.policy.scaling.workerplan import imported_reservations
from extender.state.commits import decide_and_commit
from extender.state.gang_annotations import (
    GANG_PLAN_ANNOTATION,
    PREEMPTION_ANNOTATION,
    TAKEN_ANNOTATION,
    group_plans,
    preemption_annotation,
)
from extender.state.store import ClusterState

log = logging.getLogger(__name__)

Publish = Callable[[LedgerChange, ClusterSnapshot], None]
"""Where reserved plans are published for other processes (the API server)."""


@dataclass
class PreemptionExecutor:
    state: ClusterState
    actuator: Actuator
    counts: PreemptionCounts
    suspensions: SuspensionKeeper
    publish: Publish
    pdb_retry_s: float
    """Seconds before a preemption a PodDisruptionBudget refused is tried again for the same gang."""
    dry_run: bool
    """Shadow mode: worker plans are not imported and half-placed gangs only logged (the loop carries out
    nothing else in it)."""
    blocked: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Gang → (when its preemption may be tried again, why it was refused) after a PodDisruptionBudget
    refused an eviction."""
    history: list[PreemptionRecord] = field(default_factory=list)
    """The preemptions carried out, oldest first."""

    def unblocked(self, plan: PreemptionPlan | None, now: float) -> PreemptionPlan | None:
        """The plan, unless a PodDisruptionBudget refused its gang's preemption and the retry is not due."""
        if plan is not None and self.blocked.get(plan.gang, (0.0, ""))[0] > now:
            return None
        return plan

    def import_worker_plans(self, now: float) -> None:
        """Reserve the workers a scaler (maybe in another process) planned on TFJobs and not placed yet."""
        if self.dry_run:
            return
        outcome = decide_and_commit(self.state, lambda snapshot: _Imported(imported_reservations(snapshot, now)))
        if not outcome.committed:
            log.debug("worker plans not reserved this tick: the model kept changing")

    def admit(self, snapshot: ClusterSnapshot, verdict: GangVerdict) -> bool:
        """Reserve and publish the plan of a gang that may start now; False when the model moved under it."""
        change = LedgerChange(reserve=verdict.reservations)
        if not self.state.commit(change, decided_on=snapshot.generation):
            return False
        self.publish(change, snapshot)
        self.counts.plans_reserved["admission"] += 1
        log.info("reserved ahead of its pods: %s", verdict.reason)
        return True

    def resolve(self, snapshot: ClusterSnapshot, overdue: list[PartialGang], now: float) -> None:
        """Complete each half-placed gang (reserve its plan) or, when it cannot be, release it whole."""
        for partial in overdue:
            reason = partial.reason(now)
            if self.dry_run:
                log.info("would resolve (dry run): %s", reason)
                continue
            if partial.verdict.admitted:
                change = LedgerChange(reserve=partial.verdict.reservations)
                if self.state.commit(change, decided_on=snapshot.generation):
                    self.publish(change, snapshot)
                    self.counts.plans_reserved["completion"] += 1
                    log.info("%s", reason)
                continue
            log.warning("%s", reason)
            try:
                for pod in partial.bound:
                    self.actuator.evict(pod, reason)
                    self.counts.evictions += 1
            except EvictionRefused as error:
                log.warning("%s: not released yet (tried again next tick): %s", partial.gang, error)
                continue
            for job in sorted({pod.job for pod in partial.bound if pod.job}):
                self._note_taken(snapshot, job, now)
                self.actuator.record_event("TFJob", job, "ReleasedWhole", reason)

    def carry_out(self, snapshot: ClusterSnapshot, plan: PreemptionPlan, now: float) -> PreemptionOutcome:
        """Check the evictions with the API server, reserve the freed room for the gang (only if the model
        did not change under the plan in a way it does not survive), then act: no action is ever taken on
        a stale decision, and a preemption a PodDisruptionBudget refuses is abandoned whole."""
        change = carried_out(plan, now)
        victims = _evicted_victims(plan)
        try:
            for pod in victims:
                self.actuator.evict(pod, plan.reason, dry_run=True)
        except EvictionRefused as error:
            return self._block(snapshot, plan, now, str(error))
        if not self.state.commit(change, decided_on=snapshot.generation):
            self.counts.preemptions["stale"] += 1
            log.info("not preempting for %s: the cluster changed since the plan was made", plan.gang)
            return "stale"
        self.counts.plans_reserved["preemption"] += 1
        log.info("%s", plan.reason)
        assert change.preemption is not None
        announced = self._announce(snapshot, plan, change)
        try:
            for pod in victims:
                self.actuator.evict(pod, plan.reason)
                self.counts.evictions += 1
            self.suspensions.suspend(plan, now)
        except EvictionRefused as error:
            groups = tuple(sorted({reservation.group for reservation in change.reserve}))
            self.state.commit(LedgerChange(release_groups=groups, forget_preemption=plan.gang), decided_on=None)
            self._announce(snapshot, plan, None)
            return self._block(snapshot, plan, now, str(error))
        except Exception:
            # Another API error: the victims reached may be leaving, so the preemption stays remembered and
            # its room held until the plan lapses (then it is decided again).
            self.publish(change, snapshot)
            raise
        self._scale_in(snapshot, plan, now)
        suspended = {job for job, _ in plan.suspended}
        for job in sorted({pod.job for pod in plan.victims if pod.job and pod.job not in plan.scale_ins}):
            if job not in suspended:
                self._note_taken(snapshot, job, now)
            self.actuator.record_event("TFJob", job, "Preempted", plan.reason)
        self.publish(_without_group(change, announced), snapshot)
        self.blocked.pop(plan.gang, None)
        self.history.append(change.preemption)
        self.counts.preemptions["carried-out"] += 1
        return "carried-out"

    def _note_taken(self, snapshot: ClusterSnapshot, job: str, now: float) -> None:
        """Add this taking to the times on the evicted job's TFJob (`max_takings_per_hour`: a half-placed
        gang released whole counts too, though it is never refused); a job that is gone, or a write that
        fails, leaves the eviction done all the same."""
        try:
            self.actuator.annotate_job(job, {TAKEN_ANNOTATION: takings_with(snapshot.jobs.get(job), now)})
        except Exception as error:
            log.warning("could not note the taking of %s: %s", job, error)

    def _scale_in(self, snapshot: ClusterSnapshot, plan: PreemptionPlan, now: float) -> None:
        """Lower the Worker replicas of the plan's scaled-in jobs, each only while it still has the count
        the plan was made from (training-operator deletes exactly the surplus pods), noting the taking."""
        for job, replicas in sorted(plan.scale_ins.items()):
            expected = snapshot.jobs[job].replicas.get(Role.WORKER, 0)
            taken = {TAKEN_ANNOTATION: takings_with(snapshot.jobs.get(job), now)}
            resize = self.actuator.resize_workers(job, expected, replicas, taken, plan.reason)
            if not resize.applied:
                log.info("not scaling %s in: %d workers, planned from %d", job, resize.observed, expected)
                continue
            self.counts.scale_ins += 1
            self.actuator.record_event("TFJob", job, "ScaledIn", plan.reason)

    def _announce(self, snapshot: ClusterSnapshot, plan: PreemptionPlan, change: LedgerChange | None) -> str:
        """Write the preemption and the plan of its gang's first PodGroup on that PodGroup, in one write,
        before any victim is evicted (or remove both when the preemption is abandoned). A process that
        serves `filter` apart from this loop then knows the victims before their controllers recreate them,
        and holds the room they free for the preemptor from the first eviction on. Returns the PodGroup
        written ("" when nothing was), whose plan then needs no second write."""
        first = GangKey(plan.gang).first
        group = snapshot.groups.get(first)
        if group is None:
            return ""
        annotations: dict[str, str | None] = {PREEMPTION_ANNOTATION: None, GANG_PLAN_ANNOTATION: None}
        if change is not None and change.preemption is not None:
            victims = {pod.key: pod.uid for pod in plan.victims}
            annotations[PREEMPTION_ANNOTATION] = preemption_annotation(change.preemption, victims)
            planned = group_plans((r for r in change.reserve if r.group == first), snapshot).get(first)
            annotations[GANG_PLAN_ANNOTATION] = planned[1] if planned is not None else None
        try:
            self.actuator.annotate_group(group, annotations)
        except Exception as error:  # the preemption itself does not depend on the announcement
            log.warning("could not announce the preemption for %s on its PodGroup: %s", plan.gang, error)
            return ""
        return first

    def _block(self, snapshot: ClusterSnapshot, plan: PreemptionPlan, now: float, why: str) -> PreemptionOutcome:
        """Remember and report a preemption a PodDisruptionBudget refused; it is tried again later."""
        reason = f"preemption for gang {plan.gang} abandoned, retried in {self.pdb_retry_s:g} s: {why}"
        self.blocked[plan.gang] = (now + self.pdb_retry_s, reason)
        self.counts.pdb_refusals += 1
        self.counts.preemptions["blocked"] += 1
        log.warning("%s", reason)
        members = snapshot.group_members.get(GangKey(plan.gang).first, frozenset())
        for job in sorted({pod.job for key in members if (pod := snapshot.pods.get(key)) is not None and pod.job}):
            self.actuator.record_event("TFJob", job, "PreemptionBlocked", reason)
        return "blocked"


@dataclass(frozen=True, slots=True)
class _Imported:
    """Worker-plan reservations to hold, as a decision the commit seam can apply."""

    reservations: list[Reservation]

    @property
    def change(self) -> LedgerChange:
        return LedgerChange(reserve=tuple(self.reservations))


def _evicted_victims(plan: PreemptionPlan) -> list[PodView]:
    """The victims removed by eviction (members of whole evicted gangs), not by a replica patch."""
    evicted = set(plan.evicted)
    return [
        pod
        for pod in plan.victims
        if any(pod.key == subject or (pod.group and pod.group in GangKey(subject).groups) for subject in evicted)
    ]


def _without_group(change: LedgerChange, group: str) -> LedgerChange:
    """`change` less the reservations of `group` (whose plan is already written)."""
    if not group:
        return change
    return replace(change, reserve=tuple(reservation for reservation in change.reserve if reservation.group != group))
