# tfjob-extender: one process per container (`serve` for the verbs, `loops` for the preemption loop and the
# scaler), one uvicorn worker each (the CLI runs exactly one), non-root.
# Build: docker build -t tfjob-extender:0.1.0 .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
# Runtime dependencies only (no [dev] extra); bytecode is compiled here, since the root filesystem is
# read-only at run time.
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=build /install /usr/local
# A numeric user, so the kubelet can check runAsNonRoot without an /etc/passwd entry.
USER 65532:65532
EXPOSE 8888 8890
ENTRYPOINT ["tfjob-extender"]
CMD ["serve", "--host", "127.0.0.1", "--port", "8888", "--no-loops", "--observe-host", "0.0.0.0", "--observe-port", "8890"]
