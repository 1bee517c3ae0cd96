"""The log: text and JSON lines, and repeats of a warning held back per interval with their count."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from extender.cli.logs import JsonFormatter, RepeatLimiter, TextFormatter, configure_logging


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def record(
    msg: str, *args: object, level: int = logging.WARNING, name: str = "extender.k8s.informer"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_json_lines_carry_time_level_logger_message_and_the_exception() -> None:
    formatter = JsonFormatter()
    line = json.loads(formatter.format(record("%s: listing again", "pods")))
    assert set(line) == {"ts", "level", "logger", "msg"}
    assert line["ts"].endswith("Z") and line["ts"][10] == "T", "RFC 3339, UTC"
    assert (line["level"], line["logger"], line["msg"]) == ("warning", "extender.k8s.informer", "pods: listing again")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = logging.LogRecord("extender.loops", logging.ERROR, __file__, 1, "tick failed", (), sys.exc_info())
    line = json.loads(formatter.format(failed))
    assert line["level"] == "error" and "RuntimeError: boom" in line["exc"] and "Traceback" in line["exc"]
    assert "\n" not in formatter.format(failed), "one object per line"


def test_a_repeated_warning_passes_once_per_interval_with_the_count_held_back() -> None:
    clock = Clock()
    limiter = RepeatLimiter(30.0, clock)
    assert limiter.filter(record("%s: unreachable", "pods"))
    held = [limiter.filter(record("%s: unreachable", kind)) for kind in ("nodes", "tfjobs", "pods") * 19]
    assert not any(held), "the same template from other watches is a repeat"
    assert limiter.filter(record("lease %s: %s", "x", "y")), "another template passes"
    clock.now += 30.0
    passing = record("%s: unreachable", "nodes")
    assert limiter.filter(passing)
    assert TextFormatter().format(passing).endswith("nodes: unreachable (repeated 57 times in 30 s)")
    assert json.loads(JsonFormatter().format(passing))["repeated"] == 57
    clock.now += 1.0
    assert not limiter.filter(record("%s: unreachable", "pods"))
    clock.now += 60.0
    quiet_again = record("%s: unreachable", "pods")
    assert limiter.filter(quiet_again)
    assert TextFormatter().format(quiet_again).endswith("(repeated 1 times in 61 s)")


def test_info_lines_and_other_loggers_are_never_held_back() -> None:
    limiter = RepeatLimiter(30.0, Clock())
    assert all(limiter.filter(record("reserved %s", "a", level=logging.INFO)) for _ in range(5))
    assert limiter.filter(record("%s failed", "x", name="a"))
    assert limiter.filter(record("%s failed", "x", name="b")), "the same template from another logger"
    assert limiter.filter(record("%s failed", "x", name="a", level=logging.ERROR)), "another level"


def test_the_listeners_access_lines_write_through_the_one_root_handler(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    root.handlers = []
    access = logging.getLogger("extender.api.edge.connection")
    try:
        configure_logging("debug", "json")
        access.debug("%s %s %d", "POST", "/filter", 200)
    finally:
        root.handlers, root.level = saved, level
    assert access.handlers == [] and access.propagate, "no handler of its own"
    line = json.loads(capsys.readouterr().err.splitlines()[-1])
    assert (line["level"], line["logger"], line["msg"]) == ("debug", "extender.api.edge.connection", "POST /filter 200")


def test_configure_logging_leaves_someone_elses_handlers_alone() -> None:
    assert logging.getLogger().handlers, "the test runner's"
    assert configure_logging("info", "json") is None


def test_configure_logging_installs_one_handler_and_replaces_only_its_own() -> None:
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    root.handlers = []
    try:
        handler = configure_logging("warning", "json", 30.0)
        assert handler is not None and root.handlers == [handler]
        assert isinstance(handler.formatter, JsonFormatter) and root.level == logging.WARNING
        again = configure_logging("info", "text")
        assert again is not None and root.handlers == [again] and isinstance(again.formatter, TextFormatter)
    finally:
        root.handlers, root.level = saved, level
