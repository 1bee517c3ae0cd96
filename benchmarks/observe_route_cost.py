"""What one request to each observe route costs the process that answers the verbs, measured in process.

Builds the cluster `verb_latency.py` builds (its `synthetic_cluster`) at 500 and 5000 nodes and loads it
as `serve --cluster-snapshot` does (switch interval set, heap settled), with the preemption loop and the
scaler wired in shadow mode as `serve --dry-run --with-scaler` wires them (each ticked once, so their views
hold what they planned) and the decision history filled by `verb_latency.py`'s verb cases at every node
count. Each route of the observe app with its debug routes is then called `--calls` times straight through
ASGI, one request at a time, on a uvloop event loop, the model changed before each call (a pod bound or
unbound, as the watches change it), so nothing computed for the previous call is still current; a
`/metrics` call first waits `--metrics-gap-s`, longer than any reuse of its exposition. Prints, per route:
- CPU ms, p50 and max: the process's CPU time (every thread) from the request to the last body byte,
  measured alone: what the route costs;
- longest wait ms, max over the calls: measured again beside a coroutine that yields to the event loop
  without pause, the most CPU time the process spent elsewhere before that coroutine ran again: what the
  route adds, at worst, to a verb that arrives meanwhile (a route in the thread pool counts too: its
  thread holds the interpreter a switch interval at a time). CPU time, not wall time, so that other
  processes taking the cores do not count; and the same without the pauses of the cyclic garbage
  collector (`w/o GC`), which runs wherever allocations cross its thresholds, in a route or in a verb;
- KiB: the body's size.
Run it alone on the machine; absolute times depend on it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import uvloop
from starlette.types import ASGIApp, Message

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.verb_latency import cases, loaded_model, synthetic_cluster
from extender.api.app import make_service
from extender.api.observe import create_observe_app
from extender.api.verbs import Service, answer
from extender.cli.serving import shadow_loops
from extender.config import Settings
from extender.state.kinds import Kind
from extender.state.store import ClusterState
from tests.builders import make_pod

NODE_COUNTS = (500, 5000)
ROUTES = (
    "/metrics",
    "/healthz",
    "/readyz",
    "/ui",
    "/ui/main",
    "/debug/view",
    "/debug/view?summary=true",
    "/debug/state",
    "/debug/gangs",
    "/debug/gangs/default/mnist",
    "/debug/jobs",
    "/debug/queue",
    "/debug/decisions",
    "/debug/topology",
    "/debug/explain/default/urgent",
    "/debug/scaler",
)
CHANGED_NODE = "node-00000"
"""The node a filler pod is bound to and unbound from before each call: a change the watches bring."""


@dataclass
class Reply:
    status: int = 0
    body: list[bytes] = field(default_factory=list)


async def call(app: ASGIApp, target: str) -> Reply:
    """One GET through the app's ASGI interface, as the observe listener (uvicorn, ASGI 2.3) hands it."""
    path, _, query = target.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8889),
        "state": {},
    }
    reply = Reply()
    finished = asyncio.Event()
    requested = False

    async def receive() -> Message:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            reply.status = message["status"]
        elif message["type"] == "http.response.body":
            reply.body.append(message.get("body", b""))
            if not message.get("more_body"):
                finished.set()

    await app(scope, receive, send)
    finished.set()
    return reply


