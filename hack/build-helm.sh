#!/usr/bin/env bash
# Builds Helm, which renders and lints charts/tfjob-extender, from its Go module into a cache outside the repo
# keyed by the version, and reuses that binary at once when it is there. The last line printed is the path
# of the binary.
#
# The ldflags are those of Helm's own Makefile: the release version (`helm version`), and for Helm 3 the
# Kubernetes version its client-go module stands for (client-go v0.X.Y is Kubernetes 1.X), which `helm lint`
# checks deprecated APIs against and `helm template` assumes when given no --kube-version (Helm 4 reads it
# from its build information, and the linker ignores the two flags there).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"

# v3.22.0 is what the chart is tested with. HELM_VERSION=v4.x.y builds helm.sh/helm/v4 the same way (not
# tested here).
HELM_VERSION=${HELM_VERSION:-v3.22.0}
CACHE=$(cache_dir TFJOB_TOOLS_CACHE tools "helm-${HELM_VERSION}")
HELM=$CACHE/helm

cache_print_if_asked --print-path "$HELM" "$@"
reuse_cached helm "$HELM" test -x "$HELM"
require_go "helm is built from its Go module"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
major=${HELM_VERSION#v}
major=${major%%.*}
module="helm.sh/helm/v${major}"
started=$SECONDS
echo "[build] helm ${HELM_VERSION} ..."
gomod=$(go mod download -json "${module}@${HELM_VERSION}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
client_go=$(awk '$1=="k8s.io/client-go" {print $2; exit}' "$gomod")
k8s_minor=$(echo "${client_go#v0.}" | cut -d. -f1)
ldflags="-s -w -X ${module}/internal/version.version=${HELM_VERSION}"
for package in pkg/lint/rules pkg/chartutil; do
  ldflags="$ldflags -X ${module}/${package}.k8sVersionMajor=1 -X ${module}/${package}.k8sVersionMinor=${k8s_minor}"
done
# Built into a temporary directory beside the cache and moved into place, so an interrupted build never
# leaves a binary that the check above would take for a finished one.
mkdir -p "$CACHE"
staging=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
GOBIN="$staging" GOFLAGS= go install -trimpath -ldflags "$ldflags" "${module}/cmd/helm@${HELM_VERSION}"
"$staging/helm" version --short >/dev/null
mv "$staging/helm" "$HELM"
echo "[build] helm ${HELM_VERSION} done in $((SECONDS - started))s"
echo "$HELM"
