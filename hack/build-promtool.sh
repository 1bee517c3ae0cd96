#!/usr/bin/env bash
# Builds promtool, which checks and unit-tests the chart's alert rules (`promtool test rules`), from
# Prometheus's Go module into a cache outside the repo keyed by the version, and reuses that binary at once
# when it is there. The last line printed is the path of the binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"

# Prometheus 3.16's module (its Go module versions are v0.3XX.Y for Prometheus 3.XX.Y).
PROMTOOL_VERSION=${PROMTOOL_VERSION:-v0.316.0}
CACHE=$(cache_dir TFJOB_TOOLS_CACHE tools "promtool-${PROMTOOL_VERSION}")
PROMTOOL=$CACHE/promtool

cache_print_if_asked --print-path "$PROMTOOL" "$@"
reuse_cached promtool "$PROMTOOL" test -x "$PROMTOOL"
require_go "promtool is built from Prometheus's Go module"

export GOTOOLCHAIN=local CGO_ENABLED=0
started=$SECONDS
echo "[build] promtool ${PROMTOOL_VERSION} ..."
# Built into a temporary directory beside the cache and moved into place, so an interrupted build never
# leaves a binary that the check above would take for a finished one.
mkdir -p "$CACHE"
staging=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
GOBIN="$staging" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" \
  "github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_VERSION}"
"$staging/promtool" --version >/dev/null
mv "$staging/promtool" "$PROMTOOL"
echo "[build] promtool ${PROMTOOL_VERSION} done in $((SECONDS - started))s"
echo "$PROMTOOL"
