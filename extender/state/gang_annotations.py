"""The JSON the extender reads from (and writes into) annotations: GangGroups, network-topology gather
rules, and the gang and worker plans.

Each reader takes the annotation's text and returns typed values or raises `FieldError` naming the
annotation; plans are the exception: a plan that cannot be read is no plan (it only steers and holds
room, it is never a reason to drop the object from the model). Names inside are checked like the
object names they stand for, so nothing read here can make a key ambiguous.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from extender.policy.core.snapshot import ClusterSnapshot, Reservation
from extender.policy.core.views import GangKey, Gather, GatherRule, GroupView, PreemptionRecord
from extender.state.fields import FieldError, checked_text, dns_label, dns_subdomain, path_segment, show

GANG_GROUPS_ANNOTATION = "gang.scheduling.koordinator.sh/groups"
NETWORK_TOPOLOGY_SPEC_ANNOTATION = "gang.scheduling.koordinator.sh/network-topology-spec"
"""On a PodGroup: `{"gatherStrategy": [{"layer": ..., "strategy": "PreferGather" | "MustGather"}]}`."""
ANNOTATION_PREFIX = "tfjob-extender.io/"
WORKER_PLAN_ANNOTATION = ANNOTATION_PREFIX + "worker-plan"
"""Written by the scaler: `{"expiresAt": <epoch s>, "pods": {"<pod name>": "<node>", ...}}`."""
GANG_PLAN_ANNOTATION = ANNOTATION_PREFIX + "plan"
"""Written on a PodGroup by whichever process reserved its gang's plan:
`{"expiresAt": <epoch s>, "pods": {"<pod name>": "<node>", ...}, "uids": {"<pod name>": "<uid>", ...}}`.
Every extender imports it into its ledger, so a plan survives a restart and the preemption loop may run
in a process of its own."""
PREEMPTION_ANNOTATION = ANNOTATION_PREFIX + "preemption"
"""Written on the first PodGroup of a preemptor gang before its victims are evicted, removed if the
preemption is abandoned: `{"gang": <gang key>, "at": <epoch s>, "reason": ..., "victims": {"<pod key>":
"<uid>", ...}, "scaledIn": [<TFJob key>, ...], "evicted": [<gang or pod key>, ...]}`. Every extender
imports it, so none places a recreated member of a victim gang while the victims still hold their nodes."""
MIN_WORKERS_ANNOTATION = ANNOTATION_PREFIX + "min-workers"
"""On a TFJob: the fewest workers it may be scaled in to (default: its Worker replicas)."""
MAX_WORKERS_ANNOTATION = ANNOTATION_PREFIX + "max-workers"
"""On a TFJob: the most workers it may be scaled out to (default: its Worker replicas)."""
SCALED_AT_ANNOTATION = ANNOTATION_PREFIX + "scaled-at"
"""Written by the scaler with each worker-count change: seconds since the epoch."""
CONSOLIDATED_AT_ANNOTATION = ANNOTATION_PREFIX + "consolidated-at"
"""Written by the scaler with each worker migration: seconds since the epoch."""
SUSPENDABLE_ANNOTATION = ANNOTATION_PREFIX + "suspendable"
"""On a TFJob, set by its owner: `"true"` when it checkpoints, so the preemption loop may suspend it
(`spec.runPolicy.suspend`) and resume it later."""
SUSPENDED_AT_ANNOTATION = ANNOTATION_PREFIX + "suspended-at"
"""Written with each suspension the preemption loop makes (seconds since the epoch): the job queues afresh
from then."""
RESUMED_AT_ANNOTATION = ANNOTATION_PREFIX + "resumed-at"
"""Written when the preemption loop resumes a job it suspended (seconds since the epoch). A suspended job
whose suspension is not newer than its resumption was suspended by someone else: the loop leaves it."""
ATTAINED_ANNOTATION = ANNOTATION_PREFIX + "attained-s"
"""Written with each suspension the preemption loop makes: the seconds the job has run in all so far."""
TAKEN_ANNOTATION = ANNOTATION_PREFIX + "taken"
"""Written each time the loops take the job (an eviction, a suspension, a scale-in, a worker moved): the
times (seconds since the epoch, comma-separated) of its takings within the last hour, this one included,
which bound how often one job is taken (`PolicySettings.max_takings_per_hour`) across restarts of the
loops."""
MIN_RUN_ANNOTATION = ANNOTATION_PREFIX + "min-run-before-preemption-s"
"""On a TFJob, set by its owner: the seconds it runs before a preemption may evict, shrink or suspend it
(overrides `PolicySettings.min_run_before_preemption_s` for this job)."""
RUN_TIME_ANNOTATION = ANNOTATION_PREFIX + "run-s"
"""Written by the preemption loop when it sees a TFJob finish: the seconds it ran in all. A loop that
starts later (after a restart, or a new leader) reads its run-time history back from these."""
CHECKPOINT_INTERVAL_ANNOTATION = ANNOTATION_PREFIX + "checkpoint-interval-s"
"""On a TFJob, set by its owner: the seconds of training between two of its checkpoints (what a restart
loses at most)."""
LAST_CHECKPOINT_ANNOTATION = ANNOTATION_PREFIX + "last-checkpoint"
"""On one of a TFJob's own pods, written by its training code or a sidecar watching the checkpoint
directory (it needs the right to patch its own pod, not the TFJob): when the job last checkpointed, RFC 3339
or seconds since the epoch. A value that is neither is read as absent (the pod is kept)."""
NATIVE_GANG_ANNOTATION = ANNOTATION_PREFIX + "native-gang"
"""On a TFJob, written by the extender's admission webhook as it creates the job: the `scheduling.k8s.io`
PodGroup it named in the job's replica templates, whose Workload and PodGroup the extender then keeps."""
LAYER_NAME_MAX_CHARS = 253


