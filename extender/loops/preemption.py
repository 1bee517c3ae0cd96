"""The preemption loop: carries out job-level preemption for the highest-ranked gangs that cannot start.

kube-scheduler's own preemption is per pod, and it never picks victims of equal priority, so a KOD2
weight-based scale-in would never happen through it. This loop works on the model instead. Each tick,
level-triggered on a fresh snapshot:
1. release expired plans; reserve the workers a scaler planned on TFJobs (`tfjob-extender.io/worker-plan`)
   and not placed yet, so a scaler running in another process steers them too; resume the TFJobs this
   loop suspended whose pods training-operator has deleted; while some gang waits, weigh which running
   suspendable TFJobs are worth suspending for a fresh gang (`policy.preemption.residual_life`, from the run times
   `RunClock` has seen), and which started moments ago (`suspension_newcomer_s`: a starving gang may
   suspend those);
2. walk the waiting gangs in rank order (planning at most `max_gangs_checked_per_tick` of them, passing
   over without a plan those that need more than is free in all, up to `max_gangs_walked_per_tick`
   looked at). The first that may start now without delaying a gang that goes before it has its plan
   reserved and published, and the walk starts again on the model that includes it (up to
   `max_admissions_per_tick` gangs): kube-scheduler retries a long-waiting gang's pods last, after their
   backoff, and a newer gang's pods would take the room first. A gang that fits but yields is left to
   `filter`. With none to admit, for the first that cannot start try KOD2 scale-in
   (`policy.preemption.scale_in`: surplus workers of lower-ranked elastic jobs, a bounded count per job)
   and, when that cannot admit the gang, the job-level dry run (`policy.preemption.victims`). This loop
   is the only place that shrinks a job for a waiting gang; the scaler loop only grows and consolidates;
3. carry a plan out: ask the Eviction API, as a dry run, whether every victim may be evicted (a
   PodDisruptionBudget may forbid it), reserve the freed capacity for every member of the preemptor gang
   (so no lower-ranked pod takes it while victims terminate; the reservations hold even while the
   victims still occupy the nodes) and remember the preemption, announce it on the preemptor's PodGroup
   (`tfjob-extender.io/preemption`, with that PodGroup's plan, in one write: a process serving `filter`
   apart from this loop must know the victims before training-operator recreates the first one evicted,
   or it would top the victim gang up, and must hold the room they free), evict whole victim gangs
   through the Eviction API, suspend the TFJobs taken whole by suspension (`spec.runPolicy.suspend`, with
   the seconds each has run), lower the Worker replicas of scaled-in jobs (training-operator deletes
   exactly the surplus pods), and publish the plan of every other PodGroup; then admit, as in 2, the
   gangs that may start in room the preemption freed beyond its gang's need (victims already gone count
   as gone). When a PodDisruptionBudget refuses an eviction — in the dry run, or for real because
   another disruption took the budget in between — the preemption is abandoned: nothing more is evicted
   or scaled in, the reservation is released, the record and its announcement are withdrawn (no victim
   counts as leaving), the reason is logged and written as a `PreemptionBlocked` Event on the
   preemptor's TFJob (and kept in `blocked`), and the gang's preemption is tried again after
   `pdb_retry_s`;
4. write an Event on each TFJob whose state changed (WAITING, RUNNING, STARVING, PREEMPTED, COMPLETED),
   and on the pending pods of the first waiting gangs what their gang waits for (`waitevents`); write
   on each TFJob seen finish the seconds it ran (`tfjob-extender.io/run-s`), from which a loop that
   starts later recalls the run-time history.
At most one preemption per tick: the next tick sees its effect before deciding again. What the loop did is
also counted in `counts` (plain counters: the HTTP layer exports them to Prometheus).
"""

from __future__ import annotations

