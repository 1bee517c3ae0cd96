#!/usr/bin/env bash
# Builds the container image localhost/tfjob-extender:<version> from the Dockerfile on a machine without a
# Docker daemon or a registry: buildah builds it (chroot isolation) on a Debian bookworm base made here by
# mmdebstrap and imported with podman. The base's root filesystem is cached outside the repository, keyed by
# the suite and the package list (not the date), in ${XDG_CACHE_HOME:-~/.cache}/tfjob-extender/image-base/;
# buildah keeps the build's layers, so a rebuild with unchanged inputs reuses them. The machine's CA bundle
# is mounted into the build for pip, never copied into the image. Prints the build time and the image size.
# Needs root and `apt-get install buildah podman mmdebstrap`. IMAGE=NAME:TAG picks the image name.
set -euo pipefail
cd "$(dirname "$0")/.."

suite=bookworm
mirror=http://deb.debian.org
base_packages=python3,python3-venv,libstdc++6,ca-certificates
sources=(
  "deb $mirror/debian $suite main"
  "deb $mirror/debian $suite-updates main"
  "deb $mirror/debian-security $suite-security main"
)
base_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

for tool in buildah podman mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool is missing (apt-get install buildah podman mmdebstrap)" >&2; exit 1; }
done

version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' extender/__init__.py)
[ -n "$version" ] || { echo "build-image: no __version__ in extender/__init__.py" >&2; exit 1; }
image=${IMAGE:-localhost/tfjob-extender:$version}
source_url=$(git config --get remote.origin.url 2>/dev/null || true)

key=$(printf '%s\n' "$suite" essential "$base_packages" "${sources[@]}" | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-extender/image-base
base_tar=$cache/$suite-$key.tar
base_image=localhost/tfjob-extender-base:$suite-$key

started=$(date +%s.%N)
if [ ! -s "$base_tar" ]; then
  echo "[image] making the $suite base ($base_packages) into $base_tar"
  mkdir -p "$cache"
  mmdebstrap --quiet --variant=essential --format=tar --include="$base_packages" "$suite" "$base_tar.partial" "${sources[@]}" </dev/null
  mv "$base_tar.partial" "$base_tar"
fi
if ! podman image exists "$base_image"; then
  echo "[image] importing $base_tar as $base_image"
  podman import --quiet --change "ENV PATH=$base_path" --change "ENV LANG=C.UTF-8" "$base_tar" "$base_image" >/dev/null
fi

echo "[image] building $image on $base_image"
buildah bud --quiet --isolation chroot --pull=never --layers \
  -v /etc/ssl/certs:/etc/ssl/certs:ro \
  --build-arg BASE="$base_image" --build-arg VERSION="$version" --build-arg SOURCE="$source_url" \
  -f Dockerfile -t "$image" . >/dev/null
finished=$(date +%s.%N)

size=$(podman image inspect --format '{{.Size}}' "$image")
awk -v image="$image" -v started="$started" -v finished="$finished" -v size="$size" \
  'BEGIN { printf "[image] %s built in %.1f s; size %.1f MB\n", image, finished - started, size / 1e6 }'
