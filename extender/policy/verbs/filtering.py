"""The `filter` verb's policy: plain resource fit for ungrouped pods, gang admission and steering for
members of a PodGroup.

For a gang member:
0. Some of its gang's pods are victims of a recorded preemption and still hold their node → it waits:
   its controller recreates evicted victims at once, and a gang being removed takes no new member.
1. It already has a reservation, or the scaler planned it (a new or migrated worker named in its TFJob's
   `tfjob-extender.io/worker-plan`) → keep only its planned node (steer); if kube-scheduler no longer offers
   that node, plan the whole gang again with this pod pinned to what is offered.
   If a member has vanished since the plan was made, the plan is released and the pod waits.
2. Its gang already has `minMember` placed or reserved in every group → plain fit (surplus members and
   scale-out pods join a running gang without a barrier), inside the domain its members run in when the
   gang must gather in one network domain.
3. Otherwise plan the whole gang, around the room held for starving gangs that go before it (see
   `backfill`), with this pod pinned to the candidates. A failed plan remembers the candidates it was
   planned from, as a set (kube-scheduler sends the same nodes in a new order on every call), and is
   reused while neither capacity nor membership changed and the call offers none but those nodes (any
   order, or fewer; a candidate tuple seen before, which the wire layer hands back as the same object,
   is recognised by identity, without looking up its names); a call offering another node plans again.
   A plan that would delay a higher-ranked waiting gang, or fits only in room held for a starving one, is
   not reserved: the gang yields (see `admission`).
A pod with resource claims, or a member of a gang with such a pod, passes through untouched: it is left to
kube-scheduler's DRA plugin (`left_alone`). A pending member of a leftover gang (its TFJob succeeded,
failed, is suspended or gone) is turned away, and any plan its gang still holds is released.
A member naming its PodGroup in `spec.schedulingGroup` whose PodGroup the model lacks is a sign the model is
behind (kube-scheduler asks about such a pod only once the PodGroup exists): the answer says so
(`model_behind`), and the verb gives the watch a moment before deciding for good.
For a gang kube-scheduler gates itself (`GroupView.gated_by_scheduler`, with
`PolicySettings.defer_to_scheduler_gang_barrier`), the barrier is kube-scheduler's: where the extender
would turn a member away because its gang is incomplete or does not fit whole, it answers plain fit
instead (keeping the plan changes); steering, yielding to higher-ranked gangs and waiting for preempted
pods stay. Not while another gang holds room on the candidates (its reserved plan): kube-scheduler places
a gang's members in one cycle, each asked about before any binds, so plain fit for each would let the gang
take, member by member, room it cannot see is held; the member is turned away as without the deferral.
Every candidate node ends in exactly one of: feasible, failed, unresolvable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import compress

import numpy as np

from extender.policy.core.capacity import Demand, Mask, Matrix, Rows
from extender.policy.core.decisions import FilterDecision, FilterOutcome
from extender.policy.core.memo import by_identity, by_value
from extender.policy.core.resources import describe
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, Offered
from extender.policy.core.views import PodView
from extender.policy.gang.left_alone import LEFT_TO_DRA
from extender.policy.gang.planner import GangVerdict, must_gather_domain
from extender.policy.gang.state import GangState, gang_state, is_satisfied, standing_failed_plan, waiting_reason
from extender.policy.rank.admission import held_back_by, plan_in_rank
from extender.policy.scaling.workerplan import planned_reservation

FIT_MEMO_MIN = 64
"""Candidate tuples at least this long (a count of nodes) have plain-fit answers remembered per table."""
FIT_MEMO_TUPLES = 4
"""Candidate tuples whose plain-fit answers are remembered per table before the memo starts afresh."""
FIT_MEMO_SHAPES = 16
"""Request shapes remembered per candidate tuple before its answers start afresh: with the tuples, at
most 64 answers a table (about 20 MiB at 5000 candidates in the worst case, freed with the table)."""


def filter_pod(
    snapshot: ClusterSnapshot,
    pod: PodView,
    candidates: Sequence[str],
    settings: PolicySettings,
    now: float,
) -> FilterDecision:
    """Decide which of `candidates` may take `pod`, and why the others may not."""
    if pod.scheduler_name != settings.scheduler_name:
        return FilterDecision("passthrough", f"not scheduled by {settings.scheduler_name}", tuple(candidates))
    if pod.resource_claims:
        return FilterDecision("passthrough", f"pod {pod.key}: {LEFT_TO_DRA}", tuple(candidates))
    if not pod.group:
        return fit_filter(snapshot, pod, candidates)
    known = snapshot.pods.get(pod.key)
    if known is None or known.uid != pod.uid:
        reason = (
            f"gang {pod.group}: pod {pod.key} (uid {pod.uid}) is not in the extender's model yet (its watch "
            "event has not arrived); the gang is planned once it is"
        )
        return _reject(candidates, "waiting", reason, resolvable=True)
    state = gang_state(snapshot, pod.group)
    if state.left_to_dra:
        return FilterDecision("passthrough", f"gang {state.key}: {LEFT_TO_DRA}", tuple(candidates))
    if state.leftover:
        release = tuple(state.members) if _holds_reservations(snapshot, state) else ()
        return _with_release(_reject(candidates, "left-over", state.leftover, resolvable=False), release)
    leaving = snapshot.members_leaving(pod.group)
    if leaving:
        reason = (
            f"gang {pod.group}: {len(leaving)} of its pods are being removed by a preemption and still hold "
            f"their nodes ({', '.join(leaving[:3])}); it takes no new member until they are gone"
        )
        return _reject(candidates, "waiting", reason, resolvable=False)
    held = snapshot.reservations.get(pod.key) or planned_reservation(snapshot, pod, now)
    if held is not None and held.expires_at > now:
        broken = waiting_reason(state)
        if broken is not None:
            decision = _reject(candidates, "waiting", broken, resolvable=False)
            return _barrier(snapshot, pod, candidates, state, settings, _with_release(decision, tuple(state.members)))
        terminating = _victims_terminating(snapshot, state.key)
        if held.node not in candidates and terminating:
            reason = f"gang {state.key}: waiting for {terminating} preempted pods to terminate (planned on {held.node})"
            return _reject(candidates, "waiting", reason, resolvable=False)
        if held.node in candidates:
            reason = f"gang {pod.group}: this pod is planned on {held.node}"
            others = dict.fromkeys(candidates, reason)
            del others[held.node]
            return FilterDecision("steered", reason, (held.node,), unresolvable=others)
        return _admit(snapshot, pod, candidates, settings, now, replanning=True)
    if is_satisfied(snapshot, state):
        return _inside_gathered_domain(snapshot, state, fit_filter(snapshot, pod, candidates), settings)
    return _admit(snapshot, pod, candidates, settings, now, replanning=False)


def _inside_gathered_domain(
    snapshot: ClusterSnapshot, state: GangState, decision: FilterDecision, settings: PolicySettings
) -> FilterDecision:
    """A late member of a MustGather gang may only join the domain the gang runs in."""
    domain = must_gather_domain(snapshot, state, settings)
    if domain is None:
        return decision
    label, nodes = domain
    reason = f"gang {state.key} must gather in {label}"
    outside = {name: reason for name in decision.feasible if name not in nodes}
    if not outside:
        return decision
    feasible = tuple(name for name in decision.feasible if name in nodes)
    summary = f"{decision.summary}; {len(feasible)} inside {label}"
    return FilterDecision(
        "fit" if feasible else "no-fit",
        summary,
        feasible,
        decision.failed,
        {**decision.unresolvable, **outside},
    )


def fit_filter(snapshot: ClusterSnapshot, pod: PodView, candidates: Sequence[str]) -> FilterDecision:
    """Keep the nodes whose free capacity (after bound pods and reservations) holds the pod's requests.

    Only the pod's own reservation (one left behind by an expired plan) counts as free for it; the places
    its gang holds for other members do not. The check runs on the dense capacity table, all candidates
    at once; the nodes that fail are grouped by the columns they lack, one reason per group. Without a
    reservation of its own the answer depends on the table, the candidates and the requests alone, so it
    is remembered on the (immutable) table for kube-scheduler's repeated candidate tuple: the pods of one
    shape that it asks about before the model next changes are answered at once.
    """
    table = snapshot.capacity
    if pod.key in snapshot.reservations or not isinstance(candidates, tuple) or len(candidates) < FIT_MEMO_MIN:
        return _fit(snapshot, pod, candidates)
    by_requests = by_identity(table.answers, candidates, FIT_MEMO_TUPLES, dict)
    decision = by_value(by_requests, pod.requests, FIT_MEMO_SHAPES, lambda: _fit(snapshot, pod, candidates))
    assert isinstance(decision, FilterDecision)
    return decision


def _fit(snapshot: ClusterSnapshot, pod: PodView, candidates: Sequence[str]) -> FilterDecision:
    table = snapshot.capacity
    rows = table.rows_of(candidates)
    known = rows >= 0
    demand = table.demand(pod.requests)
    room = (
        table.available[np.where(known, rows, 0)]
        if known.any()
        else np.zeros((len(rows), table.available.shape[1]), dtype=table.available.dtype)
    )
    own = snapshot.reservations.get(pod.key)
    if own is not None and own.node in table.rows:
        room = room.copy()
        room[rows == table.rows[own.node]] += table.vector(own.requests)
    short = _short_columns(room, demand)
    fits = known & ~short.any(axis=1) if not demand.unknown else np.zeros(len(rows), dtype=np.bool_)
    summary = f"{int(fits.sum())}/{len(candidates)} nodes fit {describe(pod.requests)}"
    if fits.all():
        return FilterDecision("fit", summary, tuple(candidates))
    failing = np.flatnonzero(~fits)
    unknown = failing[~known[failing]]
    unresolvable = dict.fromkeys(_names_at(candidates, unknown), "node is not in the extender's cluster model yet")
    lacking = failing[known[failing]]
    patterns = short[lacking] @ (1 << np.arange(short.shape[1], dtype=np.int64)) if len(lacking) else lacking
    distinct, first = np.unique(patterns, return_index=True)
    reasons = {
        pattern: _insufficient(table.layout.names, demand, short[lacking[where]])
        for pattern, where in zip(distinct.tolist(), first.tolist(), strict=True)
    }
    failed = dict(zip(_names_at(candidates, lacking), map(reasons.__getitem__, patterns.tolist()), strict=True))
    feasible = tuple(compress(candidates, fits.tolist()))
    return FilterDecision("fit" if feasible else "no-fit", summary, feasible, failed, unresolvable)


def _names_at(candidates: Sequence[str], positions: Rows) -> list[str]:
    return [candidates[position] for position in positions.tolist()]


def _insufficient(names: Sequence[str], demand: Demand, short: Mask) -> str:
    """The reason for a node lacking the demand's columns marked in `short` (resource `names` by column)."""
    missing = {*(names[column] for column in demand.columns[short].tolist()), *demand.unknown}
    return "insufficient " + ", ".join(sorted(missing))


