#!/usr/bin/env bash
# The whole test suite on a fresh machine: Python deps into .venv, the Go-built local control plane and
# Helm (each cached outside the repo, keyed by version), then `helm lint` of the chart, ruff, mypy, the
# import layering, and the unit, contract and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[test] creating .venv"
  "$python" -m venv .venv
fi
echo "[test] installing the package and its test tools"
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[dev,sim]'

if ! command -v chromium >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ] && [ "$(id -u)" = "0" ]; then
    echo "[test] installing Debian's chromium for the browser test"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "[test] no chromium: the browser test will be skipped (apt-get install chromium)"
  fi
fi

echo "[test] building (or reusing) the local control plane"
bash hack/build-control-plane.sh

echo "[test] building (or reusing) Helm, then linting the chart"
helm=$(bash hack/build-helm.sh | tee /dev/stderr | tail -n 1)
"$helm" lint --strict charts/tfjob-extender

echo "[test] ruff, mypy, import layering"
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache

echo "[test] pytest"
# pytest exits 5 when it collected nothing; set -e turns that (and any failure) into a failed run.
.venv/bin/pytest "$@"
