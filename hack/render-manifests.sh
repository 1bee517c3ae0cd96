#!/usr/bin/env bash
# Writes manifests/: the chart charts/tfjob-extender rendered with its default values for release
# tfjob-extender in namespace tfjob-system, for people who install with kubectl rather than Helm.
#
#   manifests/              the app: `kubectl apply -k manifests/` (with namespace.yaml)
#   manifests/crds/         the CRDs alone: `kubectl apply -k manifests/crds/`, so that
#                           `kubectl delete -k manifests/` never deletes a CRD (nor every PodGroup with it)
#   manifests/install/      one file per supported Kubernetes minor, the namespace, CRDs and app together
#                           (kube-scheduler at that minor's tested patch), for
#                           `kubectl apply --server-side -f manifests/install/tfjob-extender-<version>-k8s-<minor>.yaml`
#
# Every file here but README.md is written by this script; tests/unit/chart/test_rendered_manifests.py renders
# again and fails if they differ. An optional argument writes to another directory instead (the test does).
set -euo pipefail
cd "$(dirname "$0")/.."

RELEASE=tfjob-extender
NAMESPACE=tfjob-system
# The Kubernetes release the rendering assumes: kube-scheduler's image tag follows it.
KUBE_VERSION=v1.37.1
CHART=charts/tfjob-extender
OUT=${1:-manifests}

helm=$(bash hack/build-helm.sh | tail -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$helm" template "$RELEASE" "$CHART" --namespace "$NAMESPACE" --kube-version "$KUBE_VERSION" --output-dir "$work" >/dev/null
rendered=$work/$(basename "$CHART")/templates

mkdir -p "$OUT/crds" "$OUT/install"
find "$OUT" -maxdepth 2 \( -name '*.yaml' -o -name '*.yml' \) -delete

header="# Rendered from $CHART by hack/render-manifests.sh (release $RELEASE, namespace
# $NAMESPACE, default values, Kubernetes $KUBE_VERSION): change the chart and render again, never this file."
copy() {
  { echo "$header"; cat "$1"; } >"$2"
}

crds=()
for path in "$rendered"/crds/*.yaml; do
  name=$(basename "$path")
  copy "$path" "$OUT/crds/$name"
  crds+=("$name")
done
app=()
for path in "$rendered"/*.yaml; do
  name=$(basename "$path")
  copy "$path" "$OUT/$name"
  app+=("$name")
done

cat >"$OUT/namespace.yaml" <<EOF
$header
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
EOF

{
  echo "$header"
  echo "# The app without its CRDs (those are crds/, applied on their own): deleting this kustomization never"
  echo "# deletes a CRD. No \`namespace:\` here: the ClusterRoles are cluster-scoped and one RoleBinding belongs in"
  echo "# kube-system; every namespaced object names its namespace itself."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - namespace.yaml"
  for name in "${app[@]}"; do echo "  - $name"; done
} >"$OUT/kustomization.yaml"

{
  echo "$header"
  echo "# The CRDs the app needs, applied on their own before it: \`kubectl apply -k manifests/crds/\`."
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  for name in "${crds[@]}"; do echo "  - $name"; done
} >"$OUT/crds/kustomization.yaml"

# One file per supported minor: the chart's kubeVersion range, each minor at its tested patch
# (kubeScheduler.testedReleases).
version=$(sed -n 's/^version: //p' "$CHART/Chart.yaml")
minors=$(sed -n 's/^    "\(1\.[0-9]*\)": v.*/\1/p' "$CHART/values.yaml")
for minor in $minors; do
  file="$OUT/install/tfjob-extender-$version-k8s-$minor.yaml"
  {
    echo "# Rendered from $CHART by hack/render-manifests.sh (release $RELEASE, namespace $NAMESPACE,"
    echo "# default values, Kubernetes $minor): change the chart and render again, never this file. Install with"
    echo "#   kubectl apply --server-side -f $(basename "$file")"
    echo "---"
    tail -n +3 "$OUT/namespace.yaml"
    "$helm" template "$RELEASE" "$CHART" --namespace "$NAMESPACE" --kube-version "$minor" --include-crds --skip-tests
  } >"$file"
done

echo "[render] $OUT: ${#app[@]} app files, ${#crds[@]} CRDs, one-file installs for $(echo $minors)"
