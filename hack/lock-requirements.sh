#!/usr/bin/env bash
# Regenerates requirements/runtime.txt and requirements/build.txt (hash-locked, CPython 3.11, Linux x86_64
# and aarch64) from pyproject.toml. uv and packaging come from a throwaway virtualenv, removed on exit.
# Run it after changing a dependency in pyproject.toml; tests/unit/test_requirements_lock.py checks the lock
# still agrees with it.
set -euo pipefail
cd "$(dirname "$0")/.."

uv_version=0.13.8
packaging_version=26.4
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT

python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install --quiet --disable-pip-version-check "uv==$uv_version" "packaging==$packaging_version"
"$tools/venv/bin/python" hack/lock_requirements.py --uv "$tools/venv/bin/uv"
