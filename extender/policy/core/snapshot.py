"""The cluster snapshot: one immutable, generation-stamped view of the whole model.

`ClusterSnapshot` holds the views (`views`) by key, each node's state with what is free on it, the plans
reserved (`Reservation`), the plans that failed, on which generations and from which candidate nodes
(`FailedPlan`, `Offered`), the preemptions carried out (`PreemptionRecord`), and the dense capacity table.
The cluster model (`extender.state`) builds a new one per change; the policy only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from extender.policy.core.capacity import EMPTY_TABLE, CapacityTable
from extender.policy.core.frozenmap import empty_frozen_map
from extender.policy.core.memo import by_identity
from extender.policy.core.resources import EMPTY, Resources
from extender.policy.core.views import GroupView, JobView, NetworkLayer, NodeView, PodView, PreemptionRecord


class NodeLabelsEpoch:
    """Stands for one state of the set of nodes and their labels: the model replaces it whenever a node is
    added, removed, relabelled or retainted. What derives from node labels alone (the network-topology tree) is kept
    in `derived`, keyed by what else it depends on, and shared by every snapshot of the same epoch — a
    memo of pure functions, never state a decision depends on."""

    __slots__ = ("derived",)

    def __init__(self) -> None:
        self.derived: dict[object, object] = {}


@dataclass(frozen=True, slots=True)
class NodeState:
    """A node with what its bound pods use and what gang plans hold on it."""

    node: NodeView
    requested: Resources = EMPTY
    pods: frozenset[str] = frozenset()
    """Keys of the unfinished pods bound to this node."""
    reserved: Resources = EMPTY
    """Requests of pods planned onto this node by a gang reservation and not bound yet."""
    available: Resources = field(init=False)
    """Allocatable minus requested minus reserved: what any new pod may still take."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "available", self.node.allocatable - self.requested - self.reserved)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def free(self) -> Resources:
        """Allocatable minus bound pods' requests (reservations not subtracted)."""
        return self.node.allocatable - self.requested


@dataclass(frozen=True, slots=True)
class Reservation:
    """Capacity held on a node for a pod of a planned gang, until the pod binds or the plan expires."""

    pod: str
    """`namespace/name` of the pod (names are deterministic for TFJob replicas)."""
    group: str
    node: str
    requests: Resources
    expires_at: float


OFFERED_TUPLES_MEMO = 2
"""Candidate tuples whose `Offered.include` answer is remembered before that memo starts afresh (two: a
gang's PS and workers may be offered different lists). Each entry holds its tuple, names included (about
0.3 MB at 5000 candidates), so a failed plan holds at most three with `Offered.as_sent`."""


@dataclass(frozen=True, slots=True)
class Offered:
    """The candidate nodes kube-scheduler offered the member a gang plan was made for (`filter` pins that
    member to them).

    Whether a later call offers none but these nodes costs a lookup per name (~0.05 ms at 5000), so it is
    answered by tuple identity where it can: the wire layer hands back the same tuple object for a list
    whose bytes repeat, but only from the list's second sighting on, so besides the tuple the plan was made
    from (`as_sent`) the answers for the last two tuples are remembered (`known`, a memo of a pure
    function: it never changes an answer)."""

    pod: str
    nodes: frozenset[str]
    """As a set: kube-scheduler sends the same nodes in a new order on every call."""
    as_sent: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    """The candidate tuple the plan was made from, when the call had one."""
    known: dict[int, tuple[tuple[object, ...], bool]] = field(default_factory=dict, compare=False, repr=False)
    """Memo of `include`'s answers by candidate tuple identity (`memo.by_identity`)."""

    def include(self, candidates: Sequence[str]) -> bool:
        """Whether every one of `candidates` was offered."""
        if candidates is self.as_sent:
            return True
        if not isinstance(candidates, tuple):
            return self.nodes.issuperset(candidates)
        return by_identity(self.known, candidates, OFFERED_TUPLES_MEMO, lambda: self.nodes.issuperset(candidates))


