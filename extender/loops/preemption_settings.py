"""Every knob of the preemption loop, in one frozen object built once by whoever starts the loop.

The policy the loop decides with (weights, starvation, minimum runs, suspension rules) is `PolicySettings`;
this object holds how the loop itself runs: how often it ticks, how much one tick may do, how long it waits
before trying again, and how many records and Events it keeps or writes. Each field names its unit in its
name (`_s`: seconds, `_per_tick`: a count per tick, `_kept` / `_per_gang`: a count). The command line, the
simulator and the tests build one and hand it to `PreemptionLoop`; a value the loop cannot run with is a
`ValueError` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from extender.loops.waitevents import WAIT_EVENT_GANGS_PER_TICK, WAIT_EVENT_PODS_PER_GANG, WAIT_EVENT_REPEAT_AFTER_S


@dataclass(frozen=True, slots=True)
class PreemptionLoopSettings:
    interval_s: float = 2.0
    """Seconds between ticks."""
    max_gangs_per_tick: int = 3
    """Waiting gangs, highest rank first, tried for preemption in one tick."""
    max_admissions_per_tick: int = 16
    """Gangs admitted ahead of their pods (their plans reserved) in one tick."""
    max_gangs_checked_per_tick: int = 16
    """Waiting gangs, highest rank first, whose plan one pass checks (to admit it, or to preempt for it)."""
    max_gangs_walked_per_tick: int = 128
    """Waiting gangs, highest rank first, one pass looks at: one that needs more than is free on all nodes
    together is passed over without a plan, and does not count against `max_gangs_checked_per_tick`."""
    pdb_retry_s: float = 30.0
    """Seconds before a preemption a PodDisruptionBudget refused is tried again for the same gang."""
    quiet_recheck_s: float = 30.0
    """Seconds after which a pass that found nothing to do is made again on an unchanged model: a starving
    gang's rank keeps climbing with no event, and may come to outrank a job whose surplus it needs."""
    shadowed_preemptions_kept: int = 256
    """In shadow mode, the most recent preemptions that would have been carried out kept for `/debug`."""
    wait_event_gangs_per_tick: int = WAIT_EVENT_GANGS_PER_TICK
    """Waiting gangs, highest rank first, whose reason to wait is looked at per tick (`waitevents`)."""
    wait_event_pods_per_gang: int = WAIT_EVENT_PODS_PER_GANG
    """Most pending members of one gang that get the Event saying what their gang waits for."""
    wait_event_repeat_after_s: float = WAIT_EVENT_REPEAT_AFTER_S
    """Seconds before the same reason kind is written again for a gang whose message changed."""

    def __post_init__(self) -> None:
        if not self.interval_s > 0:
            raise ValueError(f"preemption loop interval_s must be above 0 seconds, not {self.interval_s!r}")
        if self.shadowed_preemptions_kept < 1:
            raise ValueError(
                f"preemption loop shadowed_preemptions_kept must be at least 1, not {self.shadowed_preemptions_kept!r}"
            )
        for setting in fields(self):
            value = getattr(self, setting.name)
            if value < 0:
                unit = "seconds" if setting.name.endswith("_s") else "a count"
                raise ValueError(f"preemption loop {setting.name} must not be negative ({unit}), not {value!r}")
