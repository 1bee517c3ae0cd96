"""One timer per connection, moved lazily: the deadline changes with every request, the timer seldom.

A connection always waits for one thing at a time — its first byte, a head, a body, the next request of
a keep-alive connection, the end of a lingering close — each with its own limit. `Deadline.set` records
when that wait ends; the event loop's timer is only moved *earlier* (a new `call_at`), never later: when
it fires before the deadline it is armed again for what is left. A connection that answers request after
request thus moves its deadline a few times per request and its timer once in a while (creating and
cancelling a timer on the event loop costs more than the rest of a request's bookkeeping).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

NEVER = math.inf
TIMER_SLACK_S = 0.001
"""Seconds early a timer may fire (uvloop keeps time in milliseconds): a deadline this close counts as reached."""


class Deadline:
    """When the connection's current wait ends; `reached` is called then (see the module's text)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, reached: Callable[[], None]) -> None:
        self.loop = loop
        self.reached = reached
        self.at = NEVER
        """Event-loop time the current wait ends (`NEVER`: nothing is waited for)."""
        self.armed_at = NEVER
        self.handle: asyncio.TimerHandle | None = None

    def set(self, at: float) -> None:
        """The current wait ends at event-loop time `at`."""
        self.at = at
        if at < self.armed_at:
            if self.handle is not None:
                self.handle.cancel()
            self.armed_at = at
            self.handle = self.loop.call_at(at, self._fired)

    def clear(self) -> None:
        """Nothing is waited for (the timer may still fire, and then does nothing)."""
        self.at = NEVER

    def cancel(self) -> None:
        """Nothing is waited for, ever again."""
        self.at = NEVER
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        self.armed_at = NEVER

    def _fired(self) -> None:
        self.handle = None
        self.armed_at = NEVER
        if self.at == NEVER:
            return
        if self.loop.time() < self.at - TIMER_SLACK_S:
            self.armed_at = self.at
            self.handle = self.loop.call_at(self.at, self._fired)
            return
        self.at = NEVER
        self.reached()