@dataclass(frozen=True, slots=True)
class FailedPlan:
    """Why a gang could not be planned, and the model state and candidate nodes it was tried on."""

    gang: str
    reason: str
    capacity_generation: int
    membership_generation: int
    at: float
    placed: int
    needed: int
    offered: Offered | None = None
    """The nodes the asking member was pinned to (a `filter` call's candidates); None: every node."""

    def covers(self, candidates: Sequence[str]) -> bool:
        """Whether a plan pinning a member to `candidates` would fail as this one did (on the same model):
        they are the nodes it was tried on, in any order, or some of them. A plan tried on every node
        covers any candidates."""
        return self.offered is None or self.offered.include(candidates)

    @property
    def tried_on(self) -> str:
        """Where the plan was tried, for a person."""
        if self.offered is None:
            return "on every node"
        count = len(self.offered.nodes)
        return f"with {self.offered.pod} on the {count} node{'' if count == 1 else 's'} kube-scheduler offered it"


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """An immutable, generation-stamped view of the whole cluster model."""

    generation: int = 0
    capacity_generation: int = 0
    """Bumped whenever free capacity may have grown (a pod finished, a node grew, a plan was released)."""
    nodes: Mapping[str, NodeState] = field(default_factory=empty_frozen_map)
    pods: Mapping[str, PodView] = field(default_factory=empty_frozen_map)
    groups: Mapping[str, GroupView] = field(default_factory=empty_frozen_map)
    group_members: Mapping[str, frozenset[str]] = field(default_factory=empty_frozen_map)
    group_generations: Mapping[str, int] = field(default_factory=empty_frozen_map)
    jobs: Mapping[str, JobView] = field(default_factory=empty_frozen_map)
    job_members: Mapping[str, frozenset[str]] = field(default_factory=empty_frozen_map)
    reservations: Mapping[str, Reservation] = field(default_factory=empty_frozen_map)
    reserved_by_node: Mapping[str, Resources] = field(default_factory=empty_frozen_map)
    failed_plans: Mapping[str, FailedPlan] = field(default_factory=empty_frozen_map)
    priority_classes: Mapping[str, int] = field(default_factory=empty_frozen_map)
    workload_priority_classes: Mapping[str, int] = field(default_factory=empty_frozen_map)
    """Kueue's WorkloadPriorityClasses: name → value."""
    preemptions: Mapping[str, PreemptionRecord] = field(default_factory=empty_frozen_map)
    """Gang key → the last preemption carried out for it."""
    leaving: Mapping[str, frozenset[str]] = field(default_factory=empty_frozen_map)
    """PodGroup → keys of its pods a recorded preemption removes that still hold their node (the same
    incarnation, by UID): while a group has any, its gang takes no new member."""
    jobs_synced: bool = True
    """Every TFJob has been listed: a TFJob the model lacks is gone (False while the first list is under way)."""
    network_topology: tuple[NetworkLayer, ...] | None = None
    """The layers of the ClusterNetworkTopology named `default`, top first; None when there is none."""
    node_labels_epoch: NodeLabelsEpoch = field(default_factory=NodeLabelsEpoch, compare=False)
    capacity: CapacityTable = field(default=EMPTY_TABLE, compare=False)
    """The nodes' allocatable and available capacity as dense arrays (the same numbers as `nodes`)."""
    queue: object = field(default=None, compare=False)
    """Every gang's rank inputs and the wait queue (a `rank.queue.GangQueue`), kept by the model; None:
    derive it when needed. Typed as any object because the snapshot sits below the ranking that defines the
    queue: `rank.queue.queue_of` is the one reader, and checks the type."""

    @property
    def dense_capacity(self) -> CapacityTable | None:
        """`capacity` when it has a row for every node, else None (a snapshot a test builds by hand: read
        `nodes` instead)."""
        return self.capacity if len(self.capacity.rows) == len(self.nodes) else None

    def free_on(self, node: str, *, ignoring_group: str = "") -> Resources:
        """Free capacity of `node` after bound pods and reservations (those of `ignoring_group` excepted)."""
        state = self.nodes.get(node)
        if state is None:
            return EMPTY
        handed_back = self.held_by_group(ignoring_group).get(node) if ignoring_group else None
        return state.available if handed_back is None else state.available + handed_back

    def members_leaving(self, group: str) -> list[str]:
        """Keys of the pods of `group`'s gang (every PodGroup of its GangGroup) that a recorded preemption
        removes and that still hold their node, sorted."""
        if not self.leaving:
            return []
        view = self.groups.get(group)
        groups = view.gang_group if view is not None and view.gang_group else (group,)
        return sorted(key for each in groups for key in self.leaving.get(each, frozenset()))

    def victims_holding(self, record: PreemptionRecord) -> list[str]:
        """Keys of the victims of `record` that still hold their node (the same incarnation, by UID)."""
        return sorted(
            key
            for key in record.victims
            if (pod := self.pods.get(key)) is not None and pod.uid in record.victim_uids and pod.holds_node
        )

    def held_by_group(self, group: str) -> dict[str, Resources]:
        """Node → the resources `group`'s reservations hold there."""
        held: dict[str, Resources] = {}
        for key in self.group_members.get(group, frozenset()):
            reservation = self.reservations.get(key)
            if reservation is not None:
                held[reservation.node] = held.get(reservation.node, EMPTY) + reservation.requests
        return held
