"""The `prioritize` verb's policy: PS–worker co-location and idleness, on kube-scheduler's 0–10 scale.

A pod with a reserved plan scores its planned node at the top and every other node at zero. A pod that
belongs to no TFJob and no gang gets no score at all (an empty list): the extender has nothing to add to
kube-scheduler's own scoring for it. Any other pod of a TFJob scores each node by co-location (a worker
beside its job's PS, a PS beside its workers, or at least beside other pods of its job) and by how idle
the node stays once the pod is on it; the two are weighted by settings and rounded to integers. Pods of
other schedulers, and pods left to kube-scheduler's DRA plugin (resource claims in their gang), score
zero everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from extender.policy.core.capacity import CapacityTable, Demand, Floats, Rows
from extender.policy.core.decisions import ScoreDecision
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import PodView, Role
from extender.policy.gang.left_alone import LEFT_TO_DRA, gang_needs_dra


def prioritize_pod(
    snapshot: ClusterSnapshot,
    pod: PodView,
    candidates: Sequence[str],
    settings: PolicySettings,
) -> ScoreDecision:
    """Score every candidate node for `pod` (integers in 0..settings.max_score)."""
    if pod.scheduler_name != settings.scheduler_name:
        return ScoreDecision("passthrough", "not ours: no preference", candidates, [0] * len(candidates))
    if pod.resource_claims or (pod.group and gang_needs_dra(snapshot, pod.group)):
        return ScoreDecision("passthrough", LEFT_TO_DRA, candidates, [0] * len(candidates))
    held = snapshot.reservations.get(pod.key)
    if held is not None:
        planned = [settings.max_score if node == held.node else 0 for node in candidates]
        return ScoreDecision("planned", f"planned on {held.node}", candidates, planned)
    if not pod.job and not pod.group:
        return ScoreDecision(
            "no-opinion", "not part of a TFJob or gang: kube-scheduler's own scoring places it", (), ()
        )
    partners, kin = _job_neighbourhood(snapshot, pod)
    table = snapshot.capacity
    rows = table.rows_of(candidates)
    idle = idleness_after(table, rows, table.demand(pod.requests))
    credit = np.zeros(len(rows), dtype=np.float64)
    if kin:
        credit[np.isin(rows, table.rows_of(sorted(kin)))] = settings.colocation_weight * settings.colocation_same_job
    if partners:
        partner_rows = table.rows_of(sorted(partners))
        credit[np.isin(rows, partner_rows)] = settings.colocation_weight * settings.colocation_ps_bonus
    top = settings.max_score
    scores = np.clip(np.rint(top * (credit + settings.idleness_weight * idle)), 0, top).astype(np.int64).tolist()
    return ScoreDecision(
        "scored",
        f"best score {max(scores, default=0)}; {len(partners)} partner node(s)",
        candidates,
        scores,
        (credit, idle),
        ("weighted colocation", "idleness"),
    )


def idleness_after(table: CapacityTable, rows: Rows, demand: Demand) -> Floats:
    """How idle each node stays once the pod is on it: the mean, over cpu, memory and (where the node has
    any) GPUs, of the share left free (nothing counts below zero); 0 for a row of -1 (unknown node)."""
    known = rows >= 0
    safe = np.where(known, rows, 0)
    shares = np.zeros(len(rows), dtype=np.float64)
    terms = np.zeros(len(rows), dtype=np.float64)
    for column in table.layout.idle_columns:
        allocatable = table.allocatable[safe, column]
        present = known & (allocatable > 0)
        left = table.available[safe, column] - demand.vector[column]
        inverse = np.divide(1.0, allocatable, out=np.zeros(len(rows), dtype=np.float64), where=present)
        shares = shares + np.where(present & (left > 0), left * inverse, 0.0)
        terms = terms + present
    return np.divide(shares, terms, out=np.zeros(len(rows), dtype=np.float64), where=terms > 0)


def _job_neighbourhood(snapshot: ClusterSnapshot, pod: PodView) -> tuple[frozenset[str], frozenset[str]]:
    """Nodes with the pod's PS/worker partners, and nodes with any pod of its job (bound or reserved)."""
    if not pod.job:
        return frozenset(), frozenset()
    wanted = {Role.WORKER, Role.CHIEF, Role.MASTER, Role.EVALUATOR} if pod.role is Role.PS else {Role.PS}
    partners: set[str] = set()
    kin: set[str] = set()
    for key in snapshot.job_members.get(pod.job, frozenset()):
        member = snapshot.pods.get(key)
        if member is None or key == pod.key:
            continue
        held = snapshot.reservations.get(key)
        node = member.node_name if member.holds_node else held.node if held is not None else ""
        if not node:
            continue
        kin.add(node)
        if member.role in wanted:
            partners.add(node)
    return frozenset(partners), frozenset(kin)
