"""The answer to kube-scheduler's `preempt` call (pure).

For a gang member of our scheduler, kube-scheduler's pod-level proposal is declined (no node, no victim):
job-level preemption — the whole gang, elastic surplus first, never half a victim gang — is decided by
`choice` and carried out by the preemption loop, which kube-scheduler's per-pod preemption cannot
express. For any other pod the proposal passes through, checked and typed: nodes whose victim list is
empty are dropped (a non-ignorable extender returning one fails the whole preemption), every other node
keeps its victims in the order proposed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from extender.policy.core.decisions import PreemptDecision
from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import PodView


def decide_preempt(
    pod: PodView,
    proposed: Mapping[str, Sequence[str]],
    pdb_violations: Mapping[str, int],
    settings: PolicySettings,
) -> PreemptDecision:
    """The reply to `preempt` for `pod`: declined for a gang member of our scheduler, else passed through."""
    if pod.group and pod.scheduler_name == settings.scheduler_name:
        return job_level_preemption(pod)
    return preempt_pod(proposed, pdb_violations)


def preempt_pod(proposed: Mapping[str, Sequence[str]], pdb_violations: Mapping[str, int]) -> PreemptDecision:
    """Echo kube-scheduler's victims per node (by UID), dropping nodes without victims."""
    victims = {node: tuple(uids) for node, uids in proposed.items() if uids}
    dropped = len(proposed) - len(victims)
    summary = f"kept kube-scheduler's proposal on {len(victims)} node(s); dropped {dropped} without victims"
    return PreemptDecision("passthrough", summary, victims, {node: pdb_violations.get(node, 0) for node in victims})


def job_level_preemption(pod: PodView) -> PreemptDecision:
    """Decline pod-level preemption for a gang member: the preemption loop handles its whole gang."""
    return PreemptDecision("job-level", f"gang {pod.group}: preemption is planned for the whole gang", {})
