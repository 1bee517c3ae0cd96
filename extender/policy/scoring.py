"""The `prioritize` verb's policy: PS–worker co-location and idleness, on kube-scheduler's 0–10 scale.

A pod with a reserved plan scores its planned node at the top and every other node at zero. Any other
pod of a TFJob scores each node by co-location (a worker beside its job's PS, a PS beside its workers,
or at least beside other pods of its job) and by how idle the node stays once the pod is on it; the two
are weighted by settings and rounded to integers. Pods of other schedulers score zero everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.policy.decisions import ScoreDecision
from extender.policy.model import ClusterSnapshot, PodView, Role
from extender.policy.placement import idleness_after
from extender.policy.settings import PolicySettings


def prioritize_pod(
    snapshot: ClusterSnapshot,
    pod: PodView,
    candidates: Sequence[str],
    settings: PolicySettings,
) -> ScoreDecision:
    """Score every candidate node for `pod` (integers in 0..settings.max_score)."""
    if pod.scheduler_name != settings.scheduler_name:
        return ScoreDecision("passthrough", "not ours: no preference", dict.fromkeys(candidates, 0))
    held = snapshot.reservations.get(pod.key)
    if held is not None:
        planned = {node: settings.max_score if node == held.node else 0 for node in candidates}
        return ScoreDecision("planned", f"planned on {held.node}", planned)
    partners, kin = _job_neighbourhood(snapshot, pod)
    nodes = snapshot.nodes
    requests = pod.requests
    top = settings.max_score
    partner_credit = settings.colocation_weight * settings.colocation_ps_bonus
    kin_credit = settings.colocation_weight * settings.colocation_same_job
    scores: dict[str, int] = {}
    breakdown: dict[str, tuple[float, ...]] = {}
    for node in candidates:
        credit = partner_credit if node in partners else kin_credit if node in kin else 0.0
        state = nodes.get(node)
        idle = idleness_after(state, requests) if state is not None else 0.0
        score = round(top * (credit + settings.idleness_weight * idle))
        scores[node] = 0 if score < 0 else top if score > top else score
        breakdown[node] = (credit, idle)
    best = max(scores.values(), default=0)
    return ScoreDecision(
        "scored",
        f"best score {best}; {len(partners)} partner node(s)",
        scores,
        breakdown,
        ("weighted colocation", "idleness"),
    )


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