import logging
from collections import Counter as CounterOf
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from extender.loops.actuator import Actuator, EvictionRefused
from extender.loops.leadership import AlwaysLeader, LeaderElector
from extender.loops.run_clock import RunClock
from extender.loops.ticking import Ticker
from extender.loops.waitevents import WaitEventReporter
from extender.policy.core.ledger import LedgerChange
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.core.views import GangKey, PodView, PreemptionRecord, Role
from extender.policy.gang.planner import GangVerdict
from extender.policy.preemption.choice import PreemptionChoice, carried_out, choose_preemption
from extender.policy.preemption.residual_life import NO_SUSPENSIONS, RunTimes, Suspendable, worth_suspending
from extender.policy.preemption.run_protection import min_run_s, suspension_times_with
from extender.policy.preemption.victims import PreemptionPlan
from extender.policy.rank.jobstates import JobState, JobStateTracker
from extender.policy.rank.partial import PartialGang, overdue_partial_gangs
from extender.policy.rank.queue import queue_of
from extender.policy.scaling.workerplan import imported_reservations
from extender.state.commits import decide_and_commit
from extender.state.gang_annotations import (
    ATTAINED_ANNOTATION,
    GANG_PLAN_ANNOTATION,
    PREEMPTION_ANNOTATION,
    RESUMED_AT_ANNOTATION,
    RUN_TIME_ANNOTATION,
    SUSPENDED_AT_ANNOTATION,
    SUSPENSIONS_ANNOTATION,
    group_plans,
    preemption_annotation,
)
from extender.state.store import ClusterState

log = logging.getLogger(__name__)


@dataclass
class PreemptionCounts:
    """What the preemption loop has done since it started, as plain counters (the HTTP layer exports them
    to Prometheus)."""

    ticks: CounterOf[str] = field(default_factory=CounterOf)
    """Role (leader, follower) → ticks."""
    plans_reserved: CounterOf[str] = field(default_factory=CounterOf)
    """Why (admission: a gang that may start, ahead of its pods; preemption: the room freed for a
    preemptor; completion: a half-placed gang completed) → gang plans reserved."""
    preemptions: CounterOf[str] = field(default_factory=CounterOf)
    """Outcome (carried-out, stale: the model changed under the plan, blocked: a PodDisruptionBudget
    refused an eviction, dry-run: planned in shadow mode) → preemptions."""
    evictions: int = 0
    """Pods evicted (preemption victims, and members of half-placed gangs released whole)."""
    suspensions: int = 0
    """TFJobs suspended (`spec.runPolicy.suspend` set)."""
    resumptions: int = 0
    """TFJobs this loop had suspended and resumed."""
    scale_ins: int = 0
    """TFJobs whose Worker replicas were lowered for a preemptor."""
    pdb_refusals: int = 0
    """Evictions a PodDisruptionBudget refused (in the dry run or for real): each abandons its preemption."""


