"""The connection's one deadline: moved every request, its timer moved only earlier."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from extender.api.edge.deadline import Deadline


@dataclass
class Timer:
    when: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class Loop:
    now: float = 0.0
    timers: list[Timer] = field(default_factory=list)

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(when, callback)
        self.timers.append(timer)
        return timer

    def run_until(self, when: float) -> None:
        """Fire every live timer due by `when`, in order, moving the clock."""
        while due := sorted((t for t in self.timers if not t.cancelled and t.when <= when), key=lambda t: t.when):
            timer = due[0]
            self.timers.remove(timer)
            self.now = timer.when
            timer.callback()
        self.now = when


def deadline() -> tuple[Deadline, Loop, list[float]]:
    loop = Loop()
    reached: list[float] = []
    return Deadline(cast(asyncio.AbstractEventLoop, cast(Any, loop)), lambda: reached.append(loop.now)), loop, reached


def test_moving_the_deadline_later_keeps_the_timer_which_arms_again_when_it_fires() -> None:
    ends, loop, reached = deadline()
    ends.set(10.0)
    for later in (11.0, 12.0, 130.0):
        ends.set(later)
    assert len(loop.timers) == 1, "one timer for every move later"
    loop.run_until(129.0)
    assert reached == [] and len(loop.timers) == 1
    loop.run_until(131.0)
    assert reached == [130.0]


def test_moving_it_earlier_arms_an_earlier_timer() -> None:
    ends, loop, reached = deadline()
    ends.set(120.0)
    ends.set(10.0)
    assert [timer.cancelled for timer in loop.timers] == [True, False]
    loop.run_until(11.0)
    assert reached == [10.0]


def test_a_cleared_deadline_is_never_reached() -> None:
    ends, loop, reached = deadline()
    ends.set(10.0)
    ends.clear()
    loop.run_until(20.0)
    assert reached == [] and not loop.timers


def test_a_timer_that_fires_within_a_millisecond_of_the_deadline_reaches_it() -> None:
    ends, loop, reached = deadline()
    ends.set(10.0)
    loop.timers[0].when = 9.9995
    loop.run_until(9.9996)
    assert reached == [9.9995] and not loop.timers
