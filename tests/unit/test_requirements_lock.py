"""The hash-locked requirement files the image installs from agree with pyproject.toml, checked offline:
every runtime dependency pyproject names is pinned at a version its specifier allows, nothing named only by
the `dev` or `sim` extras is, every pin is exact and carries at least one hash, and the build lock satisfies
`[build-system] requires`. Transitive pins are uv's business (`hack/lock-requirements.sh`) and not re-resolved.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = REPO / "requirements" / "runtime.txt"
BUILD_LOCK = REPO / "requirements" / "build.txt"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>\S+)(?:\s*;\s*(?P<marker>[^\\]+?))?$")
HASH = re.compile(r"^--hash=sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class LockedPin:
    version: str
    hashes: tuple[str, ...]


def read_lock(path: Path) -> dict[str, LockedPin]:
    """A pip requirements file of `name==version [; marker] --hash=...` entries, by canonical name."""
    entries = " ".join(line for line in path.read_text().replace("\\\n", " ").splitlines() if not line.startswith("#"))
    pins: dict[str, LockedPin] = {}
    for entry in re.split(r"\s+(?=[A-Za-z0-9][A-Za-z0-9._-]*==)", entries.strip()):
        head, *options = re.split(r"\s+(?=--)", entry.strip())
        match = PIN.match(head.strip())
        assert match, f"{path.name}: not an exact pin: {head!r}"
        assert options and all(HASH.match(option) for option in options), f"{path.name}: {head} needs sha256 hashes"
        pins[canonicalize_name(match["name"])] = LockedPin(match["version"], tuple(options))
    return pins


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def test_every_runtime_dependency_is_pinned_within_its_specifier(pyproject: dict[str, Any]) -> None:
    locked = read_lock(RUNTIME_LOCK)
    for dependency in map(Requirement, pyproject["project"]["dependencies"]):
        name = canonicalize_name(dependency.name)
        assert name in locked, f"{dependency} is not in {RUNTIME_LOCK.name}: run hack/lock-requirements.sh"
        assert dependency.specifier.contains(locked[name].version, prereleases=True), (
            f"{RUNTIME_LOCK.name} pins {name}=={locked[name].version}, outside {dependency}"
        )


def test_no_extra_only_dependency_is_locked(pyproject: dict[str, Any]) -> None:
    locked = read_lock(RUNTIME_LOCK)
    runtime = {canonicalize_name(Requirement(d).name) for d in pyproject["project"]["dependencies"]}
    for extra in ("dev", "sim"):
        for dependency in map(Requirement, pyproject["project"]["optional-dependencies"][extra]):
            name = canonicalize_name(dependency.name)
            assert name in runtime or name not in locked, f"{name} (extra {extra!r}) is in {RUNTIME_LOCK.name}"


def test_build_lock_satisfies_the_build_system(pyproject: dict[str, Any]) -> None:
    locked = read_lock(BUILD_LOCK)
    for requirement in map(Requirement, pyproject["build-system"]["requires"]):
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not in {BUILD_LOCK.name}: run hack/lock-requirements.sh"
        assert requirement.specifier.contains(locked[name].version, prereleases=True)


def test_the_lock_reader_rejects_a_loose_pin(tmp_path: Path) -> None:
    loose = tmp_path / "loose.txt"
    loose.write_text("numpy>=1.26 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    with pytest.raises(AssertionError, match="not an exact pin"):
        read_lock(loose)
