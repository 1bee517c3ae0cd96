"""Every knob of the start-time forecast (`loops.start_forecast`), in one frozen object.

Declared with `setting` like the other loops' settings, so the command line builds its `--forecast-*` flags
and the config file reads its `start_forecast:` section.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.policy.core.setting_rules import POSITIVE_SECONDS, SHARE, Numbers, Switch, check_declared, setting

POSITIVE_COUNT = Numbers(1, integer=True, unit="count")


@dataclass(frozen=True, slots=True)
class StartForecastSettings:
    enabled: bool = setting(True, Switch(), "forecast when each waiting gang starts")
    samples: int = setting(200, POSITIVE_COUNT, "sampled futures the queue is run forward over per refresh")
    min_history: int = setting(
        3, POSITIVE_COUNT, "finished run times seen before any forecast is given (before that: unknown)"
    )
    refresh_s: float = setting(
        5.0, POSITIVE_SECONDS, "fewest seconds between two refreshes (one is made only when the cluster changed)"
    )
    recheck_s: float = setting(
        30.0, POSITIVE_SECONDS, "seconds after which a refresh is made even on an unchanged model"
    )
    coverage: float = setting(
        0.9, SHARE, "share of starts the band's p90 (and, from below, its p10) is calibrated to cover"
    )
    calibration_step: float = setting(
        0.005, SHARE, "how far each resolved forecast moves the calibration's levels toward the stated coverage"
    )
    calibration_offset_s: float = setting(
        30.0, POSITIVE_SECONDS, "seconds added to waits before their log ratios are taken (short waits' noise)"
    )
    calibration_min_records: int = setting(
        20, POSITIVE_COUNT, "resolved forecasts needed before the bands are corrected by past errors"
    )
    calibration_kept: int = setting(
        2000, POSITIVE_COUNT, "resolved forecasts kept, the most recent, for correcting the bands"
    )
    record_every_s: float = setting(
        30.0, POSITIVE_SECONDS, "seconds between two forecasts of one gang kept for calibration"
    )
    starving_starts_kept: int = setting(
        500,
        Numbers(0, integer=True, unit="count"),
        "latest starving-to-start delays kept (0: starving gangs are not counted on to start sooner)",
    )
    count_growth: bool = setting(
        True,
        Switch(),
        "count on the scaler growing elastic TFJobs into room left idle (off where no scaler runs)",
    )
    what_if_gangs: int = setting(
        3,
        Numbers(0, integer=True, unit="gangs"),
        "waiting gangs forecast anew at each smaller size per refresh, those longest without it first",
    )
    what_if_samples: int = setting(50, POSITIVE_COUNT, "sampled futures per size of a gang's what-if")
    event_change_share: float = setting(
        0.5, SHARE, "share by which a job's p50 must move (against the last one told) for a new Event"
    )
    event_interval_s: float = setting(
        300.0, POSITIVE_SECONDS, "fewest seconds between two start-forecast Events on one TFJob"
    )

    def __post_init__(self) -> None:
        check_declared(self)
