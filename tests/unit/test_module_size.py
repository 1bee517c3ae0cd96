"""Modules stay short enough to read in one sitting: no module of the package is over `MAX_LINES` lines."""

from __future__ import annotations

from pathlib import Path

import extender

PACKAGE = Path(extender.__file__).parent
MAX_LINES = 400


def test_no_module_of_the_package_is_over_the_line_limit() -> None:
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"
