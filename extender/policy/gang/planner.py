"""Gang admission: plan the placement of a whole PodGroup (or GangGroup) at once, all or nothing.

A gang is the set of PodGroups that must start together: one PodGroup, or every PodGroup named in its
GangGroup annotation. Planning runs on the snapshot's free capacity (bound pods and other gangs'
reservations count as used) and succeeds only when every group reaches its `minMember` with members
that are bound, already reserved, or placed by this plan. The result is either a set of reservations to
commit or a `FailedPlan` that records the model generations it was tried on (and `filter` adds the
candidate nodes it pinned its member to): until capacity grows or membership changes, and for `filter`
while no other node is offered, the same gang is answered from that record without planning again
(`state.standing_failed_plan`).
A gang whose PodGroups carry network-topology gather rules is placed inside one network domain (see
`topology`); any other gang is placed on the whole cluster, as before. The capacity and the placement units
a plan works on are built in `gang_capacity`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from extender.policy.core.resources import Resources, describe, smallest
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot, FailedPlan, Reservation
from extender.policy.core.views import GatherRule, GroupView, PodView
from extender.policy.gang.index_order import place_in_index_order
from extender.policy.gang.placement import FreeCapacity, Placement, PlacementUnit, place
from extender.policy.gang.room import free_capacity, placement_unit
from extender.policy.gang.state import (
    GangState,
    membership_generation,
    waiting_reason,
)
from extender.policy.gang.topology import (
    GatherOutcome,
    TopologyTree,
    anchored_domain,
    gather,
    must_gather_depth,
    nodes_under,
    offer_slots,
    shapes_of,
    tree_of,
)


@dataclass(frozen=True, slots=True)
class GangVerdict:
    """The outcome of admitting a gang: a plan to reserve, or the reason it must wait."""

    gang: str
    admitted: bool
    reason: str
    reservations: tuple[Reservation, ...] = ()
    failed_plan: FailedPlan | None = None
    waiting_for_members: bool = False


def plan_gang(
    snapshot: ClusterSnapshot,
    state: GangState,
    settings: PolicySettings,
    now: float,
    *,
    pinned: Mapping[str, frozenset[str]] | None = None,
    freed: Mapping[str, Resources] | None = None,
    nodes: Collection[str] | None = None,
) -> GangVerdict:
    """Plan every pending member of the gang; admit only if each group reaches its minMember.

    `pinned` restricts some pods to some nodes (the candidates kube-scheduler offered for the pod being
    filtered). Reservations already held by the gang are treated as free, so a broken plan is replaced.
    `freed` adds capacity per node, as if some pods were gone (the dry run of a preemption). `nodes`, when
    given, are the only nodes worth looking at besides those in `freed` and those holding the gang's own
    reservations (a caller planning many times on one snapshot computes it once with `roomy_nodes`).
    """
    waiting = waiting_reason(state)
    if waiting is not None:
        return GangVerdict(state.key, False, waiting, waiting_for_members=True)
    if state.left_alone:
        return GangVerdict(state.key, False, state.left_alone_reason)
    own_reservations = {
        pod.key for members in state.members.values() for pod in members if pod.key in snapshot.reservations
    }
    pending = {key: tuple(pod for pod in members if pod.pending) for key, members in state.members.items()}
    smallest_pod = smallest(pod.requests for pods in pending.values() for pod in pods)
    capacity = free_capacity(snapshot, own_reservations, freed or {}, smallest_pod, nodes)
    units = [
        placement_unit(snapshot, key, pods, own_reservations, pinned or {}) for key, pods in pending.items() if pods
    ]
    required = {
        group.key: group.min_member - _already_placed(state.members[group.key], own_reservations)
        for group in state.groups
    }
    where = refusal = ""
    if _rules(state) and any(count > 0 for count in required.values()):
        placement, where, refusal = _gathered(snapshot, state, units, capacity, required, settings)
    else:
        placement = place(units, capacity)
    return _verdict(snapshot, state, settings, now, pending, required, placement, where, refusal)


def _verdict(
    snapshot: ClusterSnapshot,
    state: GangState,
    settings: PolicySettings,
    now: float,
    pending: Mapping[str, Sequence[PodView]],
    required: Mapping[str, int],
    placement: Placement,
    where: str,
    refusal: str,
) -> GangVerdict:
    """Admit the gang with `placement` if every group reaches its minMember, else record the failed plan.
    `where` says where a gathered gang was placed, `refusal` why it could not be gathered."""
    placed_by_group = Counter(
        group for group, pods in pending.items() for pod in pods if pod.key in placement.assignments
    )
    short = [group for group in state.groups if placed_by_group[group.key] < required[group.key]]
    needed = sum(len(pods) for pods in pending.values())
    if short:
        reason = refusal or _no_fit_reason(state, pending, len(placement.assignments))
        failed = FailedPlan(
            state.key,
            reason,
            snapshot.capacity_generation,
            membership_generation(snapshot, state),
            now,
            len(placement.assignments),
            needed,
        )
        return GangVerdict(state.key, False, reason, failed_plan=failed)
    timeout = plan_timeout(state.groups, settings)
    reservations = tuple(
        Reservation(pod.key, group, placement.assignments[pod.key], pod.requests, now + timeout)
        for group, pods in pending.items()
        for pod in pods
        if pod.key in placement.assignments
    )
    used = len({r.node for r in reservations})
    reason = f"gang {state.key}: planned {len(reservations)} pods on {used} node(s){where}"
    return GangVerdict(state.key, True, reason, reservations=reservations)


def _gathered(
    snapshot: ClusterSnapshot,
    state: GangState,
    units: Sequence[PlacementUnit],
    capacity: FreeCapacity,
    required: Mapping[str, int],
    settings: PolicySettings,
) -> tuple[Placement, str, str]:
    """The gang placed inside one network domain: the placement, where it went, and why it cannot go
    anywhere (empty when it could). A domain that takes every pending member is looked for first; only
    when there is none, one that takes what each group's minimum still needs."""
    tree = _tree(snapshot, settings)
    must_depth = must_gather_depth(tree, _rules(state))
    if isinstance(must_depth, str):
        return Placement({}, ()), "", f"gang {state.key}: {must_depth}"
    free, _ = capacity.as_resources()
    pods = [pod for unit in units for pod in unit.pods]
    allowed = {key: nodes for unit in units for key, nodes in unit.allowed.items()}
    shapes = shapes_of(pods, allowed)
    offers = offer_slots(tree, free, shapes)
    needed = sum(max(count, 0) for count in required.values())
    by_index = any(pod.topology_index is not None for pod in pods)
    anchors = _running_on(state)

    def attempt(every_pod: bool) -> GatherOutcome:
        def trial(order: Sequence[str]) -> tuple[Placement, bool]:
            nodes = {node: free[node] for node in order}
            if by_index:
                placement = place_in_index_order(units, nodes, order)
            else:
                placement = place(units, capacity.subset(order), node_order=order)
            if every_pod:
                return placement, not placement.unplaced
            placed = Counter(unit.key for unit in units for pod in unit.pods if pod.key in placement.assignments)
            return placement, all(placed[group] >= count for group, count in required.items())

        return gather(
            tree,
            offers,
            shapes,
            needed=len(pods) if every_pod else needed,
            whole=every_pod,
            must_depth=must_depth,
            anchors=anchors,
            free=free,
            trial=trial,
        )

    outcome = attempt(every_pod=True)
    if not outcome.held and needed < len(pods):
        outcome = attempt(every_pod=False)
    if outcome.held:
        return outcome.placement, _where(outcome), ""
    if must_depth == 0:
        return outcome.placement, "", ""
    return outcome.placement, "", _must_gather_reason(state, pods, needed, tree.layers[must_depth], outcome)


