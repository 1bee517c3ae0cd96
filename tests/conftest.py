"""Per-suite time limits: a hung unit test fails in seconds, not at the global limit of `pyproject.toml`
(300 s, which the end-to-end, image and browser tests need). A test that sets its own `timeout` keeps it."""

from __future__ import annotations

import pytest

SUITE_TIMEOUT_S = {"unit": 30.0, "contract": 120.0, "fuzz": 120.0}
"""Seconds a test of each suite (the folder under tests/) may take before it fails; the slowest unit test
takes about 2 s alone and under 10 s on a loaded 2-core machine."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.parts
        suite = parts[parts.index("tests") + 1] if "tests" in parts else ""
        if suite in SUITE_TIMEOUT_S and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SUITE_TIMEOUT_S[suite]))
