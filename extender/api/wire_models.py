"""The kube-scheduler extender wire as pydantic models: the documentation of the contract, not the verb path.

Each model is one Go type of `k8s.io/kube-scheduler/extender/v1` under its Go name, each field under its
exact JSON name: the Go structs carry no JSON tags, so kube-scheduler writes the Go field names, PascalCase;
the Kubernetes objects inside them carry tags, so their keys are camelCase. A request model accepts what
`extender.api.wire` accepts and refuses what it refuses, and a reply model accepts what `wire` writes; a
property test (`tests/unit/api/test_wire_models.py`) holds the two equal, and `wire_schema` publishes the
models as `docs/wire-schema.json`. Pods and the parts of Node objects the extender does not read stay
opaque mappings; only what `wire` reads is typed: node names, victim UIDs, PDB violation counts, the names
of Node objects and the UIDs of victim pods. The bounds are the extender's own (`wire.CANDIDATES_MAX`
names, `wire.UID_MAX_CHARS` characters), beside the Kubernetes rules (node names are DNS-1123 subdomains).

Where the fast path and the models differ, on purpose, for what kube-scheduler never sends:
- keys: `wire` matches a key case-insensitively when the exact name is absent, as Go's decoder does; the
  models take the exact names kube-scheduler writes;
- both candidate forms in one body: `wire` reads `NodeNames` and checks of `Nodes` only that its `items` is
  a list; the models check both (kube-scheduler fills one, by `nodeCacheCapable`);
- numbers no Go encoder writes, inside the opaque pod (NaN, Infinity, beyond a double, integers beyond 64
  bits): orjson refuses or rounds them, pydantic's parser keeps them;
- size: `wire` refuses a body with more than `wire.JSON_CONTAINERS_MAX` `{` and `[` bytes before decoding;
- a failed `preempt` reply carries an `Error` member ExtenderPreemptionResult does not have (kube-scheduler
  ignores unknown keys; the message is for whoever reads the reply).

The verb path keeps `wire` (the models are not imported there). Decoding a filter request with a plain pod
and its candidates in `NodeNames`, microseconds per call (`benchmarks/wire_decoding.py`: medians of 3
repeats, 2-core machine; docs/performance.md tells how they vary):

| candidates | `wire`, seen list | `wire`, new list | model, seen list | model, new list | model + names once, new |
|---|---|---|---|---|---|
| 500 | 5 | 40 | 28 | 29 | 45 |
| 5000 | 18 | 442 | 269 | 279 | 454 |

kube-scheduler repeats a candidate list while few nodes are feasible, and `wire` reads a list it has seen
from its memo, 5× (500) to 15× (5000) faster than the model, which remembers nothing. A list in a new
order (kube-scheduler filtering every node from a rotating start) the model alone decodes faster, but
reading the candidates once each, as the verbs need, brings it level with `wire`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, StringConstraints
from pydantic.fields import ComputedFieldInfo, FieldInfo

from extender.api.wire import CANDIDATES_MAX, INT64_MAX, UID_MAX_CHARS

MIN_EXTENDER_PRIORITY = 0
"""`MinExtenderPriority` of the Go types: the lowest score an extender gives."""
MAX_EXTENDER_PRIORITY = 10
"""`MaxExtenderPriority` of the Go types: the highest score an extender gives."""
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""Kubernetes' DNS-1123 subdomain (`IsDNS1123Subdomain`), which every node name is."""
GO_FORMAT_SAFE_PATTERN = r"^([^%]|%%)*$"
"""A string `fmt.Errorf` prints as written: every `%` doubled."""


def _printable(text: str) -> str:
    if not text.isprintable():
        raise ValueError("must be printable")
    return text


def _wire_name(name: str, info: FieldInfo | ComputedFieldInfo) -> str:
    """A field's title in the schema: its name on the wire."""
    return info.alias if isinstance(info, FieldInfo) and info.alias else name


