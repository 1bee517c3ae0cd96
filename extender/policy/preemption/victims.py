"""Job-level preemption: the cheapest set of lower-ranked work whose removal lets a whole gang start.

The preemptor is a gang (all its PodGroups), never a single pod. Candidate victims come in units:
- the surplus workers of an elastic TFJob (`enableDynamicWorker` and more workers than its minimum), one
  worker per unit, highest index first — training-operator deletes exactly the highest indices when
  `Worker.replicas` is lowered, so a job is only ever scaled in by a suffix of its indices;
- the whole gang of a running TFJob its owner marked suspendable (it checkpoints), of the preemptor's
  PriorityClass or a lower one, when the preemptor is fresh and the job is expected to run on for longer
  than a fresh job runs in all (`residual_life`): the job is suspended (`spec.runPolicy.suspend`) rather
  than evicted, and resumes later from its checkpoint, ranked after the fresh jobs (least attained
  service first, as Tiresias ranks); or, for a starving preemptor, one that started moments ago
  (`suspension_newcomer_s`), which resumes ranked as before;
- a whole gang of a lower PriorityClass (every PodGroup of its GangGroup), never part of one; suspended
  rather than evicted when its TFJob is marked suspendable. Within one
  PriorityClass weight never evicts: training-operator marks a TFJob Failed, for good, once it sees one
  of its pods deleted without `enableDynamicWorker`, so a weight-based eviction would kill a running job
  only to start a slightly heavier one sooner. Rank within a PriorityClass (size class,
  then weight) may only shrink elastic surplus;
- a lower-priority pod that belongs to no gang.
The PS, and any worker a job needs to stay at its minimum, are never taken alone; jobs that rank equal
to or above the preemptor are never touched — equal meaning the same PriorityClass, size class and
weight, whatever their arrival. The search:
1. refuse at once what cannot help: `preemptionPolicy: Never`, victims of an earlier preemption for this
   gang still terminating, a gang larger than the whole cluster, or (prefix sums, as Gödel prunes) even
   evicting every candidate would not free enough in total — the gang queue keeps, per PriorityClass,
   what bound gangs and loose pods hold and what elastic jobs hold beyond their minimum, so a hopeless
   gang is refused without looking at a single victim — or no node could hold a member even empty;
2. prefer a set touching one job: each candidate subject alone (its surplus, else the whole gang), the
   feasible one that throws the least work away (`taking_cost`: the training since its last checkpoint
   and its restart; surplus workers cost nothing, their job trains on), then with the fewest pods, then
   the lowest rank;
3. otherwise add units cheapest first (surplus, then suspensions, then evictions; within a PriorityClass
   the least work thrown away, then the lowest rank) until the dry run
   plans the whole gang, then hand back every unit the plan can do without.
Each feasibility test is the gang planner itself, run with the victims' requests handed back. Candidates
are listed as subjects with their totals (from the gang queue); a subject's pods are only looked up when
the search reaches it with a dry run that could succeed, so a decision costs what it examines, not the
size of the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from extender.policy.core.resources import EMPTY, Resources, describe, total
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView
from extender.policy.gang.planner import GangVerdict
from extender.policy.preemption.residual_life import NO_SUSPENSIONS, Suspendable
from extender.policy.preemption.search import (
    PreemptionRefusal,
    Search,
    VictimUnit,
    ascending,
    open_search,
    victims_of,
)


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    gang: str
    victims: tuple[PodView, ...]
    scale_ins: Mapping[str, int]
    """TFJob key → the Worker replicas to set (its surplus workers go)."""
    evicted: tuple[str, ...]
    """Subjects removed whole through the Eviction API (gang keys, or pod keys of pods without a gang)."""
    verdict: GangVerdict
    """The preemptor gang's plan with the victims gone."""
    reason: str
    suspended: tuple[tuple[str, str], ...] = ()
    """(TFJob key, gang key) of the jobs suspended whole (`spec.runPolicy.suspend`): training-operator
    deletes their pods, and the loop resumes them once they are gone."""

    @property
    def disrupted(self) -> int:
        return len(self.scale_ins) + len(self.evicted) + len(self.suspended)

    @property
    def removed_whole(self) -> tuple[str, ...]:
        """Every subject removed whole: evicted, or suspended."""
        return self.evicted + tuple(gang for _, gang in self.suspended)


Decision = PreemptionPlan | PreemptionRefusal


def plan_preemption(
    snapshot: ClusterSnapshot,
    group_key: str,
    settings: PolicySettings,
    now: float,
    *,
    terminating_victims: Iterable[str] = (),
    suspendable: Suspendable = NO_SUSPENSIONS,
) -> Decision:
    """The cheapest victims that let the gang of `group_key` be planned whole, or why there are none.
    `suspendable`: TFJobs that may be suspended (and resumed later) for it (`residual_life`)."""
    search = open_search(
        snapshot, group_key, settings, now, terminating_victims, doing="preemption", suspendable=suspendable
    )
    if isinstance(search, PreemptionRefusal):
        return search
    state = search.state
    hopeless = _hopeless(search)
    if hopeless is not None:
        return PreemptionRefusal(state.key, f"gang {state.key}: {hopeless}")
    chosen = _one_subject(search) or _accumulate(search)
    if chosen is None:
        return PreemptionRefusal(
            state.key, f"gang {state.key}: evicting every lower-ranked job would still not let it be placed whole"
        )
    verdict = search.dry_run(chosen)
    assert verdict is not None and verdict.admitted, "a chosen victim set always passed its dry run"
    return _plan(state.key, chosen, verdict)


