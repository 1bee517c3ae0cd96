#!/usr/bin/env bash
# The main job: install the extender into .venv and serve. With no arguments it serves the example
# cluster offline; any arguments go to `tfjob-extender serve` (e.g. --kubeconfig ~/.kube/config). The verbs
# and the probes answer on 127.0.0.1:8888; the debug routes, the page (/ui), explain and /metrics on the
# observe listener, 127.0.0.1:8890 (arguments given here come after, so --observe-port and the like win).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/pip install --quiet -e .
if [ "$#" -eq 0 ]; then
  set -- --cluster-snapshot examples/cluster.yaml
fi
exec .venv/bin/tfjob-extender serve --observe-port 8890 --observe-debug "$@"