NodeName = Annotated[str, StringConstraints(max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]
PodUid = Annotated[
    str,
    StringConstraints(min_length=1, max_length=UID_MAX_CHARS),
    AfterValidator(_printable),
    Field(description=f"A pod's metadata.uid: a printable string of 1 to {UID_MAX_CHARS} characters."),
]
PdbViolations = Annotated[int, Field(ge=0, le=INT64_MAX)]
ExtenderScore = Annotated[int, Field(ge=MIN_EXTENDER_PRIORITY, le=MAX_EXTENDER_PRIORITY)]
KubernetesObject = dict[str, Any]
"""A Kubernetes object as its API serves it (camelCase keys), not typed here."""


class WireModel(BaseModel):
    """Strict, as Go's decoder is (no string for a number, no `5.0` for an int64), unknown keys ignored."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore", field_title_generator=_wire_name)


class KubernetesModel(WireModel):
    """A Kubernetes object of which only some fields are typed; the rest is kept as sent."""

    model_config = ConfigDict(extra="allow")


class NodeMetadata(KubernetesModel):
    """A Node's `metadata`, of which the extender reads the name."""

    name: NodeName = Field(description="The node's name, which candidates and replies name it by.")


class Node(KubernetesModel):
    """A `v1.Node` in full, as kube-scheduler's informer holds it (`status.images` included)."""

    metadata: NodeMetadata = Field(description="The node's ObjectMeta.")


class NodeList(WireModel):
    """A `v1.NodeList` built by kube-scheduler: no kind or apiVersion, `metadata` `{}`."""

    metadata: Any = Field(None, description="The list's ListMeta; kube-scheduler sends `{}`; not read.")
    items: list[Node] | None = Field(
        None,
        description=f"The nodes; a node named twice is answered once; at most {CANDIDATES_MAX}.",
        max_length=CANDIDATES_MAX,
    )


class ExtenderArgs(WireModel):
    """The request of `filter` and `prioritize`: a pod and its candidate nodes, in one of two forms by the
    extender's `nodeCacheCapable` (this extender's: `true`, names). Every key is sent, null when unset."""

    pod: KubernetesObject = Field(
        alias="Pod",
        description="The pod being scheduled, as kube-scheduler's informer holds it: no kind or apiVersion, no "
        "managedFields. Never null.",
    )
    nodes: NodeList | None = Field(
        None,
        alias="Nodes",
        description="The candidates as Node objects: set only when `nodeCacheCapable` is false, else null.",
    )
    node_names: list[NodeName] | None = Field(
        None,
        alias="NodeNames",
        max_length=CANDIDATES_MAX,
        description="The candidates by name: set only when `nodeCacheCapable` is true, else null. Never empty "
        f"from kube-scheduler; a repeated name is answered once; at most {CANDIDATES_MAX}.",
    )


class ExtenderFilterResult(WireModel):
    """The reply of `filter`. The feasible nodes are exactly those in `NodeNames` (or `Nodes`), each one
    of the candidates; the failed maps only give reasons. kube-scheduler decodes keys case-insensitively and
    ignores unknown ones; the extender writes every key, in these names."""

    nodes: NodeList | None = Field(
        None,
        alias="Nodes",
        description="The feasible nodes as the Node objects received, unmodified: the reply to a `Nodes` "
        "request; null otherwise.",
    )
    node_names: list[NodeName] | None = Field(
        None,
        alias="NodeNames",
        description="The feasible nodes by name: the reply to a `NodeNames` request (read only when "
        "`nodeCacheCapable` is true); null otherwise.",
    )
    failed_nodes: dict[NodeName, str] | None = Field(
        None,
        alias="FailedNodes",
        description="Node → why it does not fit, for nodes preemption may still make room on. The extender "
        "sends reasons only when no node is feasible: kube-scheduler reads them only then.",
    )
    failed_and_unresolvable_nodes: dict[NodeName, str] | None = Field(
        None,
        alias="FailedAndUnresolvableNodes",
        description="Node → why it does not fit, for nodes preemption would not help; takes precedence over "
        "`FailedNodes` for a node in both.",
    )
    error: Annotated[str, StringConstraints(pattern=GO_FORMAT_SAFE_PATTERN)] = Field(
        "",
        alias="Error",
        description="Non-empty: the call failed and the pod's scheduling attempt with it. kube-scheduler passes "
        "it to `fmt.Errorf`, so every `%` is doubled.",
    )


class HostPriority(WireModel):
    """One node's score in a `prioritize` reply."""

    host: NodeName = Field(alias="Host", description="The node: one of the candidates.")
    score: ExtenderScore = Field(
        alias="Score",
        description=f"An integer from {MIN_EXTENDER_PRIORITY} to {MAX_EXTENDER_PRIORITY} (an int64: `5.0` fails "
        "to decode); kube-scheduler adds it × 10 × the extender's weight to the node's total and neither "
        "checks nor clamps it.",
    )


class HostPriorityList(RootModel[list[HostPriority]]):
    """The reply of `prioritize`: a bare JSON array, no `Error` member. A candidate left out scores 0; `[]`
    is the reply of a failed call (kube-scheduler ignores prioritize failures)."""

    model_config = ConfigDict(strict=True, frozen=True)


class MetaPod(WireModel):
    """A victim named by its UID."""

    uid: PodUid = Field(alias="UID", description="The victim pod's metadata.uid.")


class MetaVictims(WireModel):
    """The victims kube-scheduler proposes on one node, by UID, with the PodDisruptionBudgets their eviction
    would violate."""

    pods: list[MetaPod] | None = Field(
        None,
        alias="Pods",
        description="The victims, in kube-scheduler's order; null reads as none. In a reply, those kept.",
    )
    num_pdb_violations: PdbViolations | None = Field(
        0,
        alias="NumPDBViolations",
        description="How many PodDisruptionBudgets evicting the victims violates (an int64); null reads as 0.",
    )


class PodMetadata(KubernetesModel):
    """A victim pod's `metadata`, of which the extender reads the UID."""

    uid: PodUid = Field(description="The pod's UID, which the reply names it by.")


class VictimPod(KubernetesModel):
    """A victim `v1.Pod` in full, from kube-scheduler's cache."""

    metadata: PodMetadata = Field(description="The pod's ObjectMeta.")


class Victims(WireModel):
    """The victims kube-scheduler proposes on one node, as full Pod objects."""

    pods: list[VictimPod] | None = Field(
        None, alias="Pods", description="The victims, in kube-scheduler's order; null reads as none."
    )
    num_pdb_violations: PdbViolations | None = Field(
        0,
        alias="NumPDBViolations",
        description="How many PodDisruptionBudgets evicting the victims violates (an int64); null reads as 0.",
    )


class ExtenderPreemptionArgs(WireModel):
    """The request of `preempt`: the preemptor and, per candidate node, the victims kube-scheduler chose,
    in one of two forms by `nodeCacheCapable`; the other is null."""

    pod: KubernetesObject = Field(
        alias="Pod", description="The preemptor, as kube-scheduler's informer holds it. Never null."
    )
    node_name_to_victims: dict[NodeName, Victims | None] | None = Field(
        None,
        alias="NodeNameToVictims",
        max_length=CANDIDATES_MAX,
        description="Node → victims as full Pods: set only when `nodeCacheCapable` is false. A null entry "
        "reads as no victims.",
    )
    node_name_to_meta_victims: dict[NodeName, MetaVictims | None] | None = Field(
        None,
        alias="NodeNameToMetaVictims",
        max_length=CANDIDATES_MAX,
        description="Node → victims by UID: set only when `nodeCacheCapable` is true. A null entry reads as no "
        "victims; newer kube-schedulers also send nodes with an empty `Pods`.",
    )


class ExtenderPreemptionResult(WireModel):
    """The reply of `preempt`, always by UID whichever form the request had; no `Error` member."""

    node_name_to_meta_victims: dict[NodeName, MetaVictims] | None = Field(
        None,
        alias="NodeNameToMetaVictims",
        description="The candidates kept, each one of the request's nodes, with the victims kept in their "
        "order; `{}`: no candidate (the pod stays unschedulable). Never a null entry.",
    )


class ExtenderBindingArgs(WireModel):
    """The request of `bind`, which this extender does not serve (its configuration has no `bindVerb`:
    kube-scheduler's default binder binds)."""

    pod_name: str = Field(alias="PodName", description="The name of the pod to bind.")
    pod_namespace: str = Field(alias="PodNamespace", description="Its namespace.")
    pod_uid: str = Field(alias="PodUID", description="Its UID (the Binding's precondition).")
    node: str = Field(alias="Node", description="The node kube-scheduler chose.")


class ExtenderBindingResult(WireModel):
    """The reply of `bind`."""

    error: str = Field("", alias="Error", description="Non-empty: the bind failed (passed to `fmt.Errorf`).")
