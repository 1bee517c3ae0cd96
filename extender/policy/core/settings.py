"""Every weight and threshold the policy uses, named, with its unit, range, default and help.

The policy receives one frozen `PolicySettings`; it never reads the environment or a global. Each field is
declared once with `setting` (`policy.core.setting_rules`): its default, its rule (the unit and the range or
choices it takes) and a one-line help; the attribute docstring under a field, where there is one, tells the
reasoning behind it. From these declarations the program builds the flags, reads the config file and prints
the chart's schema (`extender.config`, `extender.cli.flags`), so none of them restates a setting. Building a
`PolicySettings` checks every value (`check_declared`): tests build them directly, the command line from the
config file and its flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from extender.policy.core.setting_rules import (
    COUNT,
    POSITIVE_SECONDS,
    SECONDS,
    SHARE,
    Choices,
    Layers,
    Name,
    Namespaces,
    Numbers,
    Switch,
    check_declared,
    setting,
)
from extender.policy.core.views import NetworkLayer

StarvingHold = Literal["newcomers", "block", "steer"]
STARVING_HOLDS: tuple[StarvingHold, ...] = ("newcomers", "block", "steer")

DEFAULT_NETWORK_TOPOLOGY = (
    NetworkLayer("SpineLayer", ("network.topology.nvidia.com/spine",)),
    NetworkLayer("BlockLayer", ("network.topology.nvidia.com/block",)),
    NetworkLayer("AcceleratorLayer", ("network.topology.nvidia.com/accelerator",)),
)
"""Spine → block → accelerator island → node, with the labels NVIDIA's topograph puts on nodes."""


