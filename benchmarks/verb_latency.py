"""Per-verb extender latency over real HTTP, as kube-scheduler calls it: one request at a time.

Writes a synthetic cluster of N nodes to a snapshot file and starts the extender on it as a subprocess
on 127.0.0.1 (the same service `serve --cluster-snapshot` builds), then times serial, keep-alive POSTs
with `nodeCacheCapable` payloads (node names) at 100, 500 and 5000 candidate nodes:
- filter of a plain pod (resource fit on every candidate);
- filter of a gang member whose plan is reserved (steering);
- filter of a gang that does not fit (answered from the failed-plan memo after the first call);
- prioritize of a TFJob worker (co-location and idleness on every candidate).

The cluster: even nodes half busy with plain pods; a quarter of the nodes full of low-priority elastic
TFJobs (pool `b`); a quarter running high-priority elastic TFJobs with room to grow (pool `a`); a gang of
32 × 4 CPU that may only use pool `b`, so it waits for job-level preemption; and the gangs of the cases.
In the server a churn thread binds and unbinds a filler pod `--churn-per-s` times a second (watch events
that change the model, as a live cluster does). Modes, each printed as a table:
- quiet: the verbs alone (with the churn);
- polled (`--debug-readers`): the verbs while another client reads the whole `/debug/state` dump again
  and again on its own connection to the observe listener;
- busy (`--busy`): the preemption loop and the scaler also run, in shadow mode (they plan every tick
  and record what they would do, never act), ticking every `--loop-interval-s`, so every tick plans
  afresh on a model the churn keeps changing: first in the server's process (`serve` with its loops),
  then in a process of their own on their own copy of the model, with its own churn (as the Deployment
  runs them: `tfjob-extender loops` beside `serve --no-loops`).
- observe attacks (`--observe-attacks`, alone): the real `tfjob-extender serve` on the snapshot, its observe
  listener beside the verbs (no churn: nothing is injected into that process); the verbs at
  `--attack-candidates` candidates quiet, then under each attack of the observe port the listeners are
  bounded against (`benchmarks/attackers.py`): 1. small header lines without end, connection after
  connection; 2. one header line that never ends, connection after connection; 3. 512 idle connections
  and 128 sending a head one byte a second, each replaced once the server closes it. Each attacker runs
  at full rate in a process of its own, niced by 10: it sends pre-built 64 KiB chunks as fast as the
  server takes them (or waits on a selector), so its own work is syscalls, and the nice level makes it
  yield the 2 shared cores to the server and the measuring client, as an attacker on another machine
  would. Prints each case's p99 quiet and under each attack, the difference and the target.
Each case is measured for `--seconds`. Prints p50 / p99 / max milliseconds: the HTTP round trip, and in
quiet mode also the in-process cost of the same call (decode → snapshot → policy → encode, i.e.
`extender.api.verbs.answer`). A bare ASGI app answering a fixed body on uvicorn (httptools, uvloop) is
timed first: the floor the machine and an HTTP stack alone impose on every round trip. The server is what
`serve --observe-port P --observe-debug` runs (`extender.cli.runtime`): the verb listener
(`extender.api.edge`) that is timed, and the observe listener the `/debug/state` reader polls;
`--compare-uvicorn` measures the quiet mode again with a minimal ASGI app around the same verbs
(`verbs.answer`, and `/readyz`) on plain uvicorn and prints the ratios of its p50 and p99 to the listener's
(uvicorn comes with the `dev` extra).
Targets: at 500 candidates filter and prioritize p50 ≤ 0.35 ms, p99 ≤ 0.7 ms; at 5000, p99 ≤ 3 ms;
busy and polled p99 ≤ 1.5 × quiet p99; under each observe-side attack p99 ≤ quiet p99 + 1 ms.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import os
import random
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.listener_attacks import ATTACKER_NICENESS, Attack, attacker_process, outcome_of
from benchmarks.served_extender import served_extender
from extender.api.app import make_service
from extender.api.verbs import HANDLERS, Service, answer
from extender.config import AuthSettings, Settings
from extender.devcluster.processes import free_port
from extender.state.kinds import Kind
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import (
    make_node,
    make_pod,
    make_podgroup,
    make_sized_tfjob,
    make_tfjob,
    running_job_pods,
    tfjob_pods,
)

if TYPE_CHECKING:
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop


CANDIDATE_COUNTS = (100, 500, 5000)
WARMUP_CALLS = 200
CHURN_NODES = 64
"""The filler pod of the churn moves between this many nodes."""
OBSERVE_ATTACKS = (
    Attack("1", "small headers without end", "header-flood", "observe", ("--budget-mib", "0")),
    Attack("2", "an ever-growing header line", "growing-header-line", "observe"),
    Attack("3", "idle and one-byte-a-second", "slow-clients", "observe", ("--idle", "512", "--slow", "128")),
)
ATTACK_UNDER_WAY_S = 1.0
"""Seconds an attack runs before the verbs are measured under it."""
ATTACK_TARGET_MS = 1.0
"""Largest rise of a verb's p99 under an observe-side attack."""


