#!/usr/bin/env bash
# The whole test suite on a fresh machine: Python deps into .venv, the Go-built local control plane and
# Helm (each cached outside the repo, keyed by version), the container image (its base cached outside the repo
# too), then `helm lint` of the chart, ruff, mypy, the import layering, and the unit, contract, end-to-end and
# image tests.
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

# Debian packages some tests need: chromium for the browser test; buildah, podman and mmdebstrap to build
# and run the container image. CI (as root) installs the missing ones; elsewhere those tests are skipped.
missing=()
for tool in chromium buildah podman mmdebstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "${CI:-}" = "true" ] && [ "$(id -u)" = "0" ]; then
    echo "[test] installing Debian's ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "[test] without ${missing[*]}, the tests that need them are skipped (apt-get install ${missing[*]})"
  fi
fi

echo "[test] building (or reusing) the local control plane"
bash hack/build-control-plane.sh

echo "[test] building (or reusing) Kueue (for its end-to-end test)"
bash hack/build-kueue.sh

echo "[test] building (or reusing) Helm, then linting the chart"
helm=$(bash hack/build-helm.sh | tee /dev/stderr | tail -n 1)
"$helm" lint --strict charts/tfjob-extender

echo "[test] building (or reusing) promtool (the chart's alert rules are unit-tested with it)"
bash hack/build-promtool.sh

image_tools_present() {
  for tool in buildah podman mmdebstrap; do command -v "$tool" >/dev/null 2>&1 || return 1; done
}
if [ "$(id -u)" = "0" ] && image_tools_present; then
  echo "[test] building (or reusing) the container image"
  bash hack/build-image.sh
fi

echo "[test] ruff, mypy, import layering"
.venv/bin/ruff format --check .
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache

echo "[test] pytest"
# pytest exits 5 when it collected nothing; set -e turns that (and any failure) into a failed run.
.venv/bin/pytest "$@"
