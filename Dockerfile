# tfjob-extender: one process, one uvicorn worker, non-root.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
USER 65532:65532
EXPOSE 8888
ENTRYPOINT ["tfjob-extender"]
CMD ["serve", "--host", "127.0.0.1", "--port", "8888"]
