"""Consolidation (Voda's worker migration): workers of a running job move onto its PS nodes (pure).

A worker of a running job that sits away from every PS of its job moves onto a PS node with room, at most
`consolidation_budget` workers per job per `consolidation_interval_s`, emptiest source node first, never
worker 0 and never making a waiting gang that fits now stop fitting. Only settled jobs out of their
cooldown move (the same rules as scale-out, `scaling.running_jobs`), none taken as often as an hour allows
(`max_takings_per_hour`: a move counts as a taking), and none while a gang ranked above them waits for
room it could get. Each move is an action with a reservation on the target node.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.policy.core.resources import EMPTY, Resources, describe
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.core.takings import taken_too_often
from extender.policy.core.views import JobView, PodView
from extender.policy.gang.placement import idleness
from extender.policy.rank.gang_summary import GangSummary
from extender.policy.rank.queue import queue_of
from extender.policy.rank.ranking import cluster_capacity
from extender.policy.scaling.scale_out import (
    ActionKind,
    FittingGangs,
    RunningJob,
    ScalingAction,
    ScalingPlan,
    blocking_gang,
    running_jobs,
    waiting_gangs,
)


def plan_consolidation(
    snapshot: ClusterSnapshot,
    settings: PolicySettings,
    now: float,
    last_action: Mapping[str, float],
    last_consolidation: Mapping[str, float],
) -> ScalingPlan:
    """Workers to move onto their job's PS node (Voda's worker migration), within the disruption budget."""
    if not settings.consolidation_enabled or settings.consolidation_budget <= 0:
        return ScalingPlan()
    capacity = cluster_capacity(snapshot)

    def due(job: JobView, summary: GangSummary) -> bool:
        last = max(last_consolidation.get(job.key, float("-inf")), job.consolidated_at)
        moved_lately = now - last < settings.consolidation_interval_s
        return summary.scattered and not moved_lately and not taken_too_often(job, settings, now)

    scattered = queue_of(snapshot, settings).scattered
    running, skipped = running_jobs(snapshot, settings, now, last_action, capacity, due, scattered)
    if not running:
        return ScalingPlan((), tuple(skipped))
    waiting = waiting_gangs(snapshot, settings, now)
    fitting = FittingGangs.of(snapshot, settings, now, waiting)
    remaining = {name: node.available for name, node in snapshot.nodes.items() if node.node.schedulable}
    shifted: dict[str, Resources] = {}
    actions: list[ScalingAction] = []
    for job in running:
        if not job.ps_nodes:
            continue
        if blocking_gang(job.rank, waiting, capacity) is not None:
            continue
        moves = _migrations(snapshot, job, remaining, settings.consolidation_budget)
        if not moves:
            continue
        trial_shifted = dict(shifted)
        for pod, node in moves:
            trial_shifted[node] = trial_shifted.get(node, EMPTY) - pod.requests
            trial_shifted[pod.node_name] = trial_shifted.get(pod.node_name, EMPTY) + pod.requests
        if not fitting.still_fit(trial_shifted):
            continue
        for pod, node in moves:
            remaining[node] = remaining[node] - pod.requests
        shifted = trial_shifted
        actions += [_migrate(job, pod, node, settings, now) for pod, node in moves]
    return ScalingPlan(tuple(actions), tuple(skipped))


def _migrations(
    snapshot: ClusterSnapshot, job: RunningJob, available: Mapping[str, Resources], budget: int
) -> list[tuple[PodView, str]]:
    """Workers away from every PS node, from the node holding fewest of the job's pods first, each onto
    the PS node with room (most room first); never worker 0. `available` is only read."""
    movable = [pod for pod in job.workers if pod.node_name not in job.ps_nodes and pod.index > 0]
    if not movable:
        return []
    movable.sort(key=lambda pod: (job.job_nodes.get(pod.node_name, 0), pod.node_name, -pod.index))
    remaining = {node: available[node] for node in job.ps_nodes if node in available}
    moves: list[tuple[PodView, str]] = []
    for pod in movable:
        if len(moves) >= budget:
            break
        targets = [
            node
            for node in job.ps_nodes
            if node in remaining and pod.requests.fits_in(remaining[node]) and pod.selects(snapshot.nodes[node].node)
        ]
        if not targets:
            continue
        target = min(
            targets, key=lambda node: (-idleness(remaining[node], snapshot.nodes[node].node.allocatable), node)
        )
        remaining[target] = remaining[target] - pod.requests
        moves.append((pod, target))
    return moves


def _migrate(job: RunningJob, pod: PodView, node: str, settings: PolicySettings, now: float) -> ScalingAction:
    reservation = Reservation(pod.key, job.group, node, pod.requests, now + settings.default_plan_timeout_s)
    reason = (
        f"move {pod.name} of {job.job.key} from {pod.node_name} to its PS node {node} "
        f"({describe(pod.requests)} free there): fewer nodes, PS traffic kept local"
    )
    return ScalingAction(
        ActionKind.MIGRATE, job.job.key, job.replicas, job.replicas, (pod.key,), (reservation,), reason
    )
