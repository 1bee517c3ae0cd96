"""Which waiting gang the preemption loop makes room for next, and what carrying a plan out commits.

One pass walks the waiting gangs in rank order (a bounded number) and skips those refused on the same
model and weight before; a gang that needs more than is free on all nodes together
(`backfill.least_room_needed`) is not planned and does not count against the bound. The first that may
start now without delaying a gang that goes before it (`admission.admissible_plan`) is admitted: its
plan is reserved at once, so that pods kube-scheduler happens to retry first (a newer gang's, while the
older gang's pods sit in their backoff) cannot take its room. A gang that fits but yields is left to
`filter`. When none can be admitted, the pass asks, for the highest-ranked gangs that cannot start, KOD2
scale-in (`scale_in`) and then the whole-gang search (`victims`). A plan whose victims are due to
checkpoint soon is held when waiting for those checkpoints costs the gang less than taking them now
would throw away (`taking_cost.checkpoint_wait_s`): the pass then carries nothing out and the next pass
asks again. A starving gang is never held: its wait is bounded first, its victims still the cheapest.
`carried_out` is the ledger change that holds the freed room for the whole preemptor gang and remembers
the preemption.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from extender.policy.core.ledger import LedgerChange
from extender.policy.core.resources import Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.takings import taken_too_often
from extender.policy.core.views import PreemptionRecord
from extender.policy.gang.planner import GangVerdict
from extender.policy.gang.state import gang_state
from extender.policy.preemption.lost_work import work_size
from extender.policy.preemption.residual_life import NO_SUSPENSIONS, Suspendable
from extender.policy.preemption.run_protection import too_young_to_preempt
from extender.policy.preemption.scale_in import plan_scale_in
from extender.policy.preemption.taking_cost import checkpoint_wait_s, summary_at_risk
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.policy.rank.admission import admissible_plan
from extender.policy.rank.backfill import least_room_needed
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import queue_of


@dataclass(frozen=True, slots=True)
class PreemptionChoice:
    """What one pass of the preemption loop decided."""

    plan: PreemptionPlan | None
    """The preemption to carry out, if any (at most one action per pass: the next sees its effect)."""
    refused: Mapping[str, tuple[int, float]]
    """Gangs whose search found nothing, with (model generation, aged weight) they were tried at."""
    admit: GangVerdict | None = None
    """The plan of a gang that may start now, to reserve (instead of a preemption)."""
    held: tuple[str, float] | None = None
    """(gang, seconds): a preemption for the gang held until its victims' next checkpoints."""


