"""Every knob of the preemption loop, in one frozen object built once by whoever starts the loop.

The policy the loop decides with (weights, starvation, minimum runs, suspension rules) is `PolicySettings`;
this object holds how the loop itself runs: how often it ticks, how much one tick may do, how long it waits
before trying again, and how many records and Events it keeps or writes. Each field is declared once with
`setting` (`policy.core.setting_rules`): its unit, range and help, from which the command line builds its
`--preemption-*` flags and the config file reads its `preemption_loop:` section. The command line, the
simulator and the tests build one and hand it to `PreemptionLoop`; a value the loop cannot run with is a
`SettingValueError` (a `ValueError`) naming the field and what it takes.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.policy.core.setting_rules import COUNT, POSITIVE_SECONDS, SECONDS, Numbers, check_declared, setting

GANGS = Numbers(0, integer=True, unit="gangs")
"""A number of gangs, 0 or more."""


@dataclass(frozen=True, slots=True)
class PreemptionLoopSettings:
    interval_s: float = setting(2.0, POSITIVE_SECONDS, "seconds between two ticks of the preemption loop")
    max_gangs_per_tick: int = setting(3, GANGS, "waiting gangs, highest rank first, tried for preemption in one tick")
    max_admissions_per_tick: int = setting(
        16, GANGS, "gangs admitted ahead of their pods (their plans reserved) in one tick"
    )
    max_gangs_checked_per_tick: int = setting(
        16, GANGS, "waiting gangs, highest rank first, whose plan one pass checks (to admit it or preempt for it)"
    )
    max_gangs_walked_per_tick: int = setting(
        128, GANGS, "waiting gangs, highest rank first, one pass looks at (one too large for all free room is skipped)"
    )
    """A gang that needs more than is free on all nodes together is passed over without a plan, and does
    not count against `max_gangs_checked_per_tick`."""
    pdb_retry_s: float = setting(
        30.0, SECONDS, "seconds before a preemption a PodDisruptionBudget refused is tried again for the same gang"
    )
    priority_boost_interval_s: float = setting(
        30.0, POSITIVE_SECONDS, "least seconds between two writes of one Kueue Workload's priority boost"
    )
    quiet_recheck_s: float = setting(
        30.0, SECONDS, "seconds after which a pass that found nothing to do is made again on an unchanged model"
    )
    """A starving gang's rank keeps climbing with no event, and may come to outrank a job whose surplus it
    needs."""
    shadowed_preemptions_kept: int = setting(
        256,
        Numbers(1, integer=True, unit="count"),
        "in shadow mode, the latest preemptions that would have been carried out, kept for /debug",
    )
    wait_event_gangs_per_tick: int = setting(
        5, GANGS, "waiting gangs, highest rank first, whose reason to wait is looked at per tick (for Events)"
    )
    wait_event_pods_per_gang: int = setting(
        50, COUNT, "pending members of one gang that get the Event saying what their gang waits for"
    )
    wait_event_repeat_after_s: float = setting(
        300.0, SECONDS, "seconds before a changed wait message of the same kind is written again for a gang"
    )

    def __post_init__(self) -> None:
        check_declared(self)