def _short_columns(room: Matrix, demand: Demand) -> Mask:
    """Per row of `room`, which of the demand's columns it lacks."""
    return np.asarray(room[:, demand.columns] < demand.amounts, dtype=np.bool_)


def _admit(
    snapshot: ClusterSnapshot,
    pod: PodView,
    candidates: Sequence[str],
    settings: PolicySettings,
    now: float,
    *,
    replanning: bool,
) -> FilterDecision:
    state = gang_state(snapshot, pod.group)
    remembered = None if replanning else standing_failed_plan(snapshot, state, candidates)
    if remembered is not None:
        decision = _reject(candidates, "unplannable", remembered.reason, resolvable=True)
        return _barrier(snapshot, pod, candidates, state, settings, decision)
    offered = frozenset(candidates)
    verdict, precedence = plan_in_rank(snapshot, state, settings, now, pinned={pod.key: offered})
    verdict = _offered_to(verdict, pod, candidates, offered)
    release = tuple(state.members) if replanning or _holds_reservations(snapshot, state) else ()
    if not verdict.admitted:
        decision = _reject(
            candidates,
            "waiting" if verdict.waiting_for_members else "unplannable",
            verdict.reason,
            resolvable=not verdict.waiting_for_members,
        )
        return _barrier(snapshot, pod, candidates, state, settings, _with_plan_changes(decision, verdict, release))
    yielding = held_back_by(snapshot, state, verdict.reservations, settings, now, precedence)
    if yielding is not None:
        return _with_release(_reject(candidates, "yielding", yielding, resolvable=True), release)
    node = next((r.node for r in verdict.reservations if r.pod == pod.key), None)
    if node is None:
        decision = _with_plan_changes(_fit_after_plan(snapshot, pod, candidates, verdict), verdict, release)
        return _barrier(snapshot, pod, candidates, state, settings, decision)
    reason = f"{verdict.reason}; this pod on {node}"
    others = dict.fromkeys(candidates, reason)
    del others[node]
    decision = FilterDecision("planned", reason, (node,), unresolvable=others)
    return _with_plan_changes(decision, verdict, release)