def synthetic_cluster(nodes: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:05d}"
        pool = {1: "b", 3: "a"}.get(i % 4)
        objects.append(make_node(name, cpu="32", memory="128Gi", gpu=4, labels={"pool": pool} if pool else None))
        if i % 2 == 0:
            objects.append(make_pod(f"busy-{i}", cpu="8", memory="16Gi", node=name, phase="Running"))
        elif pool == "b":
            objects += elastic_job(f"full-{i}", node=name, workers=7, priority=0)
        else:
            objects += elastic_job(f"grow-{i}", node=name, workers=3, priority=2000)
    objects.append(make_pod("plain-seen", cpu="2", memory="4Gi"))
    objects += tfjob_pods("mnist", ps=1, workers=8, cpu="4", memory="8Gi")
    objects += [make_podgroup("mnist", min_member=9), make_tfjob("mnist", workers=8)]
    huge = [
        *tfjob_pods("huge", ps=0, workers=64, cpu="64", memory="8Gi"),
        make_podgroup("huge", min_member=64),
        make_tfjob("huge", ps=0, workers=64),
    ]
    urgent = [
        make_pod(f"urgent-worker-{i}", job="urgent", role="worker", index=i, group="urgent", cpu="4", priority=1000)
        for i in range(32)
    ]
    for pod in urgent:
        pod["spec"]["nodeSelector"] = {"pool": "b"}
    urgent += [make_podgroup("urgent", min_member=32), make_sized_tfjob("urgent", workers=32, cpu="4")]
    return objects + [submitted_now(obj) for obj in (*huge, *urgent)]


def elastic_job(name: str, *, node: str, workers: int, priority: int) -> list[dict[str, Any]]:
    pods = running_job_pods(name, node=node, workers=workers, cpu="4", memory="16Gi")
    for pod in pods:
        pod["spec"]["priority"] = priority
    job = make_sized_tfjob(name, workers=workers, cpu="4", memory="16Gi", min_workers=2, max_workers=7)
    return [*pods, make_podgroup(name, min_member=3), job]


