"""Which nodes a pod may go to, as kube-scheduler's NodeAffinity and TaintToleration filters decide it.

kube-scheduler filters the candidate nodes of the pod it asks about before calling the extender, but a
gang plan places every member of a gang at once over all the model's nodes: each member must land only on
nodes its own `spec.nodeSelector`, required node affinity
(`requiredDuringSchedulingIgnoredDuringExecution`) and tolerations admit, or the plan reserves room the
member can never bind to. Kueue narrows placement in exactly these fields (a ResourceFlavor's node labels
and tolerations), and so do users. Pure data and predicates: `convert` reads the views from JSON; the
planner asks `PodView.selects`.

Semantics follow `k8s.io/component-helpers/scheduling/corev1`: the node selector terms are ORed, the
requirements within a term ANDed; `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt` on labels, and
`metadata.name` as the one field a `matchFields` requirement may name. A taint with effect `NoSchedule`
or `NoExecute` keeps out every pod without a toleration of it; `PreferNoSchedule` only scores, so it
never keeps a pod out.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass


class Operator(enum.Enum):
    """A node selector requirement's operator."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


NODE_NAME_FIELD = "metadata.name"
"""The only field a `matchFields` requirement may name."""
FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""Taint effects that keep a pod without a matching toleration off the node."""
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One `matchExpressions` (on a label) or `matchFields` (on the node's name) entry."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    on_field: bool = False
    """A `matchFields` requirement: `key` is `metadata.name` and the node's name is compared."""

    def holds(self, name: str, labels: Mapping[str, str]) -> bool:
        present = True if self.on_field else self.key in labels
        value = name if self.on_field else labels.get(self.key, "")
        if self.operator is Operator.IN:
            return present and value in self.values
        if self.operator is Operator.NOT_IN:
            return not present or value not in self.values
        if self.operator is Operator.EXISTS:
            return present
        if self.operator is Operator.DOES_NOT_EXIST:
            return not present
        if not present or not value.lstrip("-").isdecimal():
            return False
        bound = int(self.values[0])
        return int(value) > bound if self.operator is Operator.GT else int(value) < bound


@dataclass(frozen=True, slots=True)
class Term:
    """One node selector term: every requirement must hold. A term without requirements matches no node."""

    requirements: tuple[Requirement, ...]

    def holds(self, name: str, labels: Mapping[str, str]) -> bool:
        return bool(self.requirements) and all(each.holds(name, labels) for each in self.requirements)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    """Empty with operator Exists: tolerates every taint."""
    operator: str = "Equal"
    """`Equal` or `Exists`."""
    value: str = ""
    effect: str = ""
    """Empty: tolerates every effect."""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value


@dataclass(frozen=True, slots=True)
class NodeConstraint:
    """Everything that limits where one pod may go, hashable so the nodes it admits are derived once per
    node-labels epoch for all pods that share it."""

    selector: tuple[tuple[str, str], ...] = ()
    """`spec.nodeSelector` as sorted pairs."""
    affinity: tuple[Term, ...] | None = None
    """The required node affinity's terms (any one must hold); None when the pod has none."""
    tolerations: tuple[Toleration, ...] = ()

    def admits(self, name: str, labels: Mapping[str, str], taints: tuple[Taint, ...]) -> bool:
        if not all(labels.get(key) == value for key, value in self.selector):
            return False
        if self.affinity is not None and not any(term.holds(name, labels) for term in self.affinity):
            return False
        return all(
            taint.effect not in FILTERING_EFFECTS or any(each.tolerates(taint) for each in self.tolerations)
            for taint in taints
        )

    @property
    def narrows(self) -> bool:
        """Whether the pod itself asks for particular nodes (a selector or a required affinity)."""
        return bool(self.selector) or self.affinity is not None


UNCONSTRAINED = NodeConstraint()
