#!/usr/bin/env bash
# The live demo: install the extender, build (once) and start a local control plane, run a TFJob workload.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/pip install --quiet -e '.[sim]'
exec .venv/bin/python hack/demo.py "$@"
