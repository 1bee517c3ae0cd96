"""Fuzz payloads for every extender verb and debug route, drawn from one `random.Random`.

The cluster (`fuzz_cluster`) is small and fixed: two pools of nodes; in the busy pool two gangs that
fit, bound pods and a plain pending pod, all fuzzed; in the quiet pool a gang and a plain pod the fuzz
never names (their pods select the pool, so nothing planned in the busy pool lands there). Each payload
is one request — a method, a path and a body — made from: valid pods of the busy pool and new ones,
every field possibly replaced by a value of another type, huge and odd quantities, repeated, unknown and
forbidden node names, keys in other cases, deep nesting, and bodies that are not JSON or not UTF-8.
Valid requests may legitimately re-plan the busy gangs (a candidate list without a planned node does);
nothing may change the answers about the quiet pool, which `known_good` lists. The tests draw the
`Random` from hypothesis (`st.randoms()`, so a failure shrinks); `benchmarks/fuzz.py` seeds one itself
and sends 100 000 payloads over HTTP.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson

from tests.builders import make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods

Obj = dict[str, Any]
NODES = [f"node-{i}" for i in range(8)]
QUIET_NODES = NODES[6:]
GANGS = {"alpha": ("busy", 3), "beta": ("busy", 2), "steady": ("quiet", 1)}
"""Gang → (pool, workers); one PS each, 1 CPU and 1 GiB per pod."""
PLAN_TIMEOUT_S = 86_400
"""The gangs' scheduleTimeoutSeconds: their plans outlast any fuzz run."""
ODD_QUANTITIES = [
    "1e999999", "1e5000", "1e-999999", "9Ei", "8Ei", "7Ei", "-1", "-0", "0", "1e18", "9223372036854775807",
    "9223372036854775808", "0.000000001", "1" * 64, "1" * 65, "1.5Gi", "250m", "NaN", "Infinity", "1e", "e3",
    "1_000", "\u0663", "  4Gi  ", "4GB", "", "0x10", "1e+64", "1e-64", 10**19, -(2**63), 2**64 - 1, 1e308, 0.1,
    True, None, [], {},
]  # fmt: skip
ODD_STRINGS = [
    "", "a/b", "A", "node_1", "-a", "a-", "a..b", "x" * 254, "x" * 64, "é", "\x7f", "\x00", "\n", "%s%d",
    "../..", "default/mnist", "Pending", "Running", "Succeeded", "\ud7ff", "🙂", "a" * 5000,
]  # fmt: skip
ODD_BODIES = [
    b"", b"null", b"[]", b"{}", b'"Pod"', b"{", b'{"Pod": {}}', b'{"Pod": null}', b"\xff\xfe\x00", b"\xef\xbb\xbf{}",
    b"[" * 2000 + b"]" * 2000, b'{"Pod":' * 600 + b"{}" + b"}" * 600, b"1e99999", b"123456789012345678901234567890",
    '{"Pod": {}}'.encode("utf-16"), b'{"Pod": {"metadata": {"name": "\\ud800"}}}', b"\x00" * 64,
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    body: bytes = b""

    @property
    def verb(self) -> str | None:
        name = self.path.lstrip("/")
        return name if self.method == "POST" and name in ("filter", "prioritize", "preempt") else None


def fuzz_cluster() -> list[Obj]:
    objects: list[Obj] = [
        make_node(name, cpu="4", memory="16Gi", labels={"pool": "quiet" if name in QUIET_NODES else "busy"})
        for name in NODES
    ]
    for gang, (pool, workers) in GANGS.items():
        objects += [in_pool(pod, pool) for pod in tfjob_pods(gang, ps=1, workers=workers, cpu="1", memory="1Gi")]
        objects.append(make_podgroup(gang, min_member=workers + 1, timeout_s=PLAN_TIMEOUT_S))
        objects.append(make_tfjob(gang, workers=workers))
    objects.append(in_pool(make_pod("plain", cpu="2", memory="2Gi"), "busy"))
    objects.append(in_pool(make_pod("quiet-plain", cpu="2", memory="2Gi"), "quiet"))
    objects += [make_pod(f"busy-{i}", cpu="3", memory="4Gi", node=NODES[i], phase="Running") for i in range(3)]
    objects += [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in (("high", 1000), ("low", 10))
    ]
    return objects


def in_pool(pod: Obj, pool: str) -> Obj:
    pod["spec"]["nodeSelector"] = {"pool": pool}
    return pod


def cluster_pods(pool: str | None = None) -> list[Obj]:
    """The cluster's pods, or those that select `pool` (bound pods select none)."""
    pods = [obj for obj in fuzz_cluster() if obj["kind"] == "Pod"]
    return [pod for pod in pods if pool is None or pod["spec"].get("nodeSelector") == {"pool": pool}]


def gang_members(pool: str | None = None) -> list[Obj]:
    return [pod for pod in cluster_pods(pool) if "scheduling.x-k8s.io/pod-group" in pod["metadata"]["labels"]]


def fuzzed_pods() -> list[Obj]:
    """The pods the fuzz may name: all but the quiet pool's."""
    return [pod for pod in cluster_pods() if pod["spec"].get("nodeSelector") != {"pool": "quiet"}]


def extender_args(pod: Any, names: Any = NODES) -> bytes:
    return orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})