def submitted_now(obj: dict[str, Any]) -> dict[str, Any]:
    """The object created at the benchmark's start: the gangs that cannot fit stay below the starvation
    limit for the whole run, so they hold no capacity back and the steered gang stays admitted."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {**obj, "metadata": {**obj["metadata"], "creationTimestamp": stamp}}


def this_script(*args: str, stdout: int | None = None) -> subprocess.Popen[str]:
    """This benchmark run again as a child process, in one of its hidden roles."""
    command = [sys.executable, __file__, *args]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    return subprocess.Popen(command, env=env, stdout=stdout, text=True)


def start_server(
    snapshot: Path,
    port: int,
    observe_port: int,
    *,
    loops: bool,
    churn: float,
    interval: float,
    kind: str = "edge",
    tls_dir: Path | None = None,
) -> subprocess.Popen[str]:
    args = ["--serve", str(snapshot), "--port", str(port), "--observe-port", str(observe_port)]
    args += ["--churn-per-s", str(churn), "--server", kind, "--loop-interval-s", str(interval)]
    args += ["--tls-dir", str(tls_dir)] if tls_dir is not None else []
    server = this_script(*args, *(["--loops"] if loops else []))
    ready = f"http://127.0.0.1:{observe_port if kind == 'edge' else port}/readyz"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert server.poll() is None, "the extender exited"
        try:
            if httpx.get(ready).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the extender did not become ready")


def shadow_loops(state: ClusterState, settings: Settings, interval: float) -> list[PreemptionLoop | ScalerLoop]:
    """The preemption loop and the scaler over `state` in shadow mode, ticking every `interval` seconds."""
    from extender.loops.actuator import RecordingActuator
    from extender.loops.preemption import PreemptionLoop
    from extender.loops.scaler import ScalerLoop
    from extender.loops.scaler_settings import ScalerLoopSettings

    preemption = PreemptionLoop(
        state,
        RecordingActuator(),
        settings.policy,
        time.time,
        replace(settings.preemption_loop, interval_s=interval),
        dry_run=True,
    )
    scaler = ScalerLoop(
        state,
        RecordingActuator(),
        settings.policy,
        time.time,
        loop_settings=ScalerLoopSettings(interval_s=interval, replan_unchanged_s=interval),
        dry_run=True,
    )
    return [preemption, scaler]


def loaded_model(snapshot: Path, settings: Settings) -> ClusterState:
    from extender.cli.serving import settle_heap

    sys.setswitchinterval(settings.switch_interval_s)
    state = ClusterState(settings.policy)
    load_snapshot_file(state, snapshot)
    settle_heap()
    return state


def run_loops_alone(snapshot: Path, churn: float, interval: float) -> None:
    """The loops in a process of their own, on their own copy of the model with its own churn, until killed."""
    settings = Settings()
    state = loaded_model(snapshot, settings)
    threading.Thread(target=churn_events, args=(state, churn), daemon=True).start()
    for loop in shadow_loops(state, settings, interval):
        loop.start()
    print("loops ready", flush=True)
    threading.Event().wait()


def serve(
    snapshot: Path,
    port: int,
    observe_port: int,
    *,
    loops: bool,
    churn: float,
    interval: float,
    server: str,
    tls_dir: Path | None = None,
) -> None:
    """The extender as `serve --cluster-snapshot --observe-port --observe-debug` builds it, plus the churn and
    (with `loops`) the preemption loop and the scaler in shadow mode, in this process until SIGTERM: its verb
    listener and observe listener (`server` "edge"), or for comparison a minimal ASGI app around the same
    verbs on plain uvicorn ("uvicorn"). With `tls_dir` the verbs want a client certificate (`mtls_files`), as
    in the chart."""
    from extender.cli.runtime import Part, Runtime
    from extender.cli.serving import Wiring, listeners

    settings = Settings(port=port, observe_port=observe_port, observe_debug=True)
    if tls_dir is not None:
        settings = replace(
            settings,
            auth=AuthSettings(
                tls_cert_file=tls_dir / "tls.crt",
                tls_key_file=tls_dir / "tls.key",
                tls_client_ca_file=tls_dir / "ca.crt",
            ),
        )
    state = loaded_model(snapshot, settings)
    service = make_service(settings, state, time.time)
    churning = threading.Thread(target=churn_events, args=(state, churn), daemon=True)
    parts = [Part("churn", churning.start, lambda: None)]
    for loop in shadow_loops(state, settings, interval) if loops else []:
        parts.append(Part(type(loop).__name__, loop.start, loop.stop))
    if server == "edge":
        sys.exit(Runtime(parts, listeners(settings, Wiring(service), access_log=False)).run())
    import uvicorn

    for part in parts:
        part.start()
    uvicorn.run(
        verbs_asgi_app(service),
        host="127.0.0.1",
        port=port,
        http="httptools",
        loop="uvloop",
        timeout_keep_alive=int(settings.verb_limits.keep_alive_s),
        log_level="warning",
    )


def verbs_asgi_app(service: Service) -> Callable[..., Awaitable[None]]:
    """The verbs (`verbs.answer`, the reply the verb listener sends) and `/readyz` as a bare ASGI app: what
    the verb listener is compared with on uvicorn."""
    from extender.api.readiness import readiness

    async def app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]], send: Any) -> None:
        if scope["type"] != "http":
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        verb = scope["path"].lstrip("/")
        status = 200
        if scope["method"] == "POST" and verb in HANDLERS:
            reply = answer(service, verb, body)
        elif scope["path"] == "/readyz":
            ready, document = readiness(service.state, service.probes)
            status, reply = (200 if ready else 503), orjson.dumps(document)
        else:
            status, reply = 404, orjson.dumps({"error": f"{scope['path']}: not served"})
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(reply))]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    return app


def churn_events(state: ClusterState, per_second: float) -> None:
    """Bind and unbind a filler pod on random nodes: watch events that change the model."""
    rng = random.Random(7)
    bound = False
    while per_second > 0:
        node = f"node-{2 * rng.randrange(CHURN_NODES):05d}"
        pod = make_pod("churn", cpu="1", node=node if not bound else "", phase="Running" if not bound else "Pending")
        state.apply(Kind.POD, "MODIFIED", pod)
        bound = not bound
        time.sleep(1 / per_second)


def measure(client: http.client.HTTPConnection, verb: str, body: bytes, *, calls: int, seconds: float) -> list[float]:
    """Serial round trips on one keep-alive connection (http.client: the leanest Python client), for at
    least `calls` calls or `seconds`, whichever ends later."""
    timings: list[float] = []
    headers = {"Content-Type": "application/json"}
    until = time.monotonic() + seconds
    while len(timings) < calls or time.monotonic() < until:
        started = time.perf_counter()
        client.request("POST", f"/{verb}", body=body, headers=headers)
        response = client.getresponse()
        content = response.read()
        timings.append(time.perf_counter() - started)
        if response.status != 200 or b'"Error":"t' in content:
            raise SystemExit(f"{verb} failed: {content[:300]!r}")
    return timings


def stats(timings: list[float]) -> tuple[float, float, float]:
    ordered = sorted(timings)
    return (
        statistics.median(ordered) * 1000,
        ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000,
        ordered[-1] * 1000,
    )


def row(case: str, candidates: int, http: list[float], local: list[float] | None) -> str:
    p50, p99, top = stats(http)
    line = f"{case:<30} {candidates:>6} | {p50:>8.3f} {p99:>8.3f} {top:>8.3f}"
    if local:
        p50, p99, top = stats(local)
        line += f" | {p50:>8.3f} {p99:>8.3f} {top:>8.3f}"
    return line


def measure_in_process(service: Service, verb: str, body: bytes, calls: int) -> list[float]:
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        answer(service, verb, body)
        timings.append(time.perf_counter() - started)
    return timings


def bare_app_floor(calls: int) -> list[float]:
    """Round trips to a bare ASGI app on uvicorn (httptools, uvloop)."""
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
        measure(client, "filter", body, calls=WARMUP_CALLS, seconds=0)
        timings = measure(client, "filter", body, calls=calls, seconds=0)
        client.close()
        return timings
    finally:
        server.terminate()
        server.wait(timeout=10)


def cases(count: int) -> dict[str, tuple[str, bytes]]:
    names = [f"node-{i:05d}" for i in range(count)]
    pods = {
        "filter plain pod (fit)": ("filter", make_pod("plain", cpu="2", memory="4Gi")),
        "filter plain pod, watched": ("filter", make_pod("plain-seen", cpu="2", memory="4Gi")),
        "filter gang member (steered)": ("filter", tfjob_pods("mnist", workers=8, cpu="4", memory="8Gi")[3]),
        "filter gang that cannot fit": ("filter", tfjob_pods("huge", ps=0, workers=64, cpu="64", memory="8Gi")[0]),
        "prioritize TFJob worker": ("prioritize", tfjob_pods("mnist", workers=8, cpu="4", memory="8Gi")[5]),
    }
    return {
        case: (verb, orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names}))
        for case, (verb, pod) in pods.items()
    }


def poll_debug_state(port: int, stop: threading.Event, polls: list[int]) -> None:
    """Read the whole `/debug/state` dump from the observe listener on `port` again and again on its own
    connection, as a dashboard might."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        while not stop.is_set():
            with client.stream("GET", "/debug/state") as reply:
                for _ in reply.iter_bytes():
                    pass
            polls.append(1)


