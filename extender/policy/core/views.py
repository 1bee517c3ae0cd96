"""The frozen views the policy decides on: nodes, pods, PodGroups, TFJobs, reservations, and the snapshot.

The cluster model (`extender.state`) builds these from watch events; the policy only reads them. Every
view is a frozen, slotted dataclass holding just the fields a decision needs, already converted into
integers and enums, so the policy never parses strings or walks raw Kubernetes JSON.
Keys are `namespace/name` strings for namespaced objects and the plain name for nodes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from extender.policy.core.node_fit import NodeConstraint, Taint, Term, Toleration
from extender.policy.core.resources import EMPTY, Resources

if TYPE_CHECKING:
    pass


class GangKey(str):
    """A gang's key: the keys (`namespace/name`) of the PodGroups that start together, sorted and
    comma-joined; a gang of one PodGroup is keyed by that PodGroup's key. A plain string everywhere a key
    is stored or shown; `groups` reads it back."""

    __slots__ = ()

    @classmethod
    def of(cls, groups: Iterable[str]) -> GangKey:
        return cls(",".join(sorted(groups)))

    @property
    def groups(self) -> tuple[str, ...]:
        """The PodGroups of the gang, sorted."""
        return tuple(self.split(","))

    @property
    def first(self) -> str:
        """The first PodGroup of the gang (the one its state is looked up from)."""
        return self.split(",", 1)[0]


class Role(enum.Enum):
    """A TFJob replica role, from the `training.kubeflow.org/replica-type` label."""

    PS = "ps"
    CHIEF = "chief"
    MASTER = "master"
    WORKER = "worker"
    EVALUATOR = "evaluator"
    NONE = "none"

    @property
    def placement_order(self) -> int:
        """PS first (workers gather around it), then the chief, workers, evaluators, others."""
        return _PLACEMENT_ORDER[self]


_PLACEMENT_ORDER = {
    Role.PS: 0,
    Role.CHIEF: 1,
    Role.MASTER: 1,
    Role.WORKER: 2,
    Role.EVALUATOR: 3,
    Role.NONE: 4,
}

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

CLUSTER_LAYER = "ClusterTopologyLayer"
"""The built-in top network layer: one domain, the whole cluster."""
NODE_LAYER = "NodeTopologyLayer"
"""The built-in bottom network layer: one domain per node."""


@dataclass(frozen=True, slots=True)
class NetworkLayer:
    """One configured layer of the cluster's network topology (e.g. spine, block, accelerator island)."""

    name: str
    """The layer's name as gather rules spell it, e.g. `BlockLayer`."""
    label_keys: tuple[str, ...]
    """Node label keys naming the node's domain in this layer; the first one a node carries counts."""


class Gather(enum.Enum):
    """How strictly a gang keeps inside one domain of a layer."""

    PREFER = "PreferGather"
    MUST = "MustGather"


@dataclass(frozen=True, slots=True)
class GatherRule:
    """One entry of a PodGroup's network-topology spec."""

    layer: str
    strategy: Gather


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    allocatable: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    schedulable: bool = True
    """False when cordoned (`spec.unschedulable`) or not Ready."""
    taints: tuple[Taint, ...] = ()
    """`spec.taints`: a pod goes here only if it tolerates each `NoSchedule` and `NoExecute` one."""