def choose_preemption(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    now: float,
    refused: Mapping[str, tuple[int, float]],
    *,
    max_gangs: int,
    max_checked: int,
    max_walked: int | None = None,
    suspendable: Suspendable = NO_SUSPENSIONS,
) -> PreemptionChoice:
    """Walk the waiting gangs in rank order (looking at most at `max_walked`, planning at most
    `max_checked`): the first that may start now is admitted; one that fits but yields is left to
    `filter`. Without one to admit, for the first `max_gangs` that cannot start, in rank order, try KOD2
    scale-in (surplus workers of lower-ranked elastic jobs, a bounded count per job) and, when that cannot
    admit the gang, job-level preemption. A gang refused at the same model generation and weight
    (`refused`) gives the same refusal and is skipped: running victims do not age, so nothing else could
    change the answer; unless some long runner may be suspended, whose margin and loss move with time.
    `suspendable`: TFJobs that may be suspended for a fresh gang (`residual_life`)."""
    queue = queue_of(snapshot, settings)
    room = free_in_all(snapshot)
    walked = checked = 0
    needing_room = []
    for rank in queue.waiting(now, settings):
        if checked >= max_checked or (max_walked is not None and walked >= max_walked):
            break
        walked += 1
        summary = queue.summaries[rank.subject]
        if not summary.complete or summary.reserved:
            continue
        if refused.get(summary.key) == (snapshot.generation, rank.weight):
            continue
        state = gang_state(snapshot, summary.origin)
        if room is not None and not least_room_needed(snapshot, state).fits_in(room):
            needing_room.append((rank, state.key, summary.origin))
            continue
        checked += 1
        admissible = admissible_plan(snapshot, state, settings, now)
        if admissible.admitted:
            return PreemptionChoice(None, {}, admissible)
        if not admissible.reservations:
            needing_room.append((rank, state.key, summary.origin))
    refusals: dict[str, tuple[int, float]] = {}
    for rank, key, origin in needing_room[:max_gangs]:
        earlier = snapshot.preemptions.get(key)
        terminating = earlier.victims if earlier else frozenset()
        decision = plan_scale_in(snapshot, origin, settings, now, terminating_victims=terminating)
        if not isinstance(decision, PreemptionPlan):
            decision = plan_preemption(
                snapshot, origin, settings, now, terminating_victims=terminating, suspendable=suspendable
            )
        if isinstance(decision, PreemptionPlan):
            wait = (
                None
                if rank.starving
                else _checkpoint_wait(snapshot, decision, queue.summaries, rank.subject, settings, now)
            )
            if wait is not None:
                return PreemptionChoice(None, refusals, held=(key, wait))
            return PreemptionChoice(decision, refusals)
        if not (held_back_by_time(snapshot, settings, now) or suspendable.margins_s):
            refusals[key] = (snapshot.generation, rank.weight)
    return PreemptionChoice(None, refusals)


def _checkpoint_wait(
    snapshot: ClusterSnapshot,
    plan: PreemptionPlan,
    summaries: Mapping[str, GangSummary],
    preemptor: str,
    settings: PolicySettings,
    now: float,
) -> float | None:
    """Seconds to hold `plan`, made for the gang `preemptor`, for the next checkpoints of the gangs it takes
    whole (`taking_cost`), or None to carry it out now (it takes none whole, or one of them does not say
    when it checkpoints). `summaries`: the gang queue's."""
    risks = []
    for subject in plan.removed_whole:
        victim = summaries.get(subject)
        if victim is None:
            return None
        risks.append(summary_at_risk(snapshot.jobs.get(victim.job) if victim.job else None, victim, now, settings))
    return checkpoint_wait_s(risks, work_size((summaries[preemptor].demand,))[0], settings)


def held_back_by_time(snapshot: ClusterSnapshot, settings: PolicySettings, now: float) -> bool:
    """Some running job is kept from being taken (whole, or scaled in) only until a time passes: it has
    not run its minimum yet, or it was taken as often as an hour allows (`run_protection`). A refusal then
    holds only until that time, on the same model: it is not remembered."""
    for summary in queue_of(snapshot, settings).summaries.values():
        if not summary.bound_pods or summary.ages:
            continue
        job = snapshot.jobs.get(summary.job) if summary.job else None
        if too_young_to_preempt(job, summary.started, settings, now) or taken_too_often(job, settings, now):
            return True
    return False


def free_in_all(snapshot: ClusterSnapshot) -> Resources | None:
    """What is free on all schedulable nodes together (after bound pods and reservations): a gang that needs
    more (`backfill.least_room_needed`) cannot start, whatever the plan. None for a snapshot whose capacity
    table does not cover its nodes (one a test builds by hand)."""
    table = snapshot.dense_capacity
    return None if table is None else table.free_total()


def carried_out(plan: PreemptionPlan, now: float) -> LedgerChange:
    """The model change that goes with carrying a plan out: the preemptor gang's plan reserved on the room
    its victims are leaving, and the preemption remembered (its victims gate the next one)."""
    record = PreemptionRecord(
        plan.gang,
        frozenset(pod.key for pod in plan.victims),
        tuple(sorted(plan.scale_ins)),
        plan.removed_whole,
        plan.reason,
        now,
        frozenset(pod.uid for pod in plan.victims),
    )
    return LedgerChange(reserve=plan.verdict.reservations, leaving=record.victims, preemption=record)
