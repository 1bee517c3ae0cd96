"""What taking a running job costs, and whether to wait for its next checkpoint instead (pure).

Taking a job whole (evicting or suspending it) throws away its training since its last checkpoint
(`lost_work`) and makes it pay its restart again: `PolicySettings.restart_cost_s` seconds of its size.
The victim search weighs whole-gang candidates of one PriorityClass by that cost, cheapest first, and of
the single-subject sets that would do it prefers the one that costs least. A plan whose victims all
declare their interval and report their checkpoints (so their next one is due at a known time) may wait
for them: waiting `w` seconds costs the preemptor's size × `w` × `PolicySettings.checkpoint_wait_value`
(its weighted wait) and saves what the victims would lose now less what they would lose by then (their
training after the checkpoint); when it saves more and `w` is at most
`PolicySettings.max_checkpoint_wait_s`, the preemption loop holds the plan until then. A job whose next
checkpoint is a guess (it reports none, or declares no interval) is never waited for.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.policy.core.settings import PolicySettings
from extender.policy.core.views import JobView
from extender.policy.preemption.lost_work import AtRisk, at_risk_of, work_size
from extender.policy.rank.gang_summary import GangSummary


def cost_of(risk: AtRisk, settings: PolicySettings) -> float:
    """Resource-seconds taking the job now throws away: its lost training and its start-up again."""
    return risk.resource_seconds + settings.restart_cost_s * risk.size


def summary_at_risk(job: JobView | None, summary: GangSummary, now: float, settings: PolicySettings) -> AtRisk:
    """`lost_work.at_risk` from a gang's queue summary (no pod is looked up)."""
    size = work_size((summary.bound,))
    return at_risk_of(job, summary.started, summary.last_checkpoint, size, now, settings)


def checkpoint_wait_s(risks: Sequence[AtRisk], preemptor_size: float, settings: PolicySettings) -> float | None:
    """Seconds to hold a preemption taking jobs at `risks` so that each reaches its next checkpoint first,
    when that costs the preemptor (of `work_size` `preemptor_size`) less than it saves them; else None."""
    due = [risk.next_checkpoint_s for risk in risks]
    if not risks or any(seconds is None for seconds in due):
        return None
    wait = max(seconds for seconds in due if seconds is not None)
    if wait <= 0 or wait > settings.max_checkpoint_wait_s:
        return None
    saved = sum(risk.resource_seconds - (wait - (risk.next_checkpoint_s or 0.0)) * risk.size for risk in risks)
    return wait if saved > preemptor_size * wait * settings.checkpoint_wait_value else None