@dataclass(frozen=True, slots=True)
class PodView:
    namespace: str
    name: str
    uid: str
    requests: Resources
    scheduler_name: str = "default-scheduler"
    node_name: str = ""
    phase: str = "Pending"
    terminating: bool = False
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    group: str = ""
    """`namespace/name` of the PodGroup this pod belongs to, or empty."""
    group_in_spec: bool = False
    """Its PodGroup is named in `spec.schedulingGroup` (Kubernetes' own gang API): kube-scheduler asks about
    it only once that PodGroup exists, so a model without it is behind."""
    job: str = ""
    """`namespace/name` of the TFJob that owns this pod, or empty."""
    role: Role = Role.NONE
    index: int = 0
    created: float = 0.0
    """Creation time, seconds since the epoch."""
    node_selector: tuple[tuple[str, str], ...] = ()
    """`spec.nodeSelector` as sorted pairs: the pod may only go to nodes carrying all these labels."""
    node_affinity: tuple[Term, ...] | None = None
    """The terms of its required node affinity (one must hold), None when it has none."""
    tolerations: tuple[Toleration, ...] = ()
    scheduling_gated: bool = False
    """`spec.schedulingGates` is not empty (e.g. Kueue's `kueue.x-k8s.io/topology` until it picks the
    topology domain): kube-scheduler does not try the pod, and no gang plan counts it until the gates are
    gone (the gate's owner may still narrow where it goes)."""
    topology_index: int | None = None
    """The pod's rank in its gang's collective operations (network-topology index annotation), if any."""
    scheduled_at: float = 0.0
    """When the pod was bound (its PodScheduled condition turned true), seconds since the epoch; 0 if not."""
    last_checkpoint: float = 0.0
    """When its job last checkpointed, as this pod reports it (`tfjob-extender.io/last-checkpoint`; seconds
    since the epoch, 0 when it reports nothing)."""
    resource_claims: bool = False
    """`spec.resourceClaims` is not empty: it needs devices kube-scheduler's DRA plugin allocates, on
    capacity the extender cannot see, so neither it nor its gang is planned by the extender."""
    key: str = field(init=False, compare=False)
    """`namespace/name`, computed once."""
    constraint: NodeConstraint = field(init=False, compare=False)
    """Node selector, required node affinity and tolerations together, computed once."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")
        object.__setattr__(self, "constraint", NodeConstraint(self.node_selector, self.node_affinity, self.tolerations))

    def selects(self, node: NodeView) -> bool:
        """True when the pod may go to the node: its node selector, required node affinity and
        tolerations admit it (`node_fit`)."""
        return self.constraint.admits(node.name, node.labels, node.taints)

    @property
    def finished(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def holds_node(self) -> bool:
        """True while the pod occupies resources on a node (bound and not finished)."""
        return bool(self.node_name) and not self.finished

    @property
    def pending(self) -> bool:
        """Waiting to be scheduled: not bound, not finished, not being deleted."""
        return not self.node_name and not self.finished and not self.terminating


@dataclass(frozen=True, slots=True)
class PreemptionRecord:
    """A job-level preemption carried out for a gang: who was disrupted, and why."""

    gang: str
    victims: frozenset[str]
    """Keys of the pods removed (evicted, or deleted by training-operator after a scale-in)."""
    scaled_in: tuple[str, ...]
    """TFJob keys whose surplus workers were removed."""
    evicted: tuple[str, ...]
    """Gang or pod keys removed whole."""
    reason: str
    at: float
    victim_uids: frozenset[str] = frozenset()
    """UIDs of the victims: a pod recreated under a victim's name is not a victim."""


