"""The policy stays pure: every module under `extender.policy` imports only the standard library, numpy and
the policy itself (the import contracts in `pyproject.toml` order its sub-packages and forbid cycles)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import extender.policy

POLICY = Path(extender.policy.__file__).parent
ALLOWED_OUTSIDE = frozenset({"numpy"})


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module)
    return roots


def test_the_policy_imports_only_the_standard_library_numpy_and_itself() -> None:
    outside = {
        f"{path.relative_to(POLICY)}: {name}"
        for path in POLICY.rglob("*.py")
        for name in imported_roots(path)
        if not name.startswith("extender.policy")
        and name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in ALLOWED_OUTSIDE
    }
    assert not outside