def start_loops_alone(snapshot: Path, args: argparse.Namespace) -> subprocess.Popen[str]:
    process = this_script(
        "--loops-alone",
        str(snapshot),
        "--churn-per-s",
        str(args.churn_per_s),
        "--loop-interval-s",
        str(args.loop_interval_s),
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "loops ready":
        process.kill()
        raise SystemExit("the loops process did not start")
    return process


def mtls_files(directory: Path) -> ssl.SSLContext:
    """The chart's verbs certificates (as the loops make them, for the Service and 127.0.0.1) written into
    `directory` for the server; the client's context, holding kube-scheduler's client certificate."""
    from extender.k8s.verbs_certificates import renewed

    made = renewed(None, ("tfjob-extender-verbs", "127.0.0.1"), datetime.datetime.now(datetime.UTC), 30)
    assert made is not None
    for name, text in (("ca.crt", made.ca_cert), ("tls.crt", made.cert), ("tls.key", made.key)):
        (directory / name).write_text(text)
    (directory / "client.pem").write_text(made.client_cert + made.client_key)
    context = ssl.create_default_context(cadata=made.ca_cert)
    context.load_cert_chain(str(directory / "client.pem"))
    return context


def run_mode(
    snapshot: Path,
    args: argparse.Namespace,
    *,
    loops: bool,
    service: Service | None,
    poll_debug: bool = False,
    loops_alone: bool = False,
    server_kind: str = "edge",
    tls: tuple[Path, ssl.SSLContext] | None = None,
) -> dict[tuple[str, int], list[float]]:
    port, observe_port = free_port(), free_port()
    server = start_server(
        snapshot,
        port,
        observe_port,
        loops=loops,
        churn=args.churn_per_s,
        interval=args.loop_interval_s,
        kind=server_kind,
        tls_dir=tls[0] if tls is not None else None,
    )
    loops_process = start_loops_alone(snapshot, args) if loops_alone else None
    results: dict[tuple[str, int], list[float]] = {}
    stop_polling = threading.Event()
    polls: list[int] = []
    if poll_debug:
        threading.Thread(target=poll_debug_state, args=(observe_port, stop_polling, polls), daemon=True).start()
    try:
        client = (
            http.client.HTTPConnection("127.0.0.1", port)
            if tls is None
            else http.client.HTTPSConnection("127.0.0.1", port, context=tls[1])
        )
        try:
            for count in CANDIDATE_COUNTS:
                for case, (verb, body) in cases(count).items():
                    measure(client, verb, body, calls=WARMUP_CALLS, seconds=0)
                    local = None
                    if service is not None:
                        measure_in_process(service, verb, body, WARMUP_CALLS)
                        local = measure_in_process(service, verb, body, args.calls)
                    timings = measure(client, verb, body, calls=args.calls, seconds=args.seconds)
                    results[(case, count)] = timings
                    print(row(case, count, timings, local), flush=True)
        finally:
            client.close()
    finally:
        stop_polling.set()
        for process in (server, loops_process):
            if process is not None:
                process.terminate()
                process.wait(timeout=10)
    if poll_debug:
        print(f"(/debug/state read whole {len(polls)} times meanwhile)")
    return results


def run(args: argparse.Namespace) -> None:
    nodes = max(CANDIDATE_COUNTS)
    with tempfile.TemporaryDirectory() as workdir:
        snapshot = Path(workdir) / "cluster.json"
        snapshot.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": synthetic_cluster(nodes)}))
        if args.observe_attacks:
            run_observe_attacks(snapshot, args)
            return
        state = ClusterState()
        load_snapshot_file(state, snapshot)
        service = make_service(Settings(), state, time.time)
        header = f"{'case (ms)':<30} {'nodes':>6} | {'HTTP p50':>8} {'p99':>8} {'max':>8}"
        print(f"quiet (churn {args.churn_per_s:g} events/s, no loops)")
        print(f"{header} | {'local p50':>8} {'p99':>8} {'max':>8}")
        print(row("bare ASGI app (floor)", 500, bare_app_floor(args.calls), None), flush=True)
        quiet = run_mode(snapshot, args, loops=False, service=service)
        if args.compare_uvicorn:
            print(f"\nquiet, the same verbs as a bare ASGI app on uvicorn (httptools, uvloop)\n{header}")
            asgi = run_mode(snapshot, args, loops=False, service=None, server_kind="uvicorn")
            print("plain uvicorn / the verb listener")
            for (case, count), timings in asgi.items():
                ours = stats(quiet[(case, count)])
                theirs = stats(timings)
                print(f"{case:<30} {count:>6} | p50 {theirs[0] / ours[0]:.2f}  p99 {theirs[1] / ours[1]:.2f}")
        if args.mtls:
            print(f"\nquiet, the verbs over mutual TLS as the chart serves them (one connection kept open)\n{header}")
            directory = Path(workdir) / "tls"
            directory.mkdir()
            mutual = run_mode(snapshot, args, loops=False, service=None, tls=(directory, mtls_files(directory)))
            print("mutual TLS / plain HTTP")
            for (case, count), timings in mutual.items():
                plain, secured = stats(quiet[(case, count)]), stats(timings)
                print(f"{case:<30} {count:>6} | p50 {secured[0] / plain[0]:.2f}  p99 {secured[1] / plain[1]:.2f}")
        if args.debug_readers:
            print(f"\nquiet, while a reader polls /debug/state without pause\n{header} | p99 / quiet p99")
            polled = run_mode(snapshot, args, loops=False, service=None, poll_debug=True)
            compare(polled, quiet, "polled")
        if not args.busy:
            return
        print(
            f"\nbusy (churn {args.churn_per_s:g} events/s, shadow preemption loop and scaler every "
            f"{args.loop_interval_s:g} s)"
        )
        print(f"{header} | p99 / quiet p99")
        busy = run_mode(snapshot, args, loops=True, service=None)
        compare(busy, quiet, "busy")
        print(
            f"\nbusy, the loops in a process of their own (churn {args.churn_per_s:g} events/s in each process, "
            f"shadow preemption loop and scaler every {args.loop_interval_s:g} s)"
        )
        print(f"{header} | p99 / quiet p99")
        apart = run_mode(snapshot, args, loops=False, service=None, loops_alone=True)
        compare(apart, quiet, "busy apart")


def run_observe_attacks(snapshot: Path, args: argparse.Namespace) -> None:
    """The verbs' p99 quiet, then under each attack of the observe listener, on the real `serve`."""
    measured = cases(args.attack_candidates)
    with served_extender(snapshot=snapshot) as served:
        client = http.client.HTTPConnection(*served.verb)
        try:
            for verb, body in measured.values():
                measure(client, verb, body, calls=WARMUP_CALLS, seconds=0)
            quiet = {case: p99_ms(client, verb, body, args) for case, (verb, body) in measured.items()}
            print(
                f"verbs under observe-side attacks ({args.attack_candidates} candidates; p99 ms; the attacker niced "
                f"by {ATTACKER_NICENESS}; target ≤ quiet p99 + {ATTACK_TARGET_MS:g} ms)"
            )
            print(f"{'attack':<32} {'case':<30} | {'quiet':>7} {'attacked':>8} {'diff':>7} | {'target':>8}")
            for attack in OBSERVE_ATTACKS:
                attacker = attacker_process(attack, served, seconds=3600)
                time.sleep(ATTACK_UNDER_WAY_S)
                under = {case: p99_ms(client, verb, body, args) for case, (verb, body) in measured.items()}
                outcome = outcome_of(attacker, wait_s=0)
                for case, p99 in under.items():
                    target = quiet[case] + ATTACK_TARGET_MS
                    print(
                        f"{attack.row + ' ' + attack.label:<32} {case:<30} | {quiet[case]:>7.3f} {p99:>8.3f}"
                        f" {p99 - quiet[case]:>+7.3f} | ≤ {target:>6.3f} {'ok' if p99 <= target else 'OVER'}"
                    )
                print(
                    f"{'':<32} (the attacker: {outcome.get('connections')} connections, "
                    f"{outcome.get('mib_sent')} MiB taken, replies {outcome.get('statuses')})",
                    flush=True,
                )
        finally:
            client.close()


def p99_ms(client: http.client.HTTPConnection, verb: str, body: bytes, args: argparse.Namespace) -> float:
    return stats(measure(client, verb, body, calls=args.calls, seconds=args.seconds))[1]


def compare(
    measured: dict[tuple[str, int], list[float]], quiet: dict[tuple[str, int], list[float]], label: str
) -> None:
    for (case, count), timings in measured.items():
        ratio = stats(timings)[1] / stats(quiet[(case, count)])[1]
        print(f"{case:<30} {count:>6} | p99 {label} / quiet = {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per case (at least)")
    parser.add_argument("--seconds", type=float, default=0.0, help="measure each case for at least this long")
    parser.add_argument("--busy", action="store_true", help="also measure with the loops running")
    parser.add_argument(
        "--debug-readers", action="store_true", help="also measure while another client polls /debug/state"
    )
    parser.add_argument("--churn-per-s", type=float, default=20.0, help="model changes a second in the server")
    parser.add_argument("--loop-interval-s", type=float, default=1.0, help="seconds between loop ticks (busy)")
    parser.add_argument(
        "--compare-uvicorn",
        action="store_true",
        help="also measure the quiet mode with the same verbs as a bare ASGI app on uvicorn, and print the ratios",
    )
    parser.add_argument(
        "--observe-attacks",
        action="store_true",
        help="measure only the verbs quiet and under each attack of the observe listener (rows 1-3)",
    )
    parser.add_argument(
        "--attack-candidates", type=int, default=500, choices=CANDIDATE_COUNTS, help="candidates (--observe-attacks)"
    )
    parser.add_argument(
        "--mtls",
        action="store_true",
        help="also measure the quiet mode with the verbs over mutual TLS (as the chart serves them) and print ratios",
    )
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tls-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--server", choices=("edge", "uvicorn"), default="edge", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--observe-port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--loops", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--loops-alone", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loops_alone is not None:
        run_loops_alone(args.loops_alone, args.churn_per_s, args.loop_interval_s)
    elif args.serve is not None:
        serve(
            args.serve,
            args.port,
            args.observe_port,
            loops=args.loops,
            churn=args.churn_per_s,
            interval=args.loop_interval_s,
            server=args.server,
            tls_dir=args.tls_dir,
        )
    else:
        run(args)


if __name__ == "__main__":
    main()
