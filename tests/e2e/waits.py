"""How the end-to-end tests wait: every wait for something to happen goes through `wait_until` (poll until
a condition holds, within a time limit) and every check that something does NOT happen goes through
`stays` (poll for a whole observation window, failing at the first poll where the condition no longer
holds). A condition may also raise `AssertionError` with its own message; both helpers fail at once on it.
The observation windows are named constants, in seconds, each saying why it is long enough."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from extender.devcluster import wait_until

__all__ = ["OBSERVE_S", "stays", "wait_until"]
T = TypeVar("T")
OBSERVE_S = 8.0
"""How long a gang that must not start is watched, polling, to prove no member binds early: several
rounds of kube-scheduler retrying the pending members (its backoff starts at 1 s) through the extender."""


def stays(what: str, condition: Callable[[], T], for_s: float, interval_s: float = 0.25) -> T:
    """Poll `condition` for `for_s` seconds (at least once), failing at once if it returns something falsy;
    return its last value."""
    end = time.monotonic() + for_s
    while True:
        value = condition()
        assert value, f"{what} stopped holding: {value!r}"
        if time.monotonic() >= end:
            return value
        time.sleep(interval_s)