def known_good() -> list[Request]:
    """Requests whose answers a fuzz run must leave unchanged (after `warm_up` planned every gang): about
    the quiet pool, with the candidates kube-scheduler would send for its pods (the nodes they select)."""
    (plain,) = [pod for pod in cluster_pods("quiet") if pod["metadata"]["name"] == "quiet-plain"]
    victims = {"NodeNameToMetaVictims": {"node-0": {"Pods": [{"UID": "uid-default-busy-0"}], "NumPDBViolations": 0}}}
    return [
        *(Request("POST", "/filter", extender_args(pod, QUIET_NODES)) for pod in gang_members("quiet")),
        Request("POST", "/filter", extender_args(plain, QUIET_NODES)),
        Request("POST", "/prioritize", extender_args(plain, QUIET_NODES)),
        *(Request("POST", "/prioritize", extender_args(pod, QUIET_NODES)) for pod in gang_members("quiet")),
        Request("POST", "/preempt", orjson.dumps({"Pod": plain, **victims})),
        Request("GET", "/debug/gangs/default/steady"),
    ]


def comparable(request: Request, reply: bytes) -> Any:
    """A known-good reply as compared across a run: a gang view without its countdown (`expiresInSeconds`
    moves with the clock; the plan's `expiresAt` does not) and without its place among the waiting gangs
    (`rank`, `waiting`: the fuzz adds gangs to the queue, which is not this gang's answer changing)."""
    if not request.path.startswith("/debug/gangs/"):
        return reply
    view = orjson.loads(reply)
    for held in view.get("plan", []):
        held.pop("expiresInSeconds", None)
    for relative in ("rank", "waiting"):
        (view.get("standing") or {}).pop(relative, None)
    return view


def warm_up() -> list[Request]:
    """Filter every gang member once, so every gang holds its plan before the answers are recorded."""
    return [Request("POST", "/filter", extender_args(pod, QUIET_NODES)) for pod in gang_members("quiet")] + [
        Request("POST", "/filter", extender_args(pod)) for pod in gang_members("busy")
    ]


def payload(rng: random.Random) -> Request:
    """One fuzzed request."""
    kind = rng.random()
    if kind < 0.07:
        return Request("POST", rng.choice(["/filter", "/prioritize", "/preempt"]), rng.choice(ODD_BODIES))
    if kind < 0.25:
        return debug_request(rng)
    verb = rng.choice(["filter", "filter", "prioritize", "preempt"])
    pod = mutated(rng, some_pod(rng)) if rng.random() < 0.7 else some_pod(rng)
    if verb == "preempt":
        document: Obj = {"Pod": pod, **preemption_victims(rng)}
    else:
        document = {"Pod": pod, "Nodes": None, "NodeNames": node_names(rng)}
        if rng.random() < 0.1:
            document = {"Pod": pod, "Nodes": {"metadata": {}, "items": node_items(rng)}, "NodeNames": None}
    if rng.random() < 0.15:
        document = {rng.choice([key.lower(), key.upper(), key]): value for key, value in document.items()}
    if rng.random() < 0.1:
        document = mutated(rng, document)
    return Request("POST", f"/{verb}", encoded(document))


def encoded(document: Any) -> bytes:
    """JSON as kube-scheduler would send it, or as Python's encoder writes what orjson refuses (integers
    beyond 64 bits)."""
    try:
        return orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(document, default=str).encode()


def some_pod(rng: random.Random) -> Obj:
    if rng.random() < 0.5:
        return copy.deepcopy(rng.choice(fuzzed_pods()))
    name = rng.choice(["new", "alpha-worker-9", "plain", *ODD_STRINGS[:8]])
    pod = new_pod(rng, name)
    if rng.random() < 0.2:
        pod["spec"]["schedulingGroup"] = rng.choice(
            [{"podGroupName": "alpha"}, {"podGroupName": "ghost"}, {"podGroupName": [1]}, {"podGroupName": "a/b"}, "x"]
        )
    return pod


