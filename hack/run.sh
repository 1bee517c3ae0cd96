#!/usr/bin/env bash
# The main job: install the extender into .venv and serve. With no arguments it serves the example
# cluster offline; any arguments go to `tfjob-extender serve` (e.g. --kubeconfig ~/.kube/config).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/pip install --quiet -e .
if [ "$#" -eq 0 ]; then
  set -- --cluster-snapshot examples/cluster.yaml
fi
exec .venv/bin/tfjob-extender serve "$@"