class CollectorPauses:
    """The time the cyclic garbage collector has spent so far, counted from its callbacks."""

    def __init__(self) -> None:
        self.spent_s = 0.0
        self.started = 0.0
        gc.callbacks.append(self.on_collection)

    def on_collection(self, phase: str, _: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.process_time()
        else:
            self.spent_s += time.process_time() - self.started


COLLECTOR = CollectorPauses()


async def longest_wait_during(work: Awaitable[Reply]) -> tuple[Reply, float, float]:
    """`work`'s reply, and the most CPU time the process spent between two turns of a coroutine yielding
    to the event loop without pause meanwhile: in all, and without the garbage collector's pauses."""
    longest = longest_without_collector = 0.0
    done = False

    async def spin() -> None:
        nonlocal longest, longest_without_collector
        while not done:
            started, collected = time.process_time(), COLLECTOR.spent_s
            await asyncio.sleep(0)
            waited = time.process_time() - started
            longest = max(longest, waited)
            longest_without_collector = max(longest_without_collector, waited - (COLLECTOR.spent_s - collected))

    spinner = asyncio.create_task(spin())
    await asyncio.sleep(0)
    try:
        reply = await work
    finally:
        done = True
        await spinner
    return reply, longest, longest_without_collector


def change_model(state: ClusterState, bound: bool) -> None:
    node = CHANGED_NODE if bound else ""
    pod = make_pod("observe-churn", cpu="1", node=node, phase="Running" if bound else "Pending")
    state.apply(Kind.POD, "MODIFIED", pod)


@dataclass
class Cost:
    cpu_ms: list[float] = field(default_factory=list)
    waits_ms: list[float] = field(default_factory=list)
    waits_without_collector_ms: list[float] = field(default_factory=list)
    size: int = 0


async def measure_route(app: ASGIApp, state: ClusterState, target: str, calls: int, metrics_gap_s: float) -> Cost:
    cost = Cost()
    await call(app, target)
    for spinning in (False, True):
        for index in range(calls):
            change_model(state, index % 2 == 0)
            if target == "/metrics":
                await asyncio.sleep(metrics_gap_s)
            started = time.process_time()
            if spinning:
                reply, waited, without_collector = await longest_wait_during(call(app, target))
                cost.waits_ms.append(waited * 1000)
                cost.waits_without_collector_ms.append(without_collector * 1000)
            else:
                reply = await call(app, target)
                cost.cpu_ms.append((time.process_time() - started) * 1000)
            if reply.status >= 400:
                raise SystemExit(f"{target}: {reply.status} {b''.join(reply.body)[:300]!r}")
            cost.size = sum(len(piece) for piece in reply.body)
    return cost


def prepared_service(nodes: int, workdir: Path) -> tuple[Service, ASGIApp]:
    """The cluster at `nodes`, served as `serve --cluster-snapshot --dry-run --with-scaler` serves it."""
    snapshot = workdir / f"cluster-{nodes}.json"
    snapshot.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": synthetic_cluster(nodes)}))
    settings = Settings(with_scaler=True, dry_run=True, observe_debug=True)
    state = loaded_model(snapshot, settings)
    service = make_service(settings, state, time.time)
    routers: list[Any] = []
    shadow_loops(settings, state, service, routers)
    now = time.time()
    for loop in (service.loops.preemption, service.loops.scaler):
        if loop is not None:
            loop.tick(now)
    for verb, body in cases(nodes).values():
        for _ in range(3):
            answer(service, verb, body)
    return service, create_observe_app(service, routers, debug_routes=True)


def run(calls: int, metrics_gap_s: float, counts: tuple[int, ...]) -> None:
    print(f"{'route':<32} {'nodes':>6} | {'CPU p50':>8} {'max':>8} | {'longest wait':>12} {'w/o GC':>8} | {'KiB':>8}")
    with tempfile.TemporaryDirectory() as workdir:
        for nodes in counts:
            service, app = prepared_service(nodes, Path(workdir))
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                for target in ROUTES:
                    cost = runner.run(measure_route(app, service.state, target, calls, metrics_gap_s))
                    print(
                        f"{target:<32} {nodes:>6} | {statistics.median(cost.cpu_ms):>8.2f} "
                        f"{max(cost.cpu_ms):>8.2f} | {max(cost.waits_ms):>12.2f} "
                        f"{max(cost.waits_without_collector_ms):>8.2f} | {cost.size / 1024:>8.1f}",
                        flush=True,
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=4, help="measured calls per route and pass")
    parser.add_argument("--metrics-gap-s", type=float, default=1.1, help="seconds waited before each /metrics call")
    parser.add_argument("--nodes", type=int, nargs="*", default=list(NODE_COUNTS), help="cluster sizes")
    args = parser.parse_args()
    run(args.calls, args.metrics_gap_s, tuple(args.nodes))


if __name__ == "__main__":
    main()
