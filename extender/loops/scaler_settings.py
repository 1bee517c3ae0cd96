"""How the scaler loop runs, in one frozen object built once by whoever starts the loop.

The scaler's policy (steps, cooldowns, consolidation) is `PolicySettings`; this object holds how the loop
itself runs: how often it ticks, how long an unchanged model goes without a new plan, how many actions it
keeps for `/debug/scaler`. Each field is declared once with `setting` (`policy.core.setting_rules`), from
which the command line builds its `--scaler-*` flags and the config file reads its `scaler_loop:` section;
a value the loop cannot run with is a `SettingValueError` naming the field. The Lease the scaler shares with
the preemption loop is `LeaderElectionSettings` (`extender.config`).
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.policy.core.setting_rules import POSITIVE_SECONDS, SECONDS, Numbers, check_declared, setting


@dataclass(frozen=True, slots=True)
class ScalerLoopSettings:
    interval_s: float = setting(2.0, POSITIVE_SECONDS, "seconds between two ticks of the scaler")
    replan_unchanged_s: float = setting(
        10.0, SECONDS, "seconds after which a model unchanged since a plan with no actions is planned again"
    )
    """Cooldowns end and waits age with the clock alone; the scaler plans again at the latest when the scale
    cooldown (`PolicySettings.scale_cooldown_s`) ends, if that comes sooner."""
    actions_kept: int = setting(
        256, Numbers(1, integer=True, unit="count"), "latest scaler actions kept for /debug/scaler and the page"
    )

    def __post_init__(self) -> None:
        check_declared(self)
