"""A cluster's Nodes and TFJobs as a simulator `Workload`, with what had to be assumed: pure, no I/O.

Each schedulable node (not cordoned, Ready, not a control-plane node) becomes a `NodeSpec` of its allocatable
CPU, memory and GPUs. Each TFJob becomes a `JobSpec` that arrives at its creationTimestamp less the earliest
one's, with its PS and workers (Chief and Master replicas count as workers; Evaluators are left out: they do
not train) at its replica templates' requests, its current Worker replicas taken as its submitted size (the
scaler may have changed them since), elastic between its `tfjob-extender.io/min-workers` and `max-workers` when
it sets `enableDynamicWorker` and the two differ, and its checkpoint interval when it declares one
(`tfjob-extender.io/checkpoint-interval-s`). A cluster does not say what its jobs train, so every job trains one
model at one batch size (`DEFAULT_MODEL`, `DEFAULT_BATCH`, or the `tfjob-extender.io/sim-*` annotations the
simulator reads), and its work is set (`with_run_time`) so that alone, at its submitted size, PS and workers on
one node, it runs as long as it ran here: the seconds the preemption loop recorded when it saw the job finish
(`tfjob-extender.io/run-s`), else its status's completionTime less its startTime. A job still running or pending,
or finished with no time recorded, is assumed to run the median of the known run times
(`RUN_TIME_WITHOUT_HISTORY_S` when none is known). A job that cannot be replayed is skipped with the reason.
"""

from __future__ import annotations

import enum
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.policy.core.resources import CPU, EMPTY, GPU, MEMORY, Resources, total
from extender.policy.core.views import JobView, Role
from extender.sim.throughput import MODELS
from extender.sim.workload import (
    PAI_NIC_GBPS,
    SNAPSHOT_BATCH_ANNOTATION,
    SNAPSHOT_MODEL_ANNOTATION,
    JobSpec,
    NodeSpec,
    Workload,
    replace_spec,
    with_run_time,
)
from extender.state import convert, fields
from extender.state.fields import FieldError

DEFAULT_MODEL = "resnet50"
"""What every job is assumed to train: ResNet-50 on CIFAR-10, as `simulate --cluster-snapshot` assumes."""
DEFAULT_BATCH = 64
"""Its batch size per worker iteration, in samples, as `simulate --cluster-snapshot` assumes."""
DEFAULT_NIC_GBPS = PAI_NIC_GBPS
"""Node network bandwidth, in Gb/s: datacenter servers' 25 Gb/s, as the PAI-shaped scenario assumes."""
RUN_TIME_WITHOUT_HISTORY_S = 1800.0
"""Seconds a job whose run time is unknown is assumed to run when no job's run time is known."""
SHORTEST_RUN_S = 1.0
"""Seconds: the shortest run time taken from a status (its timestamps are whole seconds)."""
EPOCH_DECIMALS = 6
"""Decimals of an epoch the work is kept to (10⁻⁶ epoch is 0.05 samples), so a run of seconds keeps its length."""
CONTROL_PLANE_TAINT_KEYS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
"""A node tainted with one of these keys runs the control plane, not training: it is left out."""
KEEPING_OFF = ("NoSchedule", "NoExecute")
"""The taint effects that keep pods off a node."""
TRAINING_ROLES = (Role.WORKER, Role.CHIEF, Role.MASTER)
"""The replicas that train (the first present gives the workers' requests)."""


class RunTimeSource(enum.Enum):
    """Where a job's run time came from."""

    RECORDED = "recorded by the preemption loop (tfjob-extender.io/run-s)"
    STATUS = "from status (completionTime - startTime)"
    ASSUMED = "assumed"


