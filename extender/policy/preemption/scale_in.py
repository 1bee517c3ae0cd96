"""KOD2 scale-in (Algorithm 2): the cheapest preemption, shrinking lower-ranked elastic jobs (pure).

For one waiting gang, running jobs in ascending rank give up at most `scale_in_step` workers each,
highest index first (training-operator deletes exactly the highest indices when `Worker.replicas` drops),
never below the job's minimum, never the PS, the chief or worker 0, until the dry run plans the whole
gang. Jobs that rank equal to or above the gang are exempt (equal weight and earlier arrival included):
the same `may_preempt` rule as whole-gang preemption (`victims`). The preemption loop asks this first
and falls back to `victims.plan_preemption` when scaling within the per-tick counts cannot admit the gang.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import Role
from extender.policy.gang.planner import GangVerdict
from extender.policy.preemption.search import PreemptionRefusal, VictimUnit, open_search, victims_of
from extender.policy.preemption.victims import PreemptionPlan


def plan_scale_in(
    snapshot: ClusterSnapshot,
    group_key: str,
    settings: PolicySettings,
    now: float,
    *,
    terminating_victims: Iterable[str] = (),
) -> PreemptionPlan | PreemptionRefusal:
    """Surplus workers of lower-ranked elastic jobs that let the gang of `group_key` start (KOD2 Algorithm 2).

    Jobs in ascending rank give up their highest-index surplus workers, at most `scale_in_step` each,
    until the dry run plans the whole gang; the plan stops at the first set that admits it.
    """
    search = open_search(snapshot, group_key, settings, now, terminating_victims, doing="scaling anything in")
    if isinstance(search, PreemptionRefusal):
        return search
    state = search.state
    chosen: list[VictimUnit] = []
    surplus = (unit for subject in search.cheapest_first() if subject.surplus for unit in search.units_of(subject))
    for unit in _within_step(surplus, settings):
        chosen.append(unit)
        verdict = search.dry_run(chosen)
        if verdict is not None and verdict.admitted:
            return _scale_in_plan(state.key, chosen, verdict)
    return PreemptionRefusal(
        state.key, f"gang {state.key}: scaling lower-ranked elastic jobs in by the allowed count does not make room"
    )


def _within_step(units: Iterable[VictimUnit], settings: PolicySettings) -> Iterator[VictimUnit]:
    """Surplus units only, at most `scale_in_step` per job, each job's highest indices first; never worker 0."""
    taken: Counter[str] = Counter()
    for unit in units:
        if not unit.is_surplus or taken[unit.job] >= settings.scale_in_step or (unit.scale_to or 0) < 1:
            continue
        if any(pod.role is not Role.WORKER for pod in unit.pods):
            continue
        taken[unit.job] += 1
        yield unit


def _scale_in_plan(gang: str, chosen: Sequence[VictimUnit], verdict: GangVerdict) -> PreemptionPlan:
    scale_ins: dict[str, int] = {}
    for unit in chosen:
        scale_to = unit.scale_to or 0
        scale_ins[unit.job] = min(scale_ins.get(unit.job, scale_to), scale_to)
    victims = victims_of(chosen)
    parts = [f"scale {job} in to {count} workers" for job, count in sorted(scale_ins.items())]
    reason = f"scaling in for gang {gang} (KOD2 scale-in): {'; '.join(parts)} ({len(victims)} pods)"
    return PreemptionPlan(gang, victims, scale_ins, (), verdict, reason)
