"""Per-verb extender latency over real HTTP, as kube-scheduler calls it: one request at a time.

Writes a synthetic cluster (N nodes, running pods, a pending TFJob gang) to a snapshot file, starts
`tfjob-extender serve --cluster-snapshot` as a subprocess on 127.0.0.1, and times serial, keep-alive
POSTs with `nodeCacheCapable` payloads (node names) at 100, 500 and 5000 candidate nodes:
- filter of a plain pod (resource fit on every candidate);
- filter of a gang member whose plan is reserved (steering);
- filter of a gang that does not fit (answered from the failed-plan memo after the first call);
- prioritize of a TFJob worker (co-location and idleness on every candidate).
Prints p50 / p99 / max in milliseconds per case, twice: the HTTP round trip, and the in-process cost of
the same call (decode → snapshot → policy → encode, i.e. `extender.api.verbs.answer`), which is what
the extender's code controls. A bare ASGI app answering a fixed body over the same HTTP stack is timed
first: the floor that the machine and the HTTP stack alone impose on every round trip.
Targets: filter p99 ≤ 1 ms, prioritize ≤ 1.5 ms at 500 candidates.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.api.app import make_service
from extender.api.verbs import Service, answer
from extender.config import Settings
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods

CANDIDATE_COUNTS = (100, 500, 5000)
WARMUP_CALLS = 200
MEASURED_CALLS = 2000


def synthetic_cluster(nodes: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [make_node(f"node-{i:05d}", cpu="32", memory="128Gi", gpu=4) for i in range(nodes)]
    objects += [
        make_pod(f"busy-{i}", cpu="8", memory="16Gi", node=f"node-{i:05d}", phase="Running") for i in range(0, nodes, 2)
    ]
    objects += tfjob_pods("mnist", ps=1, workers=8, cpu="4", memory="8Gi")
    objects += [make_podgroup("mnist", min_member=9), make_tfjob("mnist", workers=8)]
    huge = [
        *tfjob_pods("huge", ps=0, workers=64, cpu="64", memory="8Gi"),
        make_podgroup("huge", min_member=64),
        make_tfjob("huge", ps=0, workers=64),
    ]
    return objects + [submitted_now(obj) for obj in huge]


def submitted_now(obj: dict[str, Any]) -> dict[str, Any]:
    """The object created at the benchmark's start: the gang that cannot fit stays below the starvation
    limit for the whole run, so it holds no capacity back and the steered gang stays admitted."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {**obj, "metadata": {**obj["metadata"], "creationTimestamp": stamp}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(snapshot: Path, port: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "extender",
        "serve",
        "--port",
        str(port),
        "--cluster-snapshot",
        str(snapshot),
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the extender did not become ready")


def measure(client: http.client.HTTPConnection, verb: str, body: bytes, calls: int) -> list[float]:
    """Serial round trips on one keep-alive connection (http.client: the leanest Python client)."""
    timings = []
    headers = {"Content-Type": "application/json"}
    for _ in range(calls):
        started = time.perf_counter()
        client.request("POST", f"/{verb}", body=body, headers=headers)
        response = client.getresponse()
        content = response.read()
        timings.append(time.perf_counter() - started)
        if response.status != 200 or b'"Error":"t' in content:
            raise SystemExit(f"{verb} failed: {content[:300]!r}")
    return timings


def report(case: str, candidates: int, http: list[float], local: list[float]) -> None:
    def stats(timings: list[float]) -> str:
        ordered = sorted(timings)
        p50 = statistics.median(ordered) * 1000
        p99 = ordered[int(len(ordered) * 0.99) - 1] * 1000
        return f"{p50:>8.3f} {p99:>8.3f} {ordered[-1] * 1000:>8.3f}"

    print(f"{case:<30} {candidates:>6} | {stats(http)} | {stats(local)}", flush=True)


def measure_in_process(service: Service, verb: str, body: bytes, calls: int) -> list[float]:
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        answer(service, verb, body)
        timings.append(time.perf_counter() - started)
    return timings


def bare_app_floor(calls: int) -> list[float]:
    """Round trips to a bare ASGI app on the same server stack (uvicorn, httptools, uvloop)."""
    port = free_port()
    code = (
        "import uvicorn\n"
        "async def app(scope, receive, send):\n"
        "    if scope['type'] != 'http':\n        return\n"
        "    while (await receive()).get('more_body'):\n        pass\n"
        "    await send({'type': 'http.response.start', 'status': 200, 'headers': []})\n"
        "    await send({'type': 'http.response.body', 'body': b'[]'})\n"
        f"uvicorn.run(app, port={port}, http='httptools', loop='uvloop', log_level='warning')\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(1.5)
        client = http.client.HTTPConnection("127.0.0.1", port)
        body = orjson.dumps({"Pod": {}, "NodeNames": [f"node-{i:05d}" for i in range(500)]})
        measure(client, "filter", body, WARMUP_CALLS)
        timings = measure(client, "filter", body, calls)
        client.close()
        return timings
    finally:
        server.terminate()
        server.wait(timeout=10)


def run(calls: int) -> None:
    nodes = max(CANDIDATE_COUNTS)
    with tempfile.TemporaryDirectory() as workdir:
        snapshot = Path(workdir) / "cluster.yaml"
        snapshot.write_text(yaml.safe_dump_all(synthetic_cluster(nodes)))
        state = ClusterState()
        load_snapshot_file(state, snapshot)
        service = make_service(Settings(), state, time.time)
        http_columns = f"{'HTTP p50':>8} {'p99':>8} {'max':>8}"
        local_columns = f"{'local p50':>8} {'p99':>8} {'max':>8}"
        print(f"{'case (ms)':<30} {'nodes':>6} | {http_columns} | {local_columns}")
        floor = bare_app_floor(calls)
        report("bare ASGI app (floor)", 500, floor, [0.0])
        port = free_port()
        server = start_server(snapshot, port)
        try:
            client = http.client.HTTPConnection("127.0.0.1", port)
            try:
                for count in CANDIDATE_COUNTS:
                    names = [f"node-{i:05d}" for i in range(count)]
                    cases = {
                        "filter plain pod (fit)": ("filter", make_pod("plain", cpu="2", memory="4Gi")),
                        "filter gang member (steered)": (
                            "filter",
                            tfjob_pods("mnist", workers=8, cpu="4", memory="8Gi")[3],
                        ),
                        "filter gang that cannot fit": (
                            "filter",
                            tfjob_pods("huge", ps=0, workers=64, cpu="64", memory="8Gi")[0],
                        ),
                        "prioritize TFJob worker": (
                            "prioritize",
                            tfjob_pods("mnist", workers=8, cpu="4", memory="8Gi")[5],
                        ),
                    }
                    for case, (verb, pod) in cases.items():
                        body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
                        measure(client, verb, body, WARMUP_CALLS)
                        measure_in_process(service, verb, body, WARMUP_CALLS)
                        local = measure_in_process(service, verb, body, calls)
                        report(case, count, measure(client, verb, body, calls), local)
            finally:
                client.close()
        finally:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=MEASURED_CALLS, help="measured calls per case")
    run(parser.parse_args().calls)


if __name__ == "__main__":
    main()