def _hopeless(search: Search) -> str | None:
    """Prefix-sum pruning (past the per-PriorityClass ceiling `open_search` checks): what every candidate
    together could free, in total, and whether each member still needed fits some node at all."""
    snapshot = search.snapshot
    table = snapshot.capacity
    free_now = table.free_total()
    evicted_whole = {subject.key for subject in search.subjects if not subject.surplus}
    freeable = total(
        subject.freed for subject in search.subjects if not (subject.surplus and subject.key in evicted_whole)
    )
    reachable = free_now + freeable
    if not search.demand.fits_in(reachable):
        return f"even evicting every lower-ranked job leaves {describe(search.demand.shortfall(reachable))} missing"
    schedulable = np.flatnonzero(table.schedulable)
    fits_somewhere: dict[Resources, bool] = {}
    for count, pods in search.needs:
        placeable = 0
        for pod in pods:
            if placeable >= count:
                break
            if pod.requests not in fits_somewhere:
                empty = table.fits(schedulable, table.demand(pod.requests), table.allocatable[schedulable])
                fits_somewhere[pod.requests] = bool(empty.any())
            placeable += fits_somewhere[pod.requests]
        if placeable < count:
            example = next(pod for pod in pods if not fits_somewhere[pod.requests])
            return (
                f"only {placeable} of the {count} members still needed could fit on any node even empty "
                f"(e.g. {example.name}, {describe(example.requests)})"
            )
    return None


DryRun = Callable[[Sequence[VictimUnit]], GangVerdict | None]


def _admits(dry_run: DryRun, chosen: Sequence[VictimUnit]) -> bool:
    verdict = dry_run(chosen)
    return verdict is not None and verdict.admitted


def _one_subject(search: Search) -> list[VictimUnit] | None:
    """The feasible single-subject set that throws the least work away, then with the fewest pods (a
    surplus prefix counts as its subject, and costs nothing: its job trains on)."""
    dry_run = search.dry_run
    options: list[list[VictimUnit]] = []
    for subject in search.subjects:
        if not search.could_admit(subject.freed):
            continue
        group = search.units_of(subject)
        if not _admits(dry_run, group):
            continue
        options.append(_hand_back(list(group), dry_run) if subject.surplus else list(group))
    if not options:
        return None
    return min(
        options,
        key=lambda chosen: (sum(unit.cost for unit in chosen), len(victims_of(chosen)), ascending(chosen[0].rank)),
    )


def _accumulate(search: Search) -> list[VictimUnit] | None:
    """Units cheapest first until the dry run admits the gang; a subject whose whole total could not
    make that happen yet is taken without a dry run per unit."""
    chosen: list[VictimUnit] = []
    freed = EMPTY
    for subject in search.cheapest_first():
        units = search.units_of(subject)
        if not search.could_admit(freed + subject.freed):
            chosen.extend(units)
            freed = total(pod.requests for pod in victims_of(chosen))
            continue
        for unit in units:
            chosen.append(unit)
            if _admits(search.dry_run, chosen):
                return _hand_back(chosen, search.dry_run)
        freed = total(pod.requests for pod in victims_of(chosen))
    return None


def _hand_back(chosen: list[VictimUnit], dry_run: DryRun) -> list[VictimUnit]:
    """Reprieve, last taken first, every unit the plan does not need (a job's surplus stays a suffix)."""
    kept = list(chosen)
    for unit in reversed(chosen):
        if unit.is_surplus and any(
            other.subject == unit.subject and other.is_surplus and (other.scale_to or 0) < (unit.scale_to or 0)
            for other in kept
        ):
            continue
        trial = [other for other in kept if other is not unit]
        if trial and _admits(dry_run, trial):
            kept = trial
    return kept


def _plan(gang: str, chosen: Sequence[VictimUnit], verdict: GangVerdict) -> PreemptionPlan:
    scale_ins: dict[str, int] = {}
    evicted: list[str] = []
    suspended: dict[str, str] = {}
    for unit in chosen:
        if unit.scale_to is not None:
            scale_ins[unit.job] = min(scale_ins.get(unit.job, unit.scale_to), unit.scale_to)
        elif unit.suspend:
            suspended[unit.job] = unit.subject
        elif unit.subject not in evicted:
            evicted.append(unit.subject)
    for subject in [*evicted, *suspended.values()]:
        for job in {unit.job for unit in chosen if unit.subject == subject and unit.job}:
            scale_ins.pop(job, None)
    victims = victims_of(chosen)
    parts = [f"scale {job} in to {count} workers" for job, count in sorted(scale_ins.items())]
    parts += [f"suspend {job}" for job in sorted(suspended)]
    parts += [f"evict {subject}" for subject in evicted]
    reason = f"preempting for gang {gang}: {'; '.join(parts)} ({len(victims)} pods)"
    return PreemptionPlan(gang, victims, scale_ins, tuple(evicted), verdict, reason, tuple(sorted(suspended.items())))
