"""docs/architecture.md's "What runs where" names the code as it is: every module it names exists, every
thread name it gives is one the code starts, and every module of the package that starts a thread is in it."""

from __future__ import annotations

import re
from pathlib import Path

import extender

PACKAGE = Path(extender.__file__).parent
SECTION = re.compile(r"## What runs where\n(.*?)\n## ", re.S)
THREAD = re.compile(r"threading\.Thread\([^)]*?name=f?\"([a-z-]+)", re.S)
NOT_SERVING = ("devcluster/", "sim/")
"""Packages whose threads never run in a serving process (the local control plane, the simulator)."""


def section() -> str:
    found = SECTION.search((PACKAGE.parent / "docs" / "architecture.md").read_text())
    assert found, "docs/architecture.md has a section 'What runs where'"
    return found.group(1)


def test_every_module_it_names_exists() -> None:
    named = set(re.findall(r"`((?:api|cli|k8s|loops|state|policy)/[a-z_/]+\.py)`", section()))
    assert named, "the section names modules"
    assert [module for module in sorted(named) if not (PACKAGE / module).is_file()] == []


def test_every_thread_the_serving_code_starts_is_named_there() -> None:
    text = section()
    starting = {
        str(path.relative_to(PACKAGE)): THREAD.findall(path.read_text())
        for path in PACKAGE.rglob("*.py")
        if "threading.Thread(" in path.read_text() and not str(path.relative_to(PACKAGE)).startswith(NOT_SERVING)
    }
    assert starting, "the serving code starts threads"
    unnamed = {module: names for module, names in starting.items() if f"`{module}`" not in text}
    missing = {module: [n for n in names if n and n not in text] for module, names in starting.items()}
    assert unnamed == {} and all(not names for names in missing.values()), (unnamed, missing)
