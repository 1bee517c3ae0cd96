"""The pure policy core: decisions from a frozen snapshot, a request, settings and `now`.

Nothing here performs I/O, reads a clock, starts a thread or mutates its inputs; the HTTP verbs, the
scaler and the simulator all call these same functions.
"""

from extender.policy.core.decisions import FilterDecision, PreemptDecision, ScoreDecision
from extender.policy.core.settings import PolicySettings
from extender.policy.preemption.verb import preempt_pod
from extender.policy.verbs.filtering import filter_pod
from extender.policy.verbs.scoring import prioritize_pod

__all__ = [
    "FilterDecision",
    "PolicySettings",
    "PreemptDecision",
    "ScoreDecision",
    "filter_pod",
    "preempt_pod",
    "prioritize_pod",
]