@dataclass
class PreemptionLoop:
    state: ClusterState
    actuator: Actuator
    settings: PolicySettings
    clock: Callable[[], float]
    interval_s: float = 2.0
    """Seconds between ticks."""
    max_gangs_per_tick: int = 3
    """Waiting gangs, highest rank first, tried for preemption in one tick."""
    max_admissions_per_tick: int = 16
    """Gangs admitted ahead of their pods (their plans reserved) in one tick."""
    max_gangs_checked_per_tick: int = 16
    """Waiting gangs, highest rank first, whose plan one pass checks (to admit it, or to preempt for it)."""
    max_gangs_walked_per_tick: int = 128
    """Waiting gangs, highest rank first, one pass looks at: one that needs more than is free on all nodes
    together is passed over without a plan, and does not count against `max_gangs_checked_per_tick`."""
    dry_run: bool = False
    """Shadow mode: plan as usual and remember what would be done (`shadowed`), but never act through the
    actuator nor change the model."""
    leader: LeaderElector = field(default_factory=AlwaysLeader)
    """Only the instance holding the leadership preempts (several replicas must never evict twice)."""
    publish: Callable[[LedgerChange, ClusterSnapshot], None] = lambda change, snapshot: None
    """Where the plans reserved for preemptor gangs are published for other processes (the API server)."""
    shadowed: deque[PreemptionRecord] = field(default_factory=lambda: deque(maxlen=256))
    """In shadow mode, the preemptions that would have been carried out, oldest first."""
    job_states: dict[str, JobState] = field(default_factory=dict)
    history: list[PreemptionRecord] = field(default_factory=list)
    refused: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Gang → (model generation, the gang's aged weight) of its last refused dry run. The same model and the
    same weight give the same refusal (running victim gangs do not age), so that gang is skipped for free
    until either changes: a large waiting gang does not cost a full dry run every tick."""
    pdb_retry_s: float = 30.0
    """Seconds before a preemption a PodDisruptionBudget refused is tried again for the same gang."""
    quiet_recheck_s: float = 30.0
    """Seconds after which a pass that found nothing to do is made again on an unchanged model: a starving
    gang's rank keeps climbing with no event, and may come to outrank a job whose surplus it needs."""
    blocked: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Gang → (when its preemption may be tried again, why it was refused) after a PodDisruptionBudget
    refused an eviction."""
    counts: PreemptionCounts = field(default_factory=PreemptionCounts)
    leading: bool = False
    """Whether this instance held the leadership at its last tick."""
    _tracker: JobStateTracker = field(default_factory=JobStateTracker)
    run_clock: RunClock | None = None
    """How long jobs ran and run (made on first use, keeping `suspension_history_jobs` run times)."""
    _suspendable: Suspendable = NO_SUSPENSIONS
    """The TFJobs that may be suspended for a fresh gang, as of the last pass (`residual_life`)."""
    _to_resume: dict[str, float] | None = None
    """TFJob → when this loop suspended it, until the model shows it resumed (None until the first pass has
    looked for jobs a loop suspended before a restart)."""
    _waits: WaitEventReporter | None = None
    _quiet: tuple[int, tuple[str, ...], float] | None = None
    """(model generation, starving gangs, when) of the last pass that found nothing to do: an unchanged
    model with no gang newly starving gives the same answer until the ranks of starving gangs have
    climbed, so the pass is skipped for `quiet_recheck_s`."""
    _ticker: Ticker | None = None

    def start(self) -> None:
        self._ticker = Ticker("preemption-loop", self._wake, lambda: self.interval_s)
        self._ticker.start()

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        self.leader.release()

    def _wake(self) -> None:
        if self.state.is_synced():
            self.tick(self.clock())

    def tick(self, now: float) -> PreemptionPlan | None:
        """One pass; returns the preemption carried out, if any (none unless this instance leads)."""
        self.leading = self.leader.holds()
        self.counts.ticks["leader" if self.leading else "follower"] += 1
        if not self.leading:
            return None
        self.state.release_expired(now)
        self._import_worker_plans(now)
        snapshot = self.state.snapshot()
        self._resume_suspended(snapshot, now)
        suspendable = self._suspension_candidates(snapshot, now)
        if suspendable != self._suspendable:
            self._suspendable, self.refused, self._quiet = suspendable, {}, None
        starving = tuple(rank.subject for rank in queue_of(snapshot, self.settings).starving(now, self.settings))
        overdue = list(overdue_partial_gangs(snapshot, now, self.settings))
        if overdue:
            self._resolve(snapshot, overdue, now)
            snapshot = self.state.snapshot()
        quiet = self._quiet
        if quiet is not None and quiet[:2] == (snapshot.generation, starving) and now - quiet[2] < self.quiet_recheck_s:
            return None
        choice = self._choose(snapshot, now)
        plan = self._unblocked(choice.plan, now)
        if self.dry_run:
            if choice.admit is not None:
                log.info("would reserve ahead of its pods (dry run): %s", choice.admit.reason)
            record = carried_out(plan, now).preemption if plan is not None else None
            if plan is not None and record is not None:
                self.shadowed.append(record)
                self.counts.preemptions["dry-run"] += 1
                log.info("would carry out (dry run): %s", plan.reason)
            self._quiet = (snapshot.generation, starving, now)
            return plan
        admitted, snapshot, choice = self._admit_in_rank(snapshot, choice, now, 0)
        plan = self._unblocked(choice.plan, now)
        if plan is not None and not self._carry_out(snapshot, plan, now):
            plan = None
        if plan is not None:
            # Room the preemption frees beyond its preemptor's need (already free when victims leave at
            # once) goes to the next gangs in rank now, not a tick later.
            snapshot = self.state.snapshot()
            self._admit_in_rank(snapshot, self._choose(snapshot, now), now, admitted)
        reported = self.state.snapshot()
        self._report_states(reported, now)
        if self._waits is None:
            self._waits = WaitEventReporter(self.actuator, self.settings)
        self._waits.report(reported, now)
        self._quiet = (snapshot.generation, starving, now) if choice.plan is None and choice.admit is None else None
        return plan

    def _admit_in_rank(
        self, snapshot: ClusterSnapshot, choice: PreemptionChoice, now: float, admitted: int
    ) -> tuple[int, ClusterSnapshot, PreemptionChoice]:
        """Reserve the plans of the gangs that may start now, in rank order, each pass on the model that
        includes the ones before (up to `max_admissions_per_tick` a tick, `admitted` of them already): the
        count, the last snapshot and the choice made on it."""
        while (
            choice.admit is not None and admitted < self.max_admissions_per_tick and self._admit(snapshot, choice.admit)
        ):
            admitted += 1
            snapshot = self.state.snapshot()
            choice = self._choose(snapshot, now)
        return admitted, snapshot, choice

    def _choose(self, snapshot: ClusterSnapshot, now: float) -> PreemptionChoice:
        choice = choose_preemption(
            snapshot,
            self.settings,
            now,
            self.refused,
            max_gangs=self.max_gangs_per_tick,
            max_checked=self.max_gangs_checked_per_tick,
            max_walked=self.max_gangs_walked_per_tick,
            suspendable=self._suspendable,
        )
        live = queue_of(snapshot, self.settings).summaries
        self.refused = {gang: memo for gang, memo in {**self.refused, **choice.refused}.items() if gang in live}
        return choice

    def _unblocked(self, plan: PreemptionPlan | None, now: float) -> PreemptionPlan | None:
        """The plan, unless a PodDisruptionBudget refused its gang's preemption and the retry is not due."""
        if plan is not None and self.blocked.get(plan.gang, (0.0, ""))[0] > now:
            return None
        return plan

    def _admit(self, snapshot: ClusterSnapshot, verdict: GangVerdict) -> bool:
        """Reserve and publish the plan of a gang that may start now; False when the model moved under it."""
        change = LedgerChange(reserve=verdict.reservations)
        if not self.state.commit(change, decided_on=snapshot.generation):
            return False
        self.publish(change, snapshot)
        self.counts.plans_reserved["admission"] += 1
        log.info("reserved ahead of its pods: %s", verdict.reason)
        return True

    def _resolve(self, snapshot: ClusterSnapshot, overdue: list[PartialGang], now: float) -> None:
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
                self.actuator.record_event("TFJob", job, "ReleasedWhole", reason)

    def _import_worker_plans(self, now: float) -> None:
        """Reserve the workers a scaler (maybe in another process) planned on TFJobs and not placed yet."""
        if self.dry_run:
            return
        outcome = decide_and_commit(self.state, lambda snapshot: _Imported(imported_reservations(snapshot, now)))
        if not outcome.committed:
            log.debug("worker plans not reserved this tick: the model kept changing")

    def _carry_out(self, snapshot: ClusterSnapshot, plan: PreemptionPlan, now: float) -> bool:
        """Check the evictions with the API server, reserve the freed room for the gang (only if the model
        did not change under the plan in a way it does not survive), then act: no action is ever taken on
        a stale decision, and a preemption a PodDisruptionBudget refuses is abandoned whole."""
        change = carried_out(plan, now)
        victims = self._evicted_victims(plan)
        try:
            for pod in victims:
                self.actuator.evict(pod, plan.reason, dry_run=True)
        except EvictionRefused as error:
            self._blocked(snapshot, plan, now, str(error))
            return False
        if not self.state.commit(change, decided_on=snapshot.generation):
            self.counts.preemptions["stale"] += 1
            log.info("not preempting for %s: the cluster changed since the plan was made", plan.gang)
            return False
        self.counts.plans_reserved["preemption"] += 1
        log.info("%s", plan.reason)
        assert change.preemption is not None
        announced = self._announce(snapshot, plan, change)
        try:
            for pod in victims:
                self.actuator.evict(pod, plan.reason)
                self.counts.evictions += 1
            self._suspend(plan, now)
        except EvictionRefused as error:
            groups = tuple(sorted({reservation.group for reservation in change.reserve}))
            self.state.commit(LedgerChange(release_groups=groups, forget_preemption=plan.gang), decided_on=None)
            self._announce(snapshot, plan, None)
            self._blocked(snapshot, plan, now, str(error))
            return False
        except Exception:
            # Another API error: the victims reached may be leaving, so the preemption stays remembered and
            # its room held until the plan lapses (then it is decided again).
            self.publish(change, snapshot)
            raise
        for job, replicas in sorted(plan.scale_ins.items()):
            expected = snapshot.jobs[job].replicas.get(Role.WORKER, 0)
            resize = self.actuator.resize_workers(job, expected, replicas, {}, plan.reason)
            if not resize.applied:
                log.info("not scaling %s in: %d workers, planned from %d", job, resize.observed, expected)
                continue
            self.counts.scale_ins += 1
            self.actuator.record_event("TFJob", job, "ScaledIn", plan.reason)
        for job in sorted({pod.job for pod in plan.victims if pod.job and pod.job not in plan.scale_ins}):
            self.actuator.record_event("TFJob", job, "Preempted", plan.reason)
        self.publish(_without_group(change, announced), snapshot)
        self.blocked.pop(plan.gang, None)
        self.history.append(change.preemption)
        self.counts.preemptions["carried-out"] += 1
        return True

    def _suspend(self, plan: PreemptionPlan, now: float) -> None:
        """Suspend the plan's suspended jobs, each with the seconds it has run in all."""
        if not plan.suspended:
            return
        clock, jobs = self._run_clock(), self.state.snapshot().jobs
        stamp = f"{now:.3f}"
        for job, _ in plan.suspended:
            if self._to_resume is not None:
                self._to_resume[job] = float(stamp)
            annotations = {
                SUSPENDED_AT_ANNOTATION: stamp,
                SUSPENSIONS_ANNOTATION: suspension_times_with(jobs.get(job), now),
            }
            if job in self._suspendable.long_runners or job not in self._suspendable.newcomers:
                # a newcomer is not demoted: it had barely started, and queues again by its own rank
                annotations[ATTAINED_ANNOTATION] = f"{clock.ran(job, jobs, now):.3f}"
            self.actuator.suspend_job(job, True, annotations)
            self.counts.suspensions += 1
            clock.stop(job)
            self.actuator.record_event("TFJob", job, "Suspended", plan.reason)

    def _resume_suspended(self, snapshot: ClusterSnapshot, now: float) -> None:
        """Resume every job this loop suspended once training-operator has deleted all its pods: it comes
        back pending and waits in rank (after the fresh jobs of its PriorityClass)."""
        if self.dry_run:
            return
        if self._to_resume is None:
            self._to_resume = {key: job.suspended_at for key, job in snapshot.jobs.items() if job.suspended_by_extender}
        for key, suspended_at in sorted(self._to_resume.items()):
            job = snapshot.jobs.get(key)
            if job is None or (job.suspended_at >= suspended_at and not job.suspended):
                del self._to_resume[key]  # gone, or resumed (by this loop or by someone else)
                continue
            if not job.suspended_by_extender or snapshot.job_members.get(key):
                continue
            try:
                self.actuator.suspend_job(key, False, {RESUMED_AT_ANNOTATION: f"{max(now, job.suspended_at):.3f}"})
            except Exception as error:  # tried again next tick
                log.warning("could not resume %s: %s", key, error)
                continue
            self.counts.resumptions += 1

    def _suspension_candidates(self, snapshot: ClusterSnapshot, now: float) -> Suspendable:
        """The running suspendable TFJobs expected to run on for longer than a fresh job runs in all, and
        those that started at most `suspension_newcomer_s` ago and were never suspended."""
        if next(queue_of(snapshot, self.settings).waiting(now, self.settings), None) is None:
            return NO_SUSPENSIONS
        clock = self._run_clock()
        candidates = clock.suspendable(snapshot.jobs, now)
        if not candidates:
            return NO_SUSPENSIONS
        curve = RunTimes.estimate(clock.finished, clock.running(snapshot.jobs, now).values())
        window = self.settings.suspension_newcomer_s
        newcomers = frozenset(
            job
            for job, ran in candidates.items()
            if window > 0
            and (minimum := min_run_s(snapshot.jobs[job], self.settings)) <= ran <= minimum + window
            and not snapshot.jobs[job].suspended_at
        )
        return Suspendable(worth_suspending(curve, candidates, self.settings.suspension_min_history), newcomers)

    def _record_run_time(self, job: str, ran: float) -> None:
        """Write a finished job's run time on its TFJob, so a loop that starts later learns it back (not in
        a dry run; a job already deleted is simply not recorded)."""
        if self.dry_run:
            return
        try:
            self.actuator.annotate_job(job, {RUN_TIME_ANNOTATION: f"{ran:.3f}"})
        except Exception as error:  # the history of this process keeps it all the same
            log.warning("could not record the run time of %s: %s", job, error)

    def _run_clock(self) -> RunClock:
        if self.run_clock is None:
            self.run_clock = RunClock(self.settings.suspension_history_jobs)
        return self.run_clock

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

    @staticmethod
    def _evicted_victims(plan: PreemptionPlan) -> list[PodView]:
        """The victims removed by eviction (members of whole evicted gangs), not by a replica patch."""
        evicted = set(plan.evicted)
        return [
            pod
            for pod in plan.victims
            if any(pod.key == subject or (pod.group and pod.group in GangKey(subject).groups) for subject in evicted)
        ]

    def _blocked(self, snapshot: ClusterSnapshot, plan: PreemptionPlan, now: float, why: str) -> None:
        """Remember and report a preemption a PodDisruptionBudget refused; it is tried again later."""
        reason = f"preemption for gang {plan.gang} abandoned, retried in {self.pdb_retry_s:g} s: {why}"
        self.blocked[plan.gang] = (now + self.pdb_retry_s, reason)
        self.counts.pdb_refusals += 1
        self.counts.preemptions["blocked"] += 1
        log.warning("%s", reason)
        members = snapshot.group_members.get(GangKey(plan.gang).first, frozenset())
        for job in sorted({pod.job for key in members if (pod := snapshot.pods.get(key)) is not None and pod.job}):
            self.actuator.record_event("TFJob", job, "PreemptionBlocked", reason)

    def _report_states(self, snapshot: ClusterSnapshot, now: float) -> None:
        statuses = self._tracker.states(snapshot, now, self.settings)
        for job, ran in self._run_clock().observe(statuses, snapshot.jobs, now):
            self._record_run_time(job, ran)
        for status in statuses:
            if self.job_states.get(status.job) is status.state:
                continue
            self.job_states[status.job] = status.state
            self.actuator.record_event("TFJob", status.job, status.state.value.capitalize(), status.reason)


@dataclass(frozen=True, slots=True)
class _Imported:
    """Worker-plan reservations to hold, as a decision the commit seam can apply."""

    reservations: list[Reservation]

    @property
    def change(self) -> LedgerChange:
        return LedgerChange(reserve=tuple(self.reservations))


def _without_group(change: LedgerChange, group: str) -> LedgerChange:
    """`change` less the reservations of `group` (whose plan is already written)."""
    if not group:
        return change
    return replace(change, reserve=tuple(reservation for reservation in change.reserve if reservation.group != group))
