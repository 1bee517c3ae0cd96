#!/usr/bin/env bash
# Builds the local control plane used by the end-to-end tests and the demo — etcd, kube-apiserver,
# kube-scheduler, kube-controller-manager, kubectl, kwok and training-operator — from Go modules, into a cache outside the repo
# keyed by the versions, and copies training-operator's TFJob CRD out of the module cache. Idempotent:
# a complete cache is reused at once. The last line printed is the cache directory.
#
# Kubernetes' own module cannot be `go install`ed (its go.mod replaces every staging module with a
# local path), so it is built from a wrapper module that requires k8s.io/kubernetes and points each
# staging module at its published v0.X.Y tag; etcd's server module is built the same way.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/cache.sh"

# Supported: v1.37.1 (the default), v1.36.4 and v1.35.4, the current patches whose k8s.io/kubernetes module
# and every staging module (v0.37.1, v0.36.4, v0.35.4) the Go module proxy serves; hack/test-matrix.sh runs
# the e2e suite on each. Any other version can be asked for; it is built the same way but not tested.
K8S_VERSION=${K8S_VERSION:-v1.37.1}
# etcd: the version each Kubernetes release itself pins (build/dependencies.yaml, "etcd"); other minors
# fall back to the newest v3.6 patch on the proxy.
case "$K8S_VERSION" in
  v1.37.*) default_etcd=v3.7.0 ;;
  v1.36.*) default_etcd=v3.6.8 ;;
  v1.35.*) default_etcd=v3.6.6 ;;
  *) default_etcd=v3.6.16 ;;
esac
ETCD_VERSION=${ETCD_VERSION:-$default_etcd}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}   # the newest kwok release; it speaks only core/v1 and coordination/v1
TO_VERSION=${TO_VERSION:-v1.9.4}
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_to-${TO_VERSION}"
CACHE=$(cache_dir TFJOB_E2E_CACHE control-plane "$KEY")
BIN=$CACHE/bin
CRDS=$CACHE/crds

cache_print_if_asked --print-dir "$CACHE" "$@"

complete() {
  for f in etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok training-operator.v1; do
    [ -x "$BIN/$f" ] || return 1
  done
  [ -s "$CRDS/tfjobs.yaml" ]
}
reuse_cached "control plane" "$CACHE" complete
require_go "the local control plane is built from Go modules"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
mkdir -p "$BIN" "$CRDS"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
step() { echo "[build] $*"; }
timed() {
  local name=$1; shift
  local started=$SECONDS
  step "$name ..."
  "$@"
  step "$name done in $((SECONDS - started))s"
}
module_dir() { go mod download -json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'; }

build_kubernetes() {
  mkdir -p "$WORK/k8s" && cd "$WORK/k8s"
  go mod init local.test/k8s-bins >/dev/null 2>&1
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  go mod edit -go="$(awk '$1=="go"{print $2; exit}' "$gomod")"
  local staging="v0.${K8S_VERSION#v1.}"
  for m in $(awk '$2=="=>" && $3 ~ /^\.\/staging\// {print $1}' "$gomod"); do
    go mod edit -replace="${m}=${m}@${staging}"
  done
  go mod edit -require="k8s.io/kubernetes@${K8S_VERSION}"
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" "k8s.io/kubernetes/cmd/kube-scheduler@${K8S_VERSION}" \
    "k8s.io/kubernetes/cmd/kube-controller-manager@${K8S_VERSION}" "k8s.io/kubernetes/cmd/kubectl@${K8S_VERSION}"
  local minor ldflags="-s -w"
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  for kv in "gitVersion=${K8S_VERSION}" gitMajor=1 "gitMinor=${minor}" gitTreeState=clean; do
    ldflags="$ldflags -X k8s.io/component-base/version.${kv} -X k8s.io/client-go/pkg/version.${kv}"
  done
  go build -trimpath -ldflags "$ldflags" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
}

build_etcd() {
  mkdir -p "$WORK/etcd" && cd "$WORK/etcd"
  go mod init local.test/etcd-bin >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
}

install_module() { GOBIN="$BIN" GOFLAGS= go install -trimpath -ldflags "-s -w" "$1"; }

copy_crds() {
  cp "$(module_dir "github.com/kubeflow/training-operator@${TO_VERSION}")/manifests/base/crds/kubeflow.org_tfjobs.yaml" \
    "$CRDS/tfjobs.yaml"
  chmod u+w "$CRDS"/*.yaml
}

total=$SECONDS
[ -x "$BIN/etcd" ] || (timed "etcd ${ETCD_VERSION}" build_etcd)
[ -x "$BIN/kwok" ] || (timed "kwok ${KWOK_VERSION}" install_module "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}")
[ -x "$BIN/training-operator.v1" ] || (timed "training-operator ${TO_VERSION}" install_module \
  "github.com/kubeflow/training-operator/cmd/training-operator.v1@${TO_VERSION}")
[ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-scheduler" ] && [ -x "$BIN/kube-controller-manager" ] && \
  [ -x "$BIN/kubectl" ] || (timed "kube-apiserver, kube-scheduler, kube-controller-manager, kubectl ${K8S_VERSION}" build_kubernetes)
[ -s "$CRDS/tfjobs.yaml" ] || (timed "TFJob CRD" copy_crds)
complete || { echo "[build] error: the control plane is incomplete in $CACHE" >&2; exit 1; }
step "control plane ready in $((SECONDS - total))s: $CACHE"
echo "$CACHE"
