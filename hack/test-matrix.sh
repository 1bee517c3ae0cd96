#!/usr/bin/env bash
# The end-to-end suite on every supported Kubernetes release, one after the other: each release's control
# plane is built (or reused from the cache, keyed by version) and tests/e2e runs against it, including
# the tests of Kubernetes' own gang API with that release's feature gates and native mode's fallback
# (test_native_gangs_fallback.py: on 1.35 and 1.36 the extender keeps its own barrier; the other native
# mode tests skip there). CI runs the default release only (hack/test.sh); run this before changing the
# supported releases or the extender's use of the API.
#
#   bash hack/test-matrix.sh                      # v1.37.1, v1.36.4 and v1.35.4
#   K8S_VERSIONS=v1.36.4 bash hack/test-matrix.sh -k workload_api
#
# Extra arguments go to pytest. Exits non-zero when any release failed; prints one line per release.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=${K8S_VERSIONS:-v1.37.1 v1.36.4 v1.35.4}
if [ ! -x .venv/bin/pytest ]; then
  "${PYTHON:-python3}" -m venv .venv
  .venv/bin/pip install --quiet -e '.[dev,sim]'
fi

summary=()
failed=0
for version in $versions; do
  echo "[matrix] Kubernetes $version: building (or reusing) the control plane"
  started=$SECONDS
  if K8S_VERSION=$version bash hack/build-control-plane.sh && K8S_VERSION=$version .venv/bin/pytest tests/e2e "$@"; then
    summary+=("$version: passed in $((SECONDS - started))s")
  else
    summary+=("$version: FAILED after $((SECONDS - started))s")
    failed=1
  fi
done
printf '[matrix] %s\n' "${summary[@]}"
exit $failed
