"""The thread a loop ticks on: wait, tick if the model has synced, log a failed tick and go on.

A tick that raises (an API error, a bug) is logged and the loop waits for the next one: the loops are
level-triggered, so the next tick decides again from a fresh snapshot. `stop` wakes the wait at once.
With `at_once` the first tick comes as the thread starts, before the first wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Ticker:
    def __init__(
        self, name: str, tick: Callable[[], None], pause_s: Callable[[], float], *, at_once: bool = False
    ) -> None:
        self.name = name
        self._tick = tick
        self._pause_s = pause_s
        self._at_once = at_once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)

    def _run(self) -> None:
        if self._at_once:
            self._guarded_tick()
        while not self._stop.wait(self._pause_s()):
            self._guarded_tick()

    def _guarded_tick(self) -> None:
        try:
            self._tick()
        except Exception:
            log.exception("%s: tick failed", self.name)
