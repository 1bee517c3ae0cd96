"""Decoding a filter request: the fast codec the verbs use (`extender.api.wire`) against the wire model
(`extender.api.wire_models.ExtenderArgs.model_validate_json`), in process.

The request is what kube-scheduler sends a `nodeCacheCapable` extender: a plain pending pod, `Nodes` null
and N candidates in `NodeNames` (`node-00000`, …). Cases, each at 500 and 5000 candidates:
- `wire`, a list seen before: the same body again, as kube-scheduler repeats one while few nodes are
  feasible (its `NodeNames` member is remembered decoded and valid, the rest of the body decoded);
- `wire`, a new list: the candidates in an order never sent before, as kube-scheduler's rotating start
  sends them while it filters every node (decoded, names checked against the names known valid);
- the model, on the same two kinds of body: `ExtenderArgs.model_validate_json`, which remembers nothing
  and checks every name against the node-name pattern;
- the model + candidates once: the model, then the candidates without repeats, as `wire` reads them and
  the verbs use them.
Each case runs `--calls` calls per repeat after a warm-up; `--repeats` repeats (3 by default); prints the
median over the repeats of the mean microseconds per call, and each repeat's figure. Run it alone.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extender.api import wire
from extender.api.wire_models import ExtenderArgs
from tests.builders import make_pod

Bodies = Callable[[], list[bytes]]


def filter_body(names: Sequence[str]) -> bytes:
    pod = make_pod("plain", cpu="2", memory="4Gi")
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": list(names)})


def per_call_us(decode: Callable[[bytes], object], bodies: Sequence[bytes]) -> float:
    """Mean microseconds `decode` takes per body, over `bodies` in turn."""
    gc.collect()
    started = time.perf_counter()
    for body in bodies:
        decode(body)
    return (time.perf_counter() - started) / len(bodies) * 1e6


def cases(nodes: int, calls: int, rng: random.Random) -> dict[str, tuple[Callable[[bytes], object], Bodies]]:
    """Case → (the decoder, what makes one repeat's bodies: new ones each repeat for a new list)."""
    names = [f"node-{index:05d}" for index in range(nodes)]
    same = filter_body(names)

    def new_orders() -> list[bytes]:
        orders = []
        for _ in range(calls):
            rng.shuffle(names)
            orders.append(filter_body(names))
        return orders

    return {
        "wire, a list seen before": (wire.parse_extender_args, lambda: [same] * calls),
        "wire, a new list": (wire.parse_extender_args, new_orders),
        "model, a list seen before": (ExtenderArgs.model_validate_json, lambda: [same] * calls),
        "model, a new list": (ExtenderArgs.model_validate_json, new_orders),
        "model + candidates once, a new list": (candidates_by_model, new_orders),
    }


def candidates_by_model(body: bytes) -> tuple[str, ...]:
    """What the verbs read from a body, by the model: the candidates, each once, in their order."""
    return tuple(dict.fromkeys(ExtenderArgs.model_validate_json(body).node_names or ()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--calls", type=int, default=0, help="calls per repeat (default: 1 000 000 / nodes)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    print(f"{'case (µs per call)':<36} {'nodes':>6} | {'median':>8} | repeats")
    for nodes in args.nodes:
        calls = args.calls or max(100, 1_000_000 // nodes)
        for name, (decode, bodies) in cases(nodes, calls, rng).items():
            per_call_us(decode, bodies()[:3])
            runs = [per_call_us(decode, bodies()) for _ in range(args.repeats)]
            shown = " ".join(f"{run:.0f}" for run in runs)
            print(f"{name:<36} {nodes:>6} | {statistics.median(runs):>8.0f} | {shown}", flush=True)


if __name__ == "__main__":
    main()