def _offered_to(verdict: GangVerdict, pod: PodView, candidates: Sequence[str], offered: frozenset[str]) -> GangVerdict:
    """The verdict, its failed plan (if any) marked with the candidates `pod` was pinned to."""
    if verdict.failed_plan is None:
        return verdict
    as_sent = candidates if isinstance(candidates, tuple) else None
    failed = replace(verdict.failed_plan, offered=Offered(pod.key, offered, as_sent))
    return replace(verdict, failed_plan=failed)


def _fit_after_plan(
    snapshot: ClusterSnapshot, pod: PodView, candidates: Sequence[str], verdict: GangVerdict
) -> FilterDecision:
    """The gang is admitted without this pod (a surplus member): reject it for now, with the reason."""
    reason = f"{verdict.reason}; this surplus member waits for room beyond the gang's minimum"
    return _reject(candidates, "waiting", reason, resolvable=True)


def model_kept_changing(decision: FilterDecision, candidates: Sequence[str]) -> FilterDecision:
    """The answer when every plan for the gang was overtaken by changes to the model before it could be
    reserved: wait, and plan again at kube-scheduler's next attempt."""
    reason = f"{decision.summary}; the cluster changed before the plan could be reserved, it is planned again"
    return _reject(candidates, "waiting", reason, resolvable=True)