@dataclass(frozen=True, slots=True)
class GroupView:
    """A PodGroup, from any of the three API groups."""

    namespace: str
    name: str
    min_member: int
    api_group: str
    schedule_timeout_s: float | None = None
    gang_group: tuple[str, ...] = ()
    """Keys of every PodGroup that must start together with this one (itself included), sorted."""
    min_resources: Resources = EMPTY
    created: float = 0.0
    gather: tuple[GatherRule, ...] = ()
    """The network-topology gather rules of the gang (empty: placement ignores the network topology)."""
    plan: tuple[tuple[str, str, str], ...] = ()
    """(pod name, node, pod uid) of the gang plan reserved for this group's members (annotation
    `tfjob-extender.io/plan`), by whichever extender or preemption loop reserved it."""
    plan_expires: float = 0.0
    """When that plan lapses (seconds since the epoch)."""
    preemption: PreemptionRecord | None = None
    """The preemption carried out for this group's gang, as announced on it (annotation
    `tfjob-extender.io/preemption`) by the process that carried it out, before its evictions."""
    owner_job: str = ""
    """`namespace/name` of the TFJob named in its owner references (training-operator sets one), or empty."""
    gated_by_scheduler: bool = False
    """kube-scheduler itself holds this group's all-or-nothing barrier: a `scheduling.k8s.io` PodGroup
    with a gang policy, whose pods kube-scheduler's GangScheduling plugin (feature gate `GenericWorkload`)
    keeps back until `minCount` exist and binds all or none."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


KUEUE_LEFT_ALONE = "admitted by Kueue: preemption and scaling left to Kueue"
"""What `explain`, `/debug/jobs` and the loops say of a TFJob Kueue admits (`JobView.kueue_managed`)."""


@dataclass(frozen=True, slots=True)
class JobView:
    """A TFJob."""

    namespace: str
    name: str
    uid: str = ""
    replicas: Mapping[Role, int] = field(default_factory=dict)
    enable_dynamic_worker: bool = False
    priority_class: str = ""
    created: float = 0.0
    role_requests: Mapping[Role, Resources] = field(default_factory=dict)
    """Requests of one pod of each role, from the replica templates."""
    min_workers: int = 0
    """Fewest workers the job may run with (annotation; default: its Worker replicas, i.e. not elastic)."""
    max_workers: int = 0
    """Most workers the job may grow to (annotation; default: its Worker replicas)."""
    scaled_at: float = 0.0
    """When the scaler last changed the job's workers (annotation `tfjob-extender.io/scaled-at`, seconds
    since the epoch; 0 if never): its cooldown survives a restart or a change of leader."""
    consolidated_at: float = 0.0
    """When the scaler last migrated one of its workers (annotation `tfjob-extender.io/consolidated-at`)."""
    worker_plan: tuple[tuple[str, str], ...] = ()
    """(pod name, node) the scaler planned for the workers it added or moved (annotation
    `tfjob-extender.io/worker-plan`), so an extender in another process steers them too."""
    worker_plan_expires: float = 0.0
    """When that plan lapses (seconds since the epoch)."""
    suspendable: bool = False
    """Its owner says it checkpoints and may be suspended and resumed (annotation
    `tfjob-extender.io/suspendable: "true"`)."""
    suspended: bool = False
    """`spec.runPolicy.suspend`: training-operator keeps no pod of it while set."""
    suspended_at: float = 0.0
    """When the preemption loop last suspended it (annotation `tfjob-extender.io/suspended-at`, seconds
    since the epoch; 0 if never): it queues afresh from then."""
    resumed_at: float = 0.0
    """When the preemption loop last resumed it (annotation `tfjob-extender.io/resumed-at`; 0 if never)."""
    succeeded: bool = False
    """training-operator says it succeeded (a `Succeeded` condition that is True)."""
    failed: bool = False
    """training-operator says it failed (a `Failed` condition that is True)."""
    attained_s: float = 0.0
    """Seconds it ran before its last suspension by the extender (annotation `tfjob-extender.io/attained-s`;
    0 if never suspended). A job with attained service ranks after fresh jobs of its PriorityClass."""
    taken: tuple[float, ...] = ()
    """When the extender's loops took it (evicted, suspended, scaled it in or moved a worker of it) within
    the hour before the last time (annotation `tfjob-extender.io/taken`, seconds since the epoch, oldest
    first)."""
    checkpoint_interval_s: float | None = None
    """Seconds of training between two checkpoints, as its owner declares it
    (`tfjob-extender.io/checkpoint-interval-s`); None when it declares nothing."""
    min_run_before_preemption_s: float | None = None
    """Its owner's minimum run before a preemption may take it (annotation
    `tfjob-extender.io/min-run-before-preemption-s`); None: the policy setting."""
    run_s: float = 0.0
    """The seconds it ran in all, written by the preemption loop when it saw it finish (annotation
    `tfjob-extender.io/run-s`; 0 if not): the run-time history a restarted loop starts from."""
    scheduler_names: tuple[str, ...] = ()
    """The `schedulerName`s its replica templates give (distinct, sorted; a template without one gives none)."""
    scheduling_group: str = ""
    """The `scheduling.k8s.io` PodGroup every one of its replica templates names in
    `spec.schedulingGroup.podGroupName` ("" when one names none or two name different ones)."""
    native_gang: str = ""
    """The PodGroup the extender's admission webhook named in its templates when it was created (annotation
    `tfjob-extender.io/native-gang`): its native gang, whose Workload and PodGroup the extender keeps."""
    kueue_managed: bool = False
    """Kueue decides its admission (its queue-name label, a Kueue Workload owner, Kueue's marks on its
    templates: `extender.state.kueue`). Kueue owns `spec.runPolicy.suspend` and requeues a job whose pod
    counts change, so the loops never suspend, resume, evict for preemption or resize it; the extender
    only places it (`KUEUE_LEFT_ALONE`)."""
    kueue_priority_class: str = ""
    """The WorkloadPriorityClass its label `kueue.x-k8s.io/priority-class` names ("" for none): Kueue gives its
    Workload that class's value as priority instead of its pods' PriorityClass."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def elastic(self) -> bool:
        return self.max_workers > self.min_workers

    @property
    def may_be_suspended(self) -> bool:
        """Marked suspendable, not suspended already, and not Kueue's (Kueue would unsuspend it)."""
        return self.suspendable and not self.suspended and not self.kueue_managed

    @property
    def suspended_by_extender(self) -> bool:
        """Suspended, by the preemption loop, and not resumed since: the loop resumes it (never a job a
        person or Kueue suspended)."""
        return self.suspended and self.suspended_at > self.resumed_at and not self.kueue_managed

    def minimum_demand(self) -> Resources:
        """What the job needs to run at its minimum: every non-worker replica plus `min_workers` workers."""
        demand = EMPTY
        for role, count in self.replicas.items():
            wanted = self.min_workers if role is Role.WORKER else count
            demand = demand + self.role_requests.get(role, EMPTY).scaled(wanted)
        return demand
