#!/usr/bin/env bash
# Builds Kueue's controller manager (`sigs.k8s.io/kueue/cmd/kueue`) from the Go module proxy into a cache
# outside the repo keyed by its version, and copies its CRDs out of the module cache. Optional: only the
# Kueue end-to-end test needs it. Idempotent: a complete cache is reused at once. The last line printed is
# the cache directory (`bin/kueue`, `crds/*.yaml`, `webhooks.yaml`: its webhook configurations as its
# kustomize base declares them, pointing at a Service).
#
# Kueue's go.mod has no local replaces, so `go install module@version` builds it as published.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"

KUEUE_VERSION=${KUEUE_VERSION:-v0.17.0}
CACHE=$(cache_dir TFJOB_E2E_CACHE control-plane "kueue-${KUEUE_VERSION}")
BIN=$CACHE/bin
CRDS=$CACHE/crds

cache_print_if_asked --print-dir "$CACHE" "$@"

complete() {
  [ -x "$BIN/kueue" ] && [ -n "$(ls "$CRDS"/*.yaml 2>/dev/null)" ] && [ -s "$CACHE/webhooks.yaml" ]
}
reuse_cached kueue "$CACHE" complete
require_go "Kueue is built from its Go module"

export GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$BIN" "$CRDS"
started=$SECONDS
echo "[build] kueue ${KUEUE_VERSION} ..."
[ -x "$BIN/kueue" ] || GOBIN="$BIN" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kueue/cmd/kueue@${KUEUE_VERSION}"
module=$(go mod download -json "sigs.k8s.io/kueue@${KUEUE_VERSION}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
cp "$module"/config/components/crd/bases/*.yaml "$CRDS/"
cp "$module"/config/components/webhook/manifests.yaml "$CACHE/webhooks.yaml"
chmod u+w "$CRDS"/*.yaml "$CACHE/webhooks.yaml"
complete || { echo "[build] error: kueue is incomplete in $CACHE" >&2; exit 1; }
echo "[build] kueue ready in $((SECONDS - started))s: $CACHE"
echo "$CACHE"