def gather_rules(annotation: Any) -> tuple[GatherRule, ...]:
    if not annotation:
        return ()
    where = f"annotation {NETWORK_TOPOLOGY_SPEC_ANNOTATION}"
    spec = _json(annotation, where)
    rules = spec.get("gatherStrategy") if isinstance(spec, dict) else None
    if not isinstance(rules, list):
        raise FieldError(f'{where} must be an object with a "gatherStrategy" list')
    strategies = {gather.value.lower(): gather for gather in Gather}
    parsed = []
    for rule in rules:
        layer = rule.get("layer") if isinstance(rule, dict) else None
        strategy = rule.get("strategy") if isinstance(rule, dict) else None
        gather = strategies.get(strategy.lower()) if isinstance(strategy, str) else None
        if not isinstance(layer, str) or not layer or gather is None:
            raise FieldError(
                f'{where}: each gatherStrategy entry needs a "layer" and a "strategy" of PreferGather or MustGather'
            )
        parsed.append(GatherRule(checked_text(layer, f"{where}: layer", max_chars=LAYER_NAME_MAX_CHARS), gather))
    return tuple(parsed)


def gang_group(key: str, annotation: Any) -> tuple[str, ...]:
    """Every PodGroup key of the GangGroup, this one (`key`) included, sorted."""
    if not annotation:
        return ()
    where = f"annotation {GANG_GROUPS_ANNOTATION}"
    members = _json(annotation, where)
    if not isinstance(members, list) or not all(isinstance(m, str) and "/" in m for m in members):
        raise FieldError(f'{where} must be a JSON list of "namespace/name"')
    for member in members:
        namespace, _, name = member.partition("/")
        dns_label(namespace, f"{where}: namespace of {show(member)}")
        path_segment(name, f"{where}: name of {show(member)}")
    return tuple(sorted({key, *members}))


def plan_annotation(plan: Mapping[str, str], expires_at: float, uids: Mapping[str, str] | None = None) -> str:
    """The value of a plan annotation for pod name → node, lapsing at `expires_at`: on a TFJob
    (`tfjob-extender.io/worker-plan`) for pods that do not exist yet, on a PodGroup
    (`tfjob-extender.io/plan`) for existing pods, named with their `uids` too, so a pod recreated under
    the same name is not held to an old plan."""
    value: dict[str, Any] = {"expiresAt": round(expires_at, 3), "pods": dict(sorted(plan.items()))}
    if uids is not None:
        value["uids"] = dict(sorted(uids.items()))
    return json.dumps(value, separators=(",", ":"))