def _barrier(
    snapshot: ClusterSnapshot,
    pod: PodView,
    candidates: Sequence[str],
    state: GangState,
    settings: PolicySettings,
    decision: FilterDecision,
) -> FilterDecision:
    """`decision`, a member turned away by the all-or-nothing barrier; or, when kube-scheduler holds this
    gang's barrier, plain fit with the barrier's reason in the summary and the plan changes kept."""
    gated = settings.defer_to_scheduler_gang_barrier and any(group.gated_by_scheduler for group in state.groups)
    if not gated:
        return replace(decision, model_behind=True) if pod.group_in_spec and state.missing else decision
    holders = _holding_room_among(snapshot, state, candidates) if not decision.feasible else ()
    if holders:
        held = f"room on these nodes is held for gang {', '.join(holders[:3])}, which kube-scheduler cannot see"
        summary = f"{decision.summary}; not left to kube-scheduler's barrier: {held}"
        return replace(decision, summary=summary, model_behind=waiting_reason(state) is not None)
    fit = fit_filter(snapshot, pod, candidates)
    summary = f"{fit.summary}; kube-scheduler gates gang {state.key} ({decision.summary})"
    return FilterDecision(
        fit.outcome,
        summary,
        fit.feasible,
        fit.failed,
        fit.unresolvable,
        reserve=decision.reserve,
        release_groups=decision.release_groups,
        failed_plan=decision.failed_plan,
        model_behind=waiting_reason(state) is not None,
    )


def _holding_room_among(snapshot: ClusterSnapshot, state: GangState, candidates: Sequence[str]) -> list[str]:
    """The other gangs whose reserved plans hold room on any of the candidate nodes, sorted."""
    if not snapshot.reservations:
        return []
    offered = set(candidates)
    return sorted(
        {r.group for r in snapshot.reservations.values() if r.group not in state.members and r.node in offered}
    )


def _reject(candidates: Sequence[str], outcome: FilterOutcome, reason: str, *, resolvable: bool) -> FilterDecision:
    reasons = dict.fromkeys(candidates, reason)
    if resolvable:
        return FilterDecision(outcome, reason, (), failed=reasons)
    return FilterDecision(outcome, reason, (), unresolvable=reasons)


def _with_plan_changes(decision: FilterDecision, verdict: GangVerdict, release: tuple[str, ...]) -> FilterDecision:
    return FilterDecision(
        decision.outcome,
        decision.summary,
        decision.feasible,
        decision.failed,
        decision.unresolvable,
        reserve=verdict.reservations,
        release_groups=release,
        failed_plan=verdict.failed_plan,
    )


def _with_release(decision: FilterDecision, groups: tuple[str, ...]) -> FilterDecision:
    return FilterDecision(
        decision.outcome,
        decision.summary,
        decision.feasible,
        decision.failed,
        decision.unresolvable,
        release_groups=groups,
    )


def _holds_reservations(snapshot: ClusterSnapshot, state: GangState) -> bool:
    return any(pod.key in snapshot.reservations for members in state.members.values() for pod in members)


def _victims_terminating(snapshot: ClusterSnapshot, gang: str) -> int:
    """How many pods preempted for `gang` still hold their node (terminating)."""
    record = snapshot.preemptions.get(gang)
    return 0 if record is None else len(snapshot.victims_holding(record))
