"""A preemption decision taken from a simulator run, replayed on its `/debug/state` dump.

At t = 240 s of the KOD2 scenario (seed 1) the elastic gang `sim/cnn-rand-8` (1 PS + 4 workers of
1 core, minMember 2: the PS and one worker) cannot start. Scaling `sim/vgg16-5` in by its one surplus
worker frees enough (the run that took that plan started cnn-rand-8 at once, with no other job
finishing); evicting the whole `sim/resnet50-2` gang (2 pods, a running job restarted) also works but
disrupts more. The victim search prefers the single-pod scale-in: its pruning weighs only what minMember
needs (2 CPU), not every pending member (5 CPU).
"""

from __future__ import annotations

from pathlib import Path

from extender.policy import PolicySettings
from extender.policy.preemption.victims import PreemptionPlan, plan_preemption
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState

DUMP = Path(__file__).parent / "fixtures" / "kod2-preemption-t240.json"
NOW = 1_800_000_240.0


def test_the_cheapest_sufficient_victim_set_is_one_surplus_worker() -> None:
    state = ClusterState()
    load_snapshot_file(state, DUMP)
    plan = plan_preemption(state.snapshot(), "sim/cnn-rand-8", PolicySettings(), NOW)
    assert isinstance(plan, PreemptionPlan)
    assert dict(plan.scale_ins) == {"sim/vgg16-5": 1}
    assert plan.evicted == ()