@dataclass(frozen=True, slots=True)
class Assumptions:
    """What the cluster does not say, and which of its objects to replay."""

    model: str = DEFAULT_MODEL
    batch: int = DEFAULT_BATCH
    nic_gbps: float = DEFAULT_NIC_GBPS
    run_s: float | None = None
    """Seconds a job whose run time is unknown runs; None: the median of the known run times."""
    namespace: str = ""
    """Only the TFJobs of this namespace ("": every namespace)."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    """Only the nodes carrying every one of these labels."""


@dataclass(frozen=True, slots=True)
class Skipped:
    what: str
    """`TFJob namespace/name` or `Node name`."""
    reason: str

    @property
    def kind(self) -> str:
        """`TFJob` or `Node`."""
        return self.what.split(" ", 1)[0]

    def line(self) -> str:
        return f"skipped {self.what}: {self.reason}"


@dataclass(frozen=True, slots=True)
class History:
    workload: Workload
    sources: Mapping[str, RunTimeSource]
    """Job name (as in the workload) → where its run time came from."""
    run_s: Mapping[str, float]
    """Job name → the seconds it runs alone at its submitted size, which its work was set from."""
    assumed_run_s: float
    """What a job of unknown run time was taken to run, in seconds."""
    assumed_because: str
    """Why that figure: the median of the known run times, given, or nothing known."""
    declared_checkpoints: frozenset[str]
    """The jobs that declare their checkpoint interval (the others' are drawn per seed)."""
    skipped: tuple[Skipped, ...]

    def count(self, source: RunTimeSource) -> int:
        return sum(found is source for found in self.sources.values())


class Unreplayable(ValueError):
    """A TFJob the simulator cannot replay; the message says why."""


@dataclass(frozen=True, slots=True)
class _Draft:
    """A TFJob read, before its arrival, name and work are set."""

    key: str
    namespace: str
    created: float
    spec: JobSpec
    run_s: float | None
    source: RunTimeSource


def history(manifests: Iterable[Mapping[str, Any]], assumptions: Assumptions, name: str = "replay") -> History:
    """The Nodes and TFJobs among `manifests` (other kinds are ignored) as a workload named `name`."""
    skipped: list[Skipped] = []
    nodes: list[NodeSpec] = []
    drafts: list[_Draft] = []
    for manifest in manifests:
        if manifest.get("kind") == "Node":
            node = _node(manifest, assumptions.node_selector, skipped)
            nodes += [node] if node is not None else []
        elif manifest.get("kind") == convert.TFJOB_KIND and _in_namespace(manifest, assumptions.namespace):
            try:
                drafts.append(_draft(manifest, assumptions))
            except (convert.ConversionError, Unreplayable) as error:
                skipped.append(_skipped(manifest, str(error)))
    drafts = [draft for draft in drafts if _fits(draft, nodes, skipped)]
    known = [draft.run_s for draft in drafts if draft.run_s is not None]
    assumed, because = assumed_run_time(known, assumptions.run_s)
    bare = Workload(name, tuple(nodes), (), assumptions.nic_gbps)
    first = min((draft.created for draft in drafts), default=0.0)
    names = Counter(draft.spec.name for draft in drafts)
    jobs: list[JobSpec] = []
    sources: dict[str, RunTimeSource] = {}
    run_s: dict[str, float] = {}
    for draft in sorted(drafts, key=lambda d: (d.created, d.key)):
        unique = draft.spec.name if names[draft.spec.name] == 1 else f"{draft.namespace}-{draft.spec.name}"
        ran = assumed if draft.run_s is None else draft.run_s
        placed = replace_spec(draft.spec, name=unique, arrival_s=round(draft.created - first, 3))
        jobs.append(with_run_time(placed, ran, bare.hardware, EPOCH_DECIMALS))
        sources[unique], run_s[unique] = draft.source, ran
    declared = frozenset(job.name for job in jobs if job.checkpoint_s)
    return History(
        Workload(name, bare.nodes, tuple(jobs), bare.nic_gbps),
        sources,
        run_s,
        assumed,
        because,
        declared,
        tuple(skipped),
    )


def assumed_run_time(known: list[float], given: float | None) -> tuple[float, str]:
    """What a job of unknown run time runs, in seconds, and why."""
    if given is not None:
        return given, "given (--assumed-run-s)"
    if known:
        return statistics.median(known), f"the median of the {len(known)} known run time(s)"
    return RUN_TIME_WITHOUT_HISTORY_S, "no run time is known: a fixed half hour"


def _node(manifest: Mapping[str, Any], selector: Mapping[str, str], skipped: list[Skipped]) -> NodeSpec | None:
    try:
        view = convert.node_view(manifest)
    except convert.ConversionError as error:
        skipped.append(_skipped(manifest, str(error)))
        return None
    if any(view.labels.get(key) != value for key, value in selector.items()):
        return None
    if not view.schedulable:
        skipped.append(Skipped(f"Node {view.name}", "cordoned or not Ready"))
        return None
    if any(taint.key in CONTROL_PLANE_TAINT_KEYS and taint.effect in KEEPING_OFF for taint in view.taints):
        skipped.append(Skipped(f"Node {view.name}", "a control-plane node (tainted to keep workloads off)"))
        return None
    room = view.allocatable
    return NodeSpec(view.name, f"{room.get(CPU)}m", str(room.get(MEMORY)), room.get(GPU))


def _in_namespace(manifest: Mapping[str, Any], namespace: str) -> bool:
    meta = manifest.get("metadata")
    return not namespace or (isinstance(meta, dict) and (meta.get("namespace") or "default") == namespace)


def _draft(manifest: Mapping[str, Any], assumptions: Assumptions) -> _Draft:
    view = convert.job_view(manifest)
    annotations = _annotations(manifest)
    if not view.created:
        raise Unreplayable("no metadata.creationTimestamp: when it arrived is unknown")
    ps = view.replicas.get(Role.PS, 0)
    if ps < 1:
        raise Unreplayable("no PS replica: the simulator's throughput model is parameter-server training")
    roles = [role for role in TRAINING_ROLES if view.replicas.get(role, 0)]
    if not roles:
        raise Unreplayable("no Worker, Chief or Master replica: nothing of it trains")
    worker: Resources = view.role_requests.get(roles[0], EMPTY)
    if not worker.get(CPU) and not worker.get(GPU):
        raise Unreplayable("its workers request neither CPU nor GPUs: the throughput model gives them no speed")
    model = str(annotations.get(SNAPSHOT_MODEL_ANNOTATION) or assumptions.model)
    if model not in MODELS:
        raise Unreplayable(f"model {model!r} is none of the simulator's ({', '.join(MODELS)})")
    workers, low, high, elastic = _bounds(view)
    ps_requests: Resources = view.role_requests.get(Role.PS, EMPTY)
    spec = JobSpec(
        name=view.name,
        arrival_s=0.0,
        model=model,
        batch=_batch(annotations, assumptions.batch),
        epochs=1.0,
        ps=ps,
        workers=workers,
        min_workers=low,
        max_workers=high,
        ps_cpu=f"{ps_requests.get(CPU)}m",
        ps_memory=str(ps_requests.get(MEMORY)),
        worker_cpu=f"{worker.get(CPU)}m",
        worker_memory=str(worker.get(MEMORY)),
        worker_gpu=worker.get(GPU),
        elastic=elastic,
        checkpoint_s=view.checkpoint_interval_s or 0.0,
    )
    run_s, source = _run_time(manifest, view)
    return _Draft(view.key, view.namespace, view.created, spec, run_s, source)


def _bounds(view: JobView) -> tuple[int, int, int, bool]:
    """Workers as submitted (Chief and Master included), the fewest and the most, and whether it is elastic."""
    workers = sum(view.replicas.get(role, 0) for role in TRAINING_ROLES)
    others = workers - view.replicas.get(Role.WORKER, 0)
    low = min(max(view.min_workers + others, 1), workers)
    high = max(view.max_workers + others, workers)
    if view.enable_dynamic_worker and high > low:
        return workers, low, high, True
    return workers, workers, workers, False


def _batch(annotations: Mapping[str, Any], default: int) -> int:
    value = annotations.get(SNAPSHOT_BATCH_ANNOTATION)
    if value is None:
        return default
    text = str(value).strip()
    if not text.isdecimal() or int(text) < 1:
        raise Unreplayable(f"annotation {SNAPSHOT_BATCH_ANNOTATION}={value!r} is not a positive whole number")
    return int(text)


def _run_time(manifest: Mapping[str, Any], view: JobView) -> tuple[float | None, RunTimeSource]:
    """The seconds the job ran and where that came from; None for a job whose run time is unknown."""
    if view.run_s > 0:
        return view.run_s, RunTimeSource.RECORDED
    status = manifest.get("status")
    status = status if isinstance(status, dict) else {}
    try:
        started = fields.timestamp(status.get("startTime"), "status.startTime")
        completed = fields.timestamp(status.get("completionTime"), "status.completionTime")
    except FieldError as error:
        raise Unreplayable(str(error)) from None
    if started and completed >= started:
        return max(completed - started, SHORTEST_RUN_S), RunTimeSource.STATUS
    if view.failed:
        raise Unreplayable("it failed and how long it ran is recorded nowhere (run-s, status times)")
    return None, RunTimeSource.ASSUMED


def _fits(draft: _Draft, nodes: list[NodeSpec], skipped: list[Skipped]) -> bool:
    """Whether each of its pods fits some node and its minimum the nodes together (else it is skipped)."""
    spec = draft.spec
    rooms = [node.allocatable for node in nodes]
    for role in (Role.PS, Role.WORKER):
        if not any(spec.requests(role).fits_in(room) for room in rooms):
            reason = f"its {role.value} pods fit on no node"
            skipped.append(Skipped(f"TFJob {draft.key}", reason))
            return False
    minimum = spec.requests(Role.PS).scaled(spec.ps) + spec.requests(Role.WORKER).scaled(spec.min_workers)
    if not minimum.fits_in(total(rooms)):
        skipped.append(Skipped(f"TFJob {draft.key}", "its minimum asks more than all the nodes have"))
        return False
    return True


def _annotations(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = manifest.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _skipped(manifest: Mapping[str, Any], message: str) -> Skipped:
    """`message` (which may begin with the object's identity) as a skip of that object."""
    what = convert.identity(manifest)
    return Skipped(what, message.removeprefix(f"{what}: "))