@dataclass(frozen=True, slots=True)
class PolicySettings:
    scheduler_name: str = setting(
        "tfjob-scheduler",
        Name(),
        "schedulerName of the pods the extender manages; any other pod is passed through untouched",
    )
    managed_namespaces: tuple[str, ...] = setting(
        (),
        Namespaces(),
        "namespaces whose TFJobs and PodGroups the extender manages (none: every namespace)",
    )
    """Elsewhere a pod naming `scheduler_name` is placed as a pod of no gang, and nothing of it is ever
    taken, scaled, suspended or given a native gang: the loops' write rights can then be namespaced
    (the chart's `managedNamespaces`)."""

    default_plan_timeout_s: float = setting(
        60.0, POSITIVE_SECONDS, "life of a gang's reserved plan when its PodGroup sets no scheduleTimeoutSeconds"
    )

    max_score: int = setting(
        10,
        Numbers(1, 10, integer=True, unit="points"),
        "top of the prioritize score scale (kube-scheduler's MaxExtenderPriority)",
    )

    colocation_weight: float = setting(
        0.7, SHARE, "share of a prioritize score given to sitting beside the pod's own job (PS with its workers)"
    )

    idleness_weight: float = setting(
        0.3, SHARE, "share of a prioritize score given to how idle the node stays after placing the pod"
    )

    colocation_ps_bonus: float = setting(1.0, SHARE, "co-location credit of a node holding the pod's PS/worker partner")

    colocation_same_job: float = setting(
        0.6, SHARE, "co-location credit of a node holding other pods of the job but no PS/worker partner"
    )

    weight_scale: float = setting(
        0.5,
        Numbers(0.0, low_open=True, unit="per worker share"),
        "KOD2 job weight: raw score per minimum worker per unit of cluster share",
    )
    """KOD2 job weight: raw score per minimum worker per unit of cluster share (dimensionless). The raw score
    is `weight_scale × min_workers / (cpu_share + memory_share)`, each share the job's minimum demand over
    the schedulable cluster's allocatable (0..1 for a job that fits)."""

    weight_offset: float = setting(
        5.0, Numbers(unit="raw score"), "KOD2 job weight: subtracted from the raw score before the sigmoid"
    )
    """KOD2 job weight: subtracted from the raw score before the sigmoid (dimensionless, raw-score units).
    A job scores 0.5 where the raw score equals it, i.e. at `weight_offset / weight_scale` = 10 minimum
    workers per unit of summed cluster share; cheaper jobs score above 0.5, costlier ones below."""

    weight_min_share: float = setting(
        0.001,
        Numbers(0.0, 2.0, low_open=True, unit="share"),
        "KOD2 job weight: floor on a job's summed CPU and memory share of the cluster",
    )
    """KOD2 job weight: floor on `cpu_share + memory_share` (fraction of the cluster), so a job that requests
    nothing gets a finite, high weight instead of a division by zero."""

    default_weight: float = setting(
        0.5, SHARE, "weight of a gang with no TFJob to weigh, or when the cluster has no capacity to weigh against"
    )
    """Weight (0..1) of a gang with no TFJob to weigh (plain PodGroups, loose pods) or when the cluster has
    no schedulable capacity to normalise against."""

    starvation_limit_s: float = setting(
        600.0, SECONDS, "seconds a gang may wait before it starves: its weight ages, it climbs, room is held for it"
    )
    """Seconds a gang may wait unsatisfied (STARVELIMIT in KOD2) before it starves: its weight starts to age
    upward, it climbs one size class then and one more per further limit, it is reported STARVING, and
    at the head of the queue it holds room (see `starving_reservations`)."""

    aging_rate_per_s: float = setting(
        0.001,
        Numbers(0.0, unit="weight per second"),
        "weight added per second a gang waits beyond the starvation limit",
    )
    """Weight (0..1 scale) added per second waited beyond `starvation_limit_s`: a 0.3 job reaches the cap
    of 1.0 after 700 s more."""

    aging_max_weight: float = setting(1.0, SHARE, "cap of an aged weight")
    """Cap (0..1) of an aged weight. At 1.0 a long-starved gang outranks every non-starving gang of its
    PriorityClass and size class (base weights are strictly below 1) but never a higher PriorityClass;
    starved gangs tied at the cap go in arrival order. An aged weight is never below the gang's base
    weight."""

    starving_backfill: bool = setting(
        True, Switch(), "a starving gang holds only the room its minimum needs; others backfill the rest"
    )
    """A holding starving gang (see `starving_reservations`) holds only the room its minimum needs, on the
    nodes that clear soonest (fewest jobs on them, then the most free), and other gangs may start in
    everything else (backfill); False: every starving gang holds all capacity that frees up."""

    starving_reservations: int = setting(
        1, COUNT, "starving gangs, highest-ranked first, that hold room at a time (0: none)"
    )
    """How many starving gangs (a count), highest-ranked first, hold room at a time: each goes before every
    other gang of its PriorityClass and holds its minimum on the nodes that clear soonest (EASY backfill's
    one reservation; what holding does to other gangs: `starving_hold`). Holding room for every
    starving gang at once would hold the whole cluster in a long queue; a starving gang climbs in rank as
    it waits, so each one gets its turn. 0: no room is held (a starving gang still climbs to the head of
    its PriorityClass, other gangs yield to it whenever it fits, and the preemption loop reserves its plan
    the moment it fits)."""

    starving_hold: StarvingHold = setting(
        "newcomers",
        Choices(STARVING_HOLDS),
        "which gangs that fit only in room held for a starving gang are kept out of it",
    )
    """What room held for a starving gang does to the other gangs of its PriorityClass. Every plan goes
    around it while it fits elsewhere; a gang that fits only by taking it is
    - "newcomers": kept out if it arrived after the holding gang began to starve and has not starved
      itself, else let in. A stream of new gangs cannot take each piece as it frees, so the holding gang
      starts once what runs on its nodes (and what was already waiting when it began to starve) has left;
      no gang is kept out for longer than one starvation limit;
    - "block": always kept out. The holding gang starts once its nodes have cleared, whoever waits, at the
      cost of the held room idling while they drain and of every gang that fits there waiting as long;
    - "steer": always let in. No room idles while a gang that fits waits, but a large gang that never
      finds its room free at once, while smaller gangs take each piece, is not bounded."""

    size_class_ratio: float = setting(
        2.0,
        Numbers(0.0, unit="factor"),
        "one size class per this factor of dominant cluster share; <= 1: one class for all",
    )
    """Rank by size before weight: within a PriorityClass gangs go in ascending size class — their dominant
    share of the cluster at their minimum, one class per this factor (dimensionless) — before the KOD2
    weight decides. A value ≤ 1 puts every gang in one class (rank by weight alone, as KOD2)."""

    rank_gangs_checked: int = setting(
        8, COUNT, "higher-ranked waiting gangs a plan is checked against before it is admitted"
    )
    """How many higher-ranked waiting gangs a plan is checked against before it is admitted (bounds the
    cost of rank-ordered admission: each check is one dry-run plan)."""

    suspension_min_history: int = setting(
        10, COUNT, "finished jobs whose run times must be known before a suspendable job is suspended"
    )
    """Finished jobs whose run times the preemption loop must have seen before it suspends any job (a
    count): with fewer, it cannot tell long jobs from short ones. See `policy.preemption.residual_life`."""

    suspension_newcomer_s: float = setting(
        30.0, SECONDS, "a suspendable job that ran at most this long may be suspended for a starving gang (0: never)"
    )
    """A suspendable job that has run for at most this long (seconds, never suspended before) may be
    suspended for a starving gang of its PriorityClass or a higher one that cannot start otherwise, so
    that waiting stays bounded when the room held for that gang would take long to drain; 0 turns it
    off. The job loses what it ran (at most this long) and its start-up, and queues again by its own
    rank."""

    assumed_checkpoint_interval_s: float = setting(
        1800.0,
        POSITIVE_SECONDS,
        "seconds between checkpoints assumed for a TFJob that declares none (counted from its current run's start)",
    )
    """What a job that says nothing about its checkpoints is taken to lose if taken now: the time since the
    last multiple of this interval in its current run. A TFJob declares its own interval with
    `tfjob-extender.io/checkpoint-interval-s`, and its pods may report its last checkpoint with
    `tfjob-extender.io/last-checkpoint`."""
    restart_cost_s: float = setting(
        180.0, SECONDS, "seconds a taken job loses to its restart beyond its lost training (its restart cost)"
    )
    """What taking a running job costs beyond the training it loses, in seconds of its size (GPUs, else CPU
    cores): placed again, its containers started, its TensorFlow session and checkpoint read back. The
    victim search adds it to the lost work when it weighs victims; a long runner is suspended for a fresh
    gang only when its margin exceeds both. Measured in the simulator (`docs/simulation/README.md`): 60 s
    let heavy-tailed long runners be suspended again within minutes of resuming (lost work 0.34× the
    fixed minimum run's), 180 s and 300 s did not (0.17× and 0.12×, average JCT 0.62× either way)."""
    checkpoint_wait_value: float = setting(
        1.0,
        Numbers(0.0, unit="ratio"),
        "what a second of a waiting gang's resources is worth beside a second of lost training on the same resources",
    )
    """The preemptor's weighted wait: holding a preemption `w` seconds for its victims' next checkpoints costs
    the preemptor's size × `w` × this; the loop waits when the training it saves is worth more. 0: always
    wait for a declared checkpoint that is due within `max_checkpoint_wait_s`."""
    max_checkpoint_wait_s: float = setting(
        600.0, SECONDS, "seconds a preemption may be held for its victims' next checkpoints (0: never held)"
    )
    """The longest a preemption is held so that its victims reach their next checkpoint first (seconds; 0:
    preemptions are never held)."""
    kueue_priority_boost: bool = setting(
        False,
        Switch(),
        "write kueue.x-k8s.io/priority-boost on running Kueue-admitted TFJobs' Workloads from what taking them costs",
    )
    """Kueue chooses its own victims among the TFJobs it admits; with this on (and Kueue's alpha gate
    `PriorityBoost` on), the preemption loop writes each running one's cost of taking as a priority boost on
    its Workload, so Kueue takes the cheaper of two jobs of one PriorityClass first (`priority_boost`)."""
    priority_boost_resource_s: float = setting(
        60.0,
        POSITIVE_SECONDS,
        "resource-seconds (GPU, else CPU-core) of lost training and restart per point of Kueue priority boost",
    )
    """The cost of taking a job that one point of `kueue.x-k8s.io/priority-boost` stands for (GPU-seconds, or
    CPU-core-seconds for a job without GPUs)."""
    max_priority_boost: int = setting(1000, COUNT, "the largest Kueue priority boost written (points)")
    """The boost is also kept below the gap to the next higher PriorityClass in the cluster."""
    min_run_before_preemption_s: float = setting(
        60.0,
        SECONDS,
        "seconds a job that tells nothing of its checkpoints runs before a preemption may take it (0: no minimum)",
    )
    """A job that neither declares a checkpoint interval nor reports checkpoints runs at least this long
    (seconds, from the first of its current pods' bindings) before a preemption may evict, shrink or
    suspend it (the fallback: for a job that tells, the cost of taking it is weighed instead,
    `taking_cost`, and `max_takings_per_hour` keeps it from flapping); a TFJob's annotation
    `tfjob-extender.io/min-run-before-preemption-s` lowers or raises it for that job; 0 turns it off. The
    newcomer window of `suspension_newcomer_s` opens once this minimum has passed: a newcomer is a job
    that has run at least its minimum and at most `suspension_newcomer_s` more."""

    max_takings_per_hour: int = setting(
        4,
        COUNT,
        "times one TFJob may be taken (evicted, suspended, scaled in, a worker moved) within any hour (0: no bound)",
    )
    """The most times the loops may take one TFJob within any hour, every kind counted: an eviction, a
    suspension, a scale-in, a worker moved by consolidation (a count, from the times the loops write on
    the TFJob, so it survives a restart); 0: no bound. It keeps a job that is cheap to take from being
    taken again and again."""

    suspension_history_jobs: int = setting(
        1000,
        Numbers(1, integer=True, unit="count"),
        "recent finished run times kept to estimate a job's remaining run time",
    )

    scale_out_step: int = setting(2, COUNT, "workers a TFJob may gain per scaler tick")
    """Workers one TFJob may gain in one scaler tick (KOD2's l_iw, a count): growth is gradual, so every
    step is checked against a fresh snapshot."""

    scale_out_by_gain: bool = setting(
        True, Switch(), "grow first the jobs one more worker helps most per cluster share (else highest rank first)"
    )
    """Grow first the jobs one more worker helps most per share of the cluster it takes (fewest workers,
    cheapest workers: diminishing returns); False: highest rank first (KOD2's heaviest first)."""

    scale_in_step: int = setting(2, COUNT, "workers a TFJob may give up per tick for a waiting higher-ranked gang")
    """Workers one TFJob may lose in one tick to make room for a waiting higher-ranked gang (KOD2's l_dw,
    a count). When scaling in within this count cannot admit the gang, the job-level preemption decides."""

    scale_cooldown_s: float = setting(
        30.0, SECONDS, "seconds after a scaling action on a TFJob before the scaler acts on it again"
    )
    """Seconds after any scaling action on a TFJob (scale-out, scale-in, migration) before the scaler acts on
    it again: the job settles, and the next decision sees its effect."""

    consolidation_enabled: bool = setting(
        True,
        Switch(),
        "migrate workers of a dynamic-worker TFJob onto its PS's node when it has room",
        flag="consolidation",
    )
    """Move workers of a dynamic-worker TFJob onto its PS node when that node has room (Voda's worker
    migration: the pod is deleted and training-operator recreates it, steered to the PS node)."""

    consolidation_budget: int = setting(1, COUNT, "workers of one TFJob migrated per consolidation interval")

    consolidation_interval_s: float = setting(
        60.0, SECONDS, "seconds between two consolidation rounds of the same TFJob"
    )

    defer_to_scheduler_gang_barrier: bool = setting(
        True,
        Switch(),
        "leave the all-or-nothing barrier of scheduling.k8s.io gangs to kube-scheduler (off: keep the extender's own)",
        off_flag="own-barrier-for-gated-gangs",
    )
    """For a gang kube-scheduler gates itself (a `scheduling.k8s.io` PodGroup with a gang policy, whose pods
    name it in `spec.schedulingGroup`: kube-scheduler's `GenericWorkload` gate is on), leave the
    all-or-nothing barrier to kube-scheduler: `filter` never turns the gang's members away because the
    gang is incomplete or does not fit whole, it only steers them to the gang's plan when there is one.
    Ranking, co-location, job-level preemption and scaling are unchanged. False: the extender keeps its own
    barrier for these gangs too (for a kube-scheduler that runs without the gate)."""

    network_topology: tuple[NetworkLayer, ...] = setting(
        DEFAULT_NETWORK_TOPOLOGY,
        Layers(),
        "network layers, top first, used when the cluster has no ClusterNetworkTopology named default",
    )
    """The network layers (top first, the node layer implied) used when the cluster has no
    ClusterNetworkTopology named `default`. Only gangs whose PodGroups carry a network-topology spec are
    placed by them; a node without a layer's label is a domain of its own in that layer."""

    def __post_init__(self) -> None:
        check_declared(self)

    def manages(self, key: str) -> bool:
        """Whether the object `namespace/name` (or a namespace's name) is in a managed namespace."""
        return in_managed_namespaces(self.managed_namespaces, key)


def in_managed_namespaces(managed: tuple[str, ...], key: str) -> bool:
    """Whether the object `namespace/name` (or a namespace's name) is in one of `managed` (none: every one)."""
    return not managed or key.partition("/")[0] in managed
