"""The preemption loop: job-level preemption for the highest-ranked gangs that cannot start.

kube-scheduler's own preemption is per pod and never picks victims of equal priority, so a KOD2
weight-based scale-in would never happen through it; this loop works on the model instead, level-triggered
on a fresh snapshot each tick. It decides with the pure evaluator (`policy.preemption.choice`) and leaves
the rest to three parts: the `SuspensionKeeper` (`loops.suspension`) suspends, resumes and keeps the
run-time history, the `PreemptionExecutor` (`loops.executor`) carries plans out, and the
`PreemptionReporter` (`loops.reporter`) writes the Events. Its knobs are one `PreemptionLoopSettings`
(`loops.preemption_settings`); what it did is counted in `PreemptionCounts` (`loops.preemption_counts`).
This loop is the only place that shrinks a job for a waiting gang; the scaler only grows and consolidates.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field

from extender.loops.actuator import Actuator
from extender.loops.executor import PreemptionExecutor, Publish
from extender.loops.leadership import AlwaysLeader, LeaderElector, tick_role
from extender.loops.preemption_counts import PreemptionCounts
from extender.loops.preemption_settings import PreemptionLoopSettings
from extender.loops.priority_booster import PriorityBooster
from extender.loops.reporter import PreemptionReporter
from extender.loops.run_clock import RunClock
from extender.loops.suspension import SuspensionKeeper
from extender.loops.ticking import Ticker
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PreemptionRecord
from extender.policy.preemption.choice import PreemptionChoice, carried_out, choose_preemption
from extender.policy.preemption.victims import PreemptionPlan
from extender.policy.rank.jobstates import JobStatus
from extender.policy.rank.partial import overdue_partial_gangs
from extender.policy.rank.queue import queue_of
from extender.state.store import ClusterState

log = logging.getLogger(__name__)


@dataclass
class PreemptionLoop:
    """Each tick of the instance holding the leadership:

    1. Settle: release expired plans, reserve the workers a scaler planned on TFJobs
       (`tfjob-extender.io/worker-plan`), resume the TFJobs this loop suspended whose pods are gone, weigh
       which running TFJobs are worth suspending, and complete or release half-placed gangs.
    2. Choose: walk the waiting gangs in rank order; the first that may start now is admitted, otherwise
       the first that cannot start gets a preemption plan (KOD2 scale-in, suspension or eviction).
    3. Carry out: reserve the admitted gangs' plans in rank order, each on the model including the ones
       before, then carry out at most one preemption and admit the gangs that fit in the room it frees.
    4. Report: Events on TFJobs whose state changed and on the pods of waiting gangs; the run times of
       jobs seen finish.

    A pass that found nothing to do on an unchanged model is not made again for `quiet_recheck_s`.
    """

    state: ClusterState
    actuator: Actuator
    settings: PolicySettings
    clock: Callable[[], float]
    loop_settings: PreemptionLoopSettings = field(default_factory=PreemptionLoopSettings)
    dry_run: bool = False
    """Shadow mode: plan as usual and remember what would be done (`shadowed`), but never act through the
    actuator nor change the model."""
    leader: LeaderElector = field(default_factory=AlwaysLeader)
    """Only the instance holding the leadership preempts (several replicas must never evict twice)."""
    publish: Publish = lambda change, snapshot: None
    """Where the plans reserved for preemptor gangs are published for other processes (the API server)."""
    run_clock: InitVar[RunClock | None] = None
    """The run-time history to start from (default: an empty one, filled from the TFJobs' `run-s`)."""
    counts: PreemptionCounts = field(default_factory=PreemptionCounts)
    leading: bool = False
    """Whether this instance held the leadership at its last tick."""
    refused: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Gang → (model generation, the gang's aged weight) of its last refused dry run. The same model and the
    same weight give the same refusal (running victim gangs do not age), so that gang is skipped for free
    until either changes: a large waiting gang does not cost a full dry run every tick."""
    shadowed: deque[PreemptionRecord] = field(init=False)
    """In shadow mode, the preemptions that would have been carried out, oldest first."""
    suspensions: SuspensionKeeper = field(init=False)
    executor: PreemptionExecutor = field(init=False)
    reporter: PreemptionReporter = field(init=False)
    booster: PriorityBooster = field(init=False)
    _quiet: tuple[int, tuple[str, ...], float] | None = field(default=None, init=False)
    """(model generation, starving gangs, when) of the last pass that found nothing to do: an unchanged
    model with no gang newly starving gives the same answer until the ranks of starving gangs have
    climbed, so the pass is skipped for `quiet_recheck_s`."""
    _ticker: Ticker | None = field(default=None, init=False)

    def __post_init__(self, run_clock: RunClock | None) -> None:
        self.shadowed = deque(maxlen=self.loop_settings.shadowed_preemptions_kept)
        self.suspensions = SuspensionKeeper(
            self.state, self.actuator, self.settings, self.counts, self.dry_run, run_clock
        )
        self.executor = PreemptionExecutor(
            self.state,
            self.actuator,
            self.counts,
            self.suspensions,
            self.publish,
            self.loop_settings.pdb_retry_s,
            self.dry_run,
        )
        self.reporter = PreemptionReporter(self.actuator, self.settings, self.loop_settings)
        self.booster = PriorityBooster(self.actuator, self.settings, self.loop_settings.priority_boost_interval_s)

    @property
    def history(self) -> list[PreemptionRecord]:
        """The preemptions carried out, oldest first."""
        return self.executor.history

    @property
    def blocked(self) -> dict[str, tuple[float, str]]:
        """Gang → (when its preemption may be tried again, why) after a PodDisruptionBudget refused it."""
        return self.executor.blocked

    def start(self) -> None:
        self._ticker = Ticker("preemption-loop", self._wake, lambda: self.loop_settings.interval_s)
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
        self.counts.ticks[tick_role(self.leading)] += 1
        if not self.leading:
            return None
        snapshot, starving = self._settle(now)
        if not self.dry_run:
            self.booster.tick(snapshot, now)
        if self._still_quiet(snapshot, starving, now):
            return None
        choice = self._choose(snapshot, now)
        if self.dry_run:
            shadowed = self._shadow(snapshot, choice, starving, now)
            self._observe_runs(self.state.snapshot(), now)
            return shadowed
        plan, quiet_generation = self._carry_out(snapshot, choice, now)
        self._report(now)
        self._quiet = (quiet_generation, starving, now) if quiet_generation is not None else None
        return plan

    def _settle(self, now: float) -> tuple[ClusterSnapshot, tuple[str, ...]]:
        """Step 1: release, import, resume and weigh; the snapshot to choose on and the starving gangs."""
        self.state.release_expired(now)
        self.executor.import_worker_plans(now)
        snapshot = self.state.snapshot()
        self.suspensions.resume_suspended(snapshot, now)
        if self.suspensions.weigh(snapshot, now):
            self.refused, self._quiet = {}, None
        starving = tuple(rank.subject for rank in queue_of(snapshot, self.settings).starving(now, self.settings))
        overdue = list(overdue_partial_gangs(snapshot, now, self.settings))
        if overdue:
            self.executor.resolve(snapshot, overdue, now)
            snapshot = self.state.snapshot()
        return snapshot, starving

    def _still_quiet(self, snapshot: ClusterSnapshot, starving: tuple[str, ...], now: float) -> bool:
        """Whether the last pass found nothing to do on this model with these gangs starving, less than
        `quiet_recheck_s` ago: this one would find nothing either."""
        quiet = self._quiet
        return (
            quiet is not None
            and quiet[:2] == (snapshot.generation, starving)
            and now - quiet[2] < self.loop_settings.quiet_recheck_s
        )

    def _choose(self, snapshot: ClusterSnapshot, now: float) -> PreemptionChoice:
        """Step 2: the gang to admit or the preemption to carry out, by the pure evaluator."""
        knobs = self.loop_settings
        choice = choose_preemption(
            snapshot,
            self.settings,
            now,
            self.refused,
            max_gangs=knobs.max_gangs_per_tick,
            max_checked=knobs.max_gangs_checked_per_tick,
            max_walked=knobs.max_gangs_walked_per_tick,
            suspendable=self.suspensions.suspendable,
        )
        live = queue_of(snapshot, self.settings).summaries
        self.refused = {gang: memo for gang, memo in {**self.refused, **choice.refused}.items() if gang in live}
        return choice

    def _carry_out(
        self, snapshot: ClusterSnapshot, choice: PreemptionChoice, now: float
    ) -> tuple[PreemptionPlan | None, int | None]:
        """Step 3: admit in rank, carry out the preemption, then admit in the room it freed. Returns the
        preemption carried out and, when the pass found nothing to do, the model generation it saw."""
        admitted, snapshot, choice = self._admit_in_rank(snapshot, choice, now, 0)
        if choice.held is not None:
            log.info("preemption for gang %s held %.0f s for its victims' next checkpoints", *choice.held)
        idle = choice.plan is None and choice.admit is None and choice.held is None
        quiet_generation = snapshot.generation if idle else None
        plan = self.executor.unblocked(choice.plan, now)
        if plan is None or self.executor.carry_out(snapshot, plan, now) != "carried-out":
            return None, quiet_generation
        # Room the preemption frees beyond its preemptor's need (already free when victims leave at once)
        # goes to the next gangs in rank now, not a tick later.
        snapshot = self.state.snapshot()
        self._admit_in_rank(snapshot, self._choose(snapshot, now), now, admitted)
        return plan, quiet_generation

    def _report(self, now: float) -> None:
        """Step 4: state Events, the run times of jobs seen finish, wait Events."""
        snapshot = self.state.snapshot()
        statuses = self._observe_runs(snapshot, now)
        self.reporter.report(snapshot, statuses, now)

    def _observe_runs(self, snapshot: ClusterSnapshot, now: float) -> list[JobStatus]:
        """Advance the run clock with the jobs' states (in shadow mode too: it writes nothing there)."""
        statuses = self.reporter.job_statuses(snapshot, now)
        self.suspensions.observe_runs(statuses, snapshot.jobs, now)
        return statuses

    def _admit_in_rank(
        self, snapshot: ClusterSnapshot, choice: PreemptionChoice, now: float, admitted: int
    ) -> tuple[int, ClusterSnapshot, PreemptionChoice]:
        """Reserve the plans of the gangs that may start now, in rank order, each pass on the model that
        includes the ones before (up to `max_admissions_per_tick` a tick, `admitted` of them already): the
        count, the last snapshot and the choice made on it."""
        limit = self.loop_settings.max_admissions_per_tick
        while choice.admit is not None and admitted < limit and self.executor.admit(snapshot, choice.admit):
            admitted += 1
            snapshot = self.state.snapshot()
            choice = self._choose(snapshot, now)
        return admitted, snapshot, choice

    def _shadow(
        self, snapshot: ClusterSnapshot, choice: PreemptionChoice, starving: tuple[str, ...], now: float
    ) -> PreemptionPlan | None:
        """Shadow mode's steps 3 and 4: remember the preemption that would be carried out, act on nothing."""
        if choice.admit is not None:
            log.info("would reserve ahead of its pods (dry run): %s", choice.admit.reason)
        plan = self.executor.unblocked(choice.plan, now)
        record = carried_out(plan, now).preemption if plan is not None else None
        if plan is not None and record is not None:
            self.shadowed.append(record)
            self.counts.preemptions["dry-run"] += 1
            log.info("would carry out (dry run): %s", plan.reason)
        self._quiet = (snapshot.generation, starving, now)
        return plan