def new_pod(rng: random.Random, name: str) -> Obj:
    return make_pod(
        name if isinstance(name, str) else "new",
        namespace=rng.choice(["default", "other", "a/b", "Default"]),
        cpu=str(rng.choice([*ODD_QUANTITIES[:20], "1", "500m"])),
        memory=str(rng.choice([*ODD_QUANTITIES[:20], "1Gi"])),
        group=rng.choice(["", "alpha", "beta", "ghost", "a/b"]),
        phase=rng.choice(["Pending", "Running", "Succeeded", "Sleeping"]),
        node=rng.choice(["", "node-1", "node-7", "ghost", "Node_1"]),
        priority=rng.choice([0, -1, 2**31, 10**30]),
    )


def mutated(rng: random.Random, obj: Any, changes: int | None = None) -> Any:
    """`obj` with 1–3 fields (anywhere in it) replaced by odd values, deleted, or given a new odd key."""
    result = copy.deepcopy(obj)
    for _ in range(changes or rng.randint(1, 3)):
        paths = list(_paths(result))
        if not paths:
            return odd_value(rng)
        parent, key = rng.choice(paths)
        action = rng.random()
        if action < 0.75:
            parent[key] = odd_value(rng)
        elif action < 0.85 and isinstance(parent, dict):
            del parent[key]
        elif isinstance(parent, dict):
            parent[rng.choice(ODD_STRINGS)] = odd_value(rng)
    return result


def _paths(obj: Any) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    stack = [obj]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            found.append((node, key))
            stack.append(node[key])
    return found


def odd_value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.random()
    if choice < 0.3:
        return rng.choice(ODD_QUANTITIES)
    if choice < 0.55:
        return rng.choice(ODD_STRINGS)
    if choice < 0.65:
        return rng.choice([None, True, False, 0, -1, 2**63 - 1, -(2**63), 1.5, -0.0])
    if choice < 0.8 and depth < 4:
        return [odd_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if choice < 0.95 and depth < 4:
        return {rng.choice(ODD_STRINGS): odd_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return _nested(rng.randint(10, 120))


def _nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"a": [value]}
    return value


def node_names(rng: random.Random) -> Any:
    choice = rng.random()
    if choice < 0.5:
        return rng.sample(NODES, rng.randint(1, len(NODES)))
    if choice < 0.65:
        return NODES + NODES[: rng.randint(1, 4)]
    if choice < 0.8:
        return [*NODES[:3], f"ghost-{rng.randint(0, 10**6)}", "node-99"]
    if choice < 0.9:
        return [*NODES[:2], rng.choice(ODD_STRINGS)]
    return odd_value(rng)


def node_items(rng: random.Random) -> list[Any]:
    items: list[Any] = [make_node(name) for name in rng.sample(NODES, rng.randint(1, 4))]
    if rng.random() < 0.5:
        items = [mutated(rng, item) for item in items]
    return items + items[:1] if rng.random() < 0.3 else items


def preemption_victims(rng: random.Random) -> Obj:
    victims = {
        node: {"Pods": [{"UID": f"uid-default-busy-{i}"}], "NumPDBViolations": rng.choice([0, 1, -1, 2**63])}
        for i, node in enumerate(rng.sample(NODES[:3], rng.randint(0, 3)))
    }
    if rng.random() < 0.3:
        victims[rng.choice(ODD_STRINGS)] = odd_value(rng)
    key = "NodeNameToMetaVictims" if rng.random() < 0.8 else "NodeNameToVictims"
    return {key: victims if rng.random() < 0.8 else odd_value(rng)}


def debug_request(rng: random.Random) -> Request:
    odd = quote(str(rng.choice(ODD_STRINGS + ODD_QUANTITIES)), safe="")
    routes = [
        "/healthz",
        "/readyz",
        "/metrics",
        "/debug/state",
        "/debug/gangs",
        "/debug/jobs",
        f"/debug/gangs/{odd}/{quote(rng.choice(['alpha', 'beta', *ODD_STRINGS[:6]]), safe='')}",
        f"/debug/gangs/default/{odd}",
        f"/debug/decisions?pod={odd}&limit={quote(str(rng.choice([1, 0, -5, 10**30, 'x', 2**63])), safe='')}",
        f"/debug/topology?gang={odd}",
        f"/debug/topology?cpu={odd}&memory={quote(str(rng.choice(ODD_QUANTITIES)), safe='')}",
        f"/debug/topology?gpu={odd}&depth={quote(str(rng.choice([0, 1, -1, 10**40, 'deep'])), safe='')}",
        f"/debug/{odd}",
    ]
    method = "GET" if rng.random() < 0.95 else rng.choice(["POST", "PUT", "DELETE"])
    return Request(method, rng.choice(routes), encoded(odd_value(rng)) if method != "GET" else b"")
