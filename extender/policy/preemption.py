"""The `preempt` verb's policy: for now, kube-scheduler's own proposal, checked and typed.

Nodes whose victim list is empty are dropped (a non-ignorable extender returning an empty list for a
node fails the whole preemption); every other node keeps its victims in the order proposed. Job-level
preemption (whole gangs, elastic surplus first) replaces this pass-through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from extender.policy.decisions import PreemptDecision


def preempt_pod(proposed: Mapping[str, Sequence[str]], pdb_violations: Mapping[str, int]) -> PreemptDecision:
    """Echo kube-scheduler's victims per node (by UID), dropping nodes without victims."""
    victims = {node: tuple(uids) for node, uids in proposed.items() if uids}
    dropped = len(proposed) - len(victims)
    summary = f"kept kube-scheduler's proposal on {len(victims)} node(s); dropped {dropped} without victims"
    return PreemptDecision("passthrough", summary, victims, {node: pdb_violations.get(node, 0) for node in victims})