def preemption_annotation(record: PreemptionRecord, uids: Mapping[str, str]) -> str:
    """The value of a preemption annotation for `record`, naming each victim key's `uids`."""
    value = {
        "gang": record.gang,
        "at": record.at,
        "reason": record.reason,
        "victims": dict(sorted(uids.items())),
        "scaledIn": list(record.scaled_in),
        "evicted": list(record.evicted),
    }
    return json.dumps(value, separators=(",", ":"))


def announced_preemption(value: Any, group: str) -> dict[str, Any]:
    """A PodGroup's preemption annotation as the `preemption` field of its view, when it is readable and
    names a gang `group` belongs to (nothing otherwise: like a plan, it is never a reason to drop the
    object)."""
    if not value or not isinstance(value, str):
        return {}
    try:
        parsed = json.loads(value)
        gang, at, reason = parsed["gang"], parsed["at"], parsed["reason"]
        victims, scaled_in, evicted = parsed["victims"], parsed["scaledIn"], parsed["evicted"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return {}
    if not isinstance(victims, dict) or not isinstance(scaled_in, list) or not isinstance(evicted, list):
        return {}
    texts = [gang, reason, *victims, *victims.values(), *scaled_in, *evicted]
    if not all(isinstance(text, str) and text.isprintable() for text in texts) or group not in GangKey(gang).groups:
        return {}
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
        return {}
    record = PreemptionRecord(
        gang, frozenset(victims), tuple(scaled_in), tuple(evicted), reason, float(at), frozenset(victims.values())
    )
    return {"preemption": record}


def group_plans(reserve: Iterable[Reservation], snapshot: ClusterSnapshot) -> dict[str, tuple[GroupView, str]]:
    """PodGroup key → (its view, the value of its plan annotation) for the reservations `reserve` holds, per
    PodGroup, lapsing with the last of them; reservations of PodGroups or pods the model lacks are left out."""
    plans: dict[str, tuple[GroupView, dict[str, str], dict[str, str], float]] = {}
    for reservation in reserve:
        group = snapshot.groups.get(reservation.group)
        pod = snapshot.pods.get(reservation.pod)
        if group is None or pod is None:
            continue
        _, nodes, uids, expires = plans.setdefault(reservation.group, (group, {}, {}, 0.0))
        nodes[pod.name] = reservation.node
        uids[pod.name] = pod.uid
        plans[reservation.group] = (group, nodes, uids, max(expires, reservation.expires_at))
    return {key: (group, plan_annotation(nodes, expires, uids)) for key, (group, nodes, uids, expires) in plans.items()}


def gang_plan(value: Any) -> dict[str, Any]:
    """A PodGroup plan's fields for its view: only the entries that name their pod's uid."""
    plan = worker_plan(value, "plan", "plan_expires")
    if not plan:
        return {}
    uids = json.loads(value).get("uids")
    if not isinstance(uids, dict) or not all(isinstance(uid, str) and uid.isprintable() for uid in uids.values()):
        return {}
    entries = tuple((name, node, uids[name]) for name, node in plan["plan"] if name in uids)
    return {"plan": entries, "plan_expires": plan["plan_expires"]}


def worker_plan(value: Any, pods_field: str, expiry_field: str) -> dict[str, Any]:
    """A plan annotation's fields for a view (`pods_field`: (pod name, node) pairs; `expiry_field`)."""
    if not value or not isinstance(value, str):
        return {}
    try:
        parsed = json.loads(value)
        pods = parsed["pods"]
        expires = parsed["expiresAt"]
        entries = tuple(
            sorted((dns_subdomain(name, "pod"), dns_subdomain(node, "node")) for name, node in pods.items())
        )
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return {}
    if isinstance(expires, bool) or not isinstance(expires, int | float) or not math.isfinite(expires):
        return {}
    return {pods_field: entries, expiry_field: float(expires)}


def _json(annotation: Any, where: str) -> Any:
    if not isinstance(annotation, str):
        raise FieldError(f"{where}={show(annotation)} is not a string")
    try:
        return json.loads(annotation)
    except (ValueError, RecursionError) as error:
        raise FieldError(f"{where} is not JSON") from error
