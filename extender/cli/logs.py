"""The process's log: one handler on the root logger, text or JSON lines, repeats held back.

`configure_logging` installs a single stderr handler on the root logger; every logger of the process —
ours (the listeners' access lines at debug level included) and the Kubernetes client's urllib3, none with a
handler of its own — writes through it. `--log-format text` writes
`time LEVEL logger: message` lines; `json` writes one object per line (`JsonFormatter`: `ts` in RFC 3339,
`level`, `logger`, `msg`, and `exc` with the traceback when there is one).

An API server that cannot be reached makes every watch thread and every urllib3 connection retry warn,
several times a second, with the same message. `RepeatLimiter` lets a warning or error through once per
`interval_s` per (logger, level, message template) — the template, not the formatted text, so the eight
watches' "listing again" lines count as one — and holds back the repeats in between; the next line of
that template that passes says how many were held back (`... (repeated 57 times in 30 s)`). Lines below
warning are never held back.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LIMITED_FROM_LEVEL = logging.WARNING
"""Records at this level and above are subject to `RepeatLimiter`."""
MAX_TRACKED_TEMPLATES = 4096
"""Distinct (logger, level, template) keys the limiter remembers; past this it forgets the stalest half."""

INSTALLED_MARK = "tfjob_extender_handler"
"""Attribute set on the handler `configure_logging` installs, so a second call replaces it."""


class RepeatLimiter(logging.Filter):
    """Lets a warning or error through once per `interval_s` per (logger, level, message template); the
    next one that passes after held-back repeats carries their count in `record.repeated` and
    `record.repeated_over_s` (the formatters append it)."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}
        """Key → (when a line of it last passed, repeats held back since)."""
        self._lock = threading.Lock()
        """Handlers filter outside their own lock, and every thread of the process logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < LIMITED_FROM_LEVEL or self.interval_s <= 0:
            return True
        with self._lock:
            return self._passes(record)

    def _passes(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        passed = self._seen.get(key)
        if passed is not None and now - passed[0] < self.interval_s:
            self._seen[key] = (passed[0], passed[1] + 1)
            return False
        if passed is not None and passed[1]:
            record.repeated = passed[1]
            record.repeated_over_s = now - passed[0]
        if len(self._seen) >= MAX_TRACKED_TEMPLATES and key not in self._seen:
            self._forget_stalest()
        self._seen[key] = (now, 0)
        return True

    def _forget_stalest(self) -> None:
        by_age = sorted(self._seen, key=lambda key: self._seen[key][0])
        for key in by_age[: len(by_age) // 2]:
            del self._seen[key]


def repeats_note(record: logging.LogRecord) -> str:
    """` (repeated N times in S s)` when the limiter held back repeats of this line, else ``."""
    repeated = getattr(record, "repeated", 0)
    if not repeated:
        return ""
    return f" (repeated {repeated} times in {getattr(record, 'repeated_over_s', 0.0):.0f} s)"


class TextFormatter(logging.Formatter):
    """`time LEVEL logger: message`, with the held-back repeats' count after the message."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        return super().formatMessage(record) + repeats_note(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `ts` (RFC 3339, UTC, milliseconds), `level`, `logger`, `msg` (with the
    held-back repeats' count, also in `repeated`), `exc` (traceback) and `stack` when present."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage() + repeats_note(record),
        }
        repeated = getattr(record, "repeated", 0)
        if repeated:
            line["repeated"] = repeated
        if record.exc_info:
            line["exc"] = record.exc_text or self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(level: str, log_format: str = "text", repeat_interval_s: float = 30.0) -> logging.Handler | None:
    """One stderr handler on the root logger, in `log_format` (`text` or `json`), with repeats held back per
    `repeat_interval_s`; returns it. Like `logging.basicConfig`, it leaves a root logger that already has
    handlers of someone else's alone (a test runner's, a program embedding this one) and returns None."""
    root = logging.getLogger()
    if any(not getattr(existing, INSTALLED_MARK, False) for existing in root.handlers):
        return None
    for existing in list(root.handlers):
        root.removeHandler(existing)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(RepeatLimiter(repeat_interval_s))
    setattr(handler, INSTALLED_MARK, True)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler
