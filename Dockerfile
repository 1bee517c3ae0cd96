# tfjob-extender: one process per container (`serve` for the verbs, `loops` for the preemption loop and the
# scaler), each serving its listeners on one event loop, non-root, on a read-only root filesystem.
#
# The build stage installs the hash-locked runtime dependencies (requirements/runtime.txt, wheels only) into a
# virtualenv, builds the package's own wheel with the hash-locked build backend (requirements/build.txt, in a
# virtualenv of its own that stays behind) and installs it without dependencies, then compiles every module to
# bytecode. The runtime stage is the same base with only that virtualenv copied in.
#
# BASE is any image with python3 (3.11) and its venv module: python:3.11-slim (Python in /usr/local/bin), or a
# Debian bookworm root filesystem with python3, python3-venv and libstdc++6 (Python in /usr/bin; numpy's wheels
# need libstdc++), as hack/build-image.sh makes. The default is the python:3.11-slim multi-arch index pinned by
# digest (Python 3.11.15 on Debian trixie, as docker-library/repo-info recorded the tag in August 2026).
#
# Build: bash hack/build-image.sh (here, with buildah), or
#   docker build --build-arg VERSION=$(python3 -c 'import extender; print(extender.__version__)') -t tfjob-extender .
ARG BASE=python:3.11-slim@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff

FROM ${BASE} AS build
ARG VERSION
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY requirements/ ./requirements/
RUN python3 -m venv /opt/build-backend \
 && /opt/build-backend/bin/pip install --quiet --require-hashes --no-deps --only-binary :all: -r requirements/build.txt \
 && python3 -m venv /opt/tfjob-extender \
 && /opt/tfjob-extender/bin/pip install --quiet --require-hashes --no-deps --only-binary :all: -r requirements/runtime.txt
COPY pyproject.toml README.md ./
COPY extender ./extender
# The image's version label must be the package's version: a mismatch fails the build here.
RUN /opt/build-backend/bin/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir /tmp/wheels . \
 && /opt/tfjob-extender/bin/pip install --quiet --no-deps --no-index /tmp/wheels/*.whl \
 && built=$(/opt/tfjob-extender/bin/python -c 'import extender; print(extender.__version__)') \
 && { [ "$built" = "${VERSION}" ] || { echo "VERSION build arg '${VERSION}' is not the package's version '$built'" >&2; exit 1; }; } \
 && /opt/tfjob-extender/bin/pip uninstall --quiet --yes pip setuptools \
 && /opt/tfjob-extender/bin/python -m compileall -q -j 0 -f --invalidation-mode unchecked-hash /opt/tfjob-extender

FROM ${BASE}
ARG VERSION
ARG SOURCE=""
LABEL org.opencontainers.image.title="tfjob-extender" \
      org.opencontainers.image.description="A kube-scheduler HTTP extender for distributed TensorFlow (TFJob) training" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="${SOURCE}"
ENV PATH=/opt/tfjob-extender/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# The standard library too is compiled now where it has no bytecode (python:3.11-slim ships none), so nothing is
# compiled, nor written, at run time. Hash-based bytecode that is never checked against the source: the image
# never changes, and the files carry no timestamps.
RUN python3 -m compileall -q -j 0 --invalidation-mode unchecked-hash "$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"
COPY --from=build /opt/tfjob-extender /opt/tfjob-extender
# A numeric user, so the kubelet can check runAsNonRoot without an /etc/passwd entry.
USER 65532:65532
EXPOSE 8888 8890
ENTRYPOINT ["tfjob-extender"]
CMD ["serve", "--host", "127.0.0.1", "--port", "8888", "--no-loops", "--observe-host", "0.0.0.0", "--observe-port", "8890"]