def must_gather_domain(
    snapshot: ClusterSnapshot, state: GangState, settings: PolicySettings
) -> tuple[str, frozenset[str]] | None:
    """For a gang with a MustGather rule whose members run: the domain of that layer they run in (its label
    and nodes), which later members must join too; None for any other gang."""
    rules = _rules(state)
    if not rules:
        return None
    tree = _tree(snapshot, settings)
    must_depth = must_gather_depth(tree, rules)
    if isinstance(must_depth, str) or must_depth == 0:
        return None
    domain = anchored_domain(tree, must_depth, _running_on(state))
    return None if domain is None else (domain.label, nodes_under(domain))


def _rules(state: GangState) -> list[GatherRule]:
    return [rule for group in state.groups for rule in group.gather]


def _tree(snapshot: ClusterSnapshot, settings: PolicySettings) -> TopologyTree:
    """The network topology of the ClusterNetworkTopology `default`, or of the settings."""
    layers = snapshot.network_topology if snapshot.network_topology is not None else settings.network_topology
    return tree_of(snapshot, layers)


def _running_on(state: GangState) -> set[str]:
    return {pod.node_name for members in state.members.values() for pod in members if pod.holds_node}


def _where(outcome: GatherOutcome) -> str:
    domain = outcome.domain
    if domain.depth == 0:
        return ", spread over the whole cluster: no single network domain holds the gang"
    return f" in {domain.label} (offers {outcome.offered} slots)"


def _must_gather_reason(
    state: GangState, pods: Sequence[PodView], needed: int, layer: str, outcome: GatherOutcome
) -> str:
    head = f"gang {state.key} must gather in one {layer}: needs {needed} pods ({describe_pods(pods)})"
    if outcome.anchored_apart:
        return f"{head}, but its running members already span several {layer} domains"
    return (
        f"{head}; no {layer} domain can hold them (the roomiest of {outcome.domains_at_layer}, "
        f"{outcome.domain.name}, offers {outcome.offered} slots)"
    )


def _already_placed(members: Sequence[PodView], replanned: set[str]) -> int:
    return sum(1 for pod in members if (pod.node_name or pod.finished) and pod.key not in replanned)


def plan_timeout(groups: Sequence[GroupView], settings: PolicySettings) -> float:
    """Seconds a plan of these PodGroups lives: the shortest `scheduleTimeoutSeconds`, else the default."""
    timeouts = [g.schedule_timeout_s for g in groups if g.schedule_timeout_s]
    return min(timeouts) if timeouts else settings.default_plan_timeout_s


def describe_pods(pods: Sequence[PodView]) -> str:
    """`1 × 1 CPU, 2 GiB + 8 × 2 CPU, 4 GiB`: identical requests counted together."""
    counts = Counter(pod.requests for pod in pods)
    return " + ".join(f"{count} × {describe(requests)}" for requests, count in counts.most_common())


def _no_fit_reason(state: GangState, pending: Mapping[str, Sequence[PodView]], placed: int) -> str:
    pods = [pod for group in pending.values() for pod in group]
    return f"gang {state.key} needs {len(pods)} pods ({describe_pods(pods)}); best plan fits {placed}"
