import re
from typing import Any

import pytest

from extender.loops.preemption_settings import PreemptionLoopSettings


def test_the_defaults_are_the_loops_knobs_as_they_were() -> None:
    knobs = PreemptionLoopSettings()
    assert (knobs.interval_s, knobs.pdb_retry_s, knobs.quiet_recheck_s) == (2.0, 30.0, 30.0)
    assert (knobs.max_gangs_per_tick, knobs.max_admissions_per_tick) == (3, 16)
    assert (knobs.max_gangs_checked_per_tick, knobs.max_gangs_walked_per_tick) == (16, 128)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"interval_s": 0.0}, "interval_s: 0.0 is out of range (> 0)"),
        ({"pdb_retry_s": -1.0}, "pdb_retry_s: -1.0 is out of range (>= 0)"),
        ({"max_admissions_per_tick": -2}, "max_admissions_per_tick: -2 is out of range (>= 0)"),
        ({"max_gangs_per_tick": 1.5}, "max_gangs_per_tick: 1.5 is not an integer (>= 0)"),
        ({"shadowed_preemptions_kept": 0}, "shadowed_preemptions_kept: 0 is out of range (>= 1)"),
    ],
)
def test_a_knob_the_loop_cannot_run_with_is_refused_by_name(values: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(named)}$"):
        PreemptionLoopSettings(**values)
