"""The pure policy core: decisions from a frozen snapshot, a request, settings and `now`.

Nothing here performs I/O, reads a clock, starts a thread or mutates its inputs; the HTTP verbs, the
scaler and the simulator all call these same functions.
"""

from extender.policy.decisions import FilterDecision, PreemptDecision, ScoreDecision
from extender.policy.filtering import filter_pod
from extender.policy.preemption.verb import preempt_pod
from extender.policy.scoring import prioritize_pod
from extender.policy.settings import PolicySettings

__all__ = [
    "FilterDecision",
    "PolicySettings",
    "PreemptDecision",
    "ScoreDecision",
    "filter_pod",
    "preempt_pod",
    "prioritize_pod",
]
