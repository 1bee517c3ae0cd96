"""A keeper's rounds: one piece of upkeep (certificates kept in a Secret, certificate files read again) run on
a thread of its own, at start and then again and again, a failure said and retried sooner."""

from __future__ import annotations

import logging
from collections.abc import Callable

from extender.loops.ticking import Ticker

log = logging.getLogger(__name__)


class Rounds:
    """Runs `keep` on a thread of its own (`rounds-<name>`, a `Ticker`) at start and every `recheck_s`,
    `retry_s` after a failure (the API server unreachable, a refusal, a bad file), `error` saying what the
    last failure was ("")."""

    def __init__(self, name: str, keep: Callable[[], None], recheck_s: float, retry_s: float) -> None:
        self._name = name
        self._keep = keep
        self._recheck_s = recheck_s
        self._retry_s = retry_s
        self._ticker = Ticker(f"rounds-{name}", self._round, self._pause_s, at_once=True)
        self.error = ""

    def start(self) -> None:
        self._ticker.start()

    def stop(self) -> None:
        self._ticker.stop()

    def _pause_s(self) -> float:
        return self._retry_s if self.error else self._recheck_s

    def _round(self) -> None:
        try:
            self._keep()
            self.error = ""
        except Exception as error:  # any failure is retried, and said
            self.error = str(error)[:300]
            log.warning("%s: %s; trying again in %gs", self._name, self.error, self._retry_s)


class InRounds:
    """A keeper whose upkeep runs in `Rounds` (`_rounds`, set by its constructor): started and stopped with
    them, its last failure theirs."""

    _rounds: Rounds

    @property
    def error(self) -> str:
        return self._rounds.error

    def start(self) -> None:
        self._rounds.start()

    def stop(self) -> None:
        self._rounds.stop()
