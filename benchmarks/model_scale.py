"""Memory and start-up of the cluster model at Kubernetes' envelope: 5 000 nodes, 100 000 pods, 8 500 gangs.

Generates a TFJob-shaped cluster: `--nodes` nodes (64 CPU, 512 GiB, 8 GPUs, 110 pods), `--gangs` TFJobs of
1 PS (4 CPU) + workers (2 CPU) (sizes 4 to 19, adjusted so the pods add up to `--pods`), each with its PodGroup
(`scheduling.x-k8s.io/v1alpha1`, `minMember` = its size) and its pods labelled and owned as
training-operator makes them. Most gangs are bound and Running; `--pending-share` of them (default 10 %)
are Pending, unbound. With `--shape full` (default) every object is as the API server returns it — TF_CONFIG, the
service-account volume, tolerations, status conditions and container statuses; no managedFields, which
kubectl leaves out —, about what `kubectl get nodes,pods,podgroups,tfjobs -A -o yaml` prints; `--shape minimal` has
only the fields the model reads, as `/debug/state` dumps them.

Then measures, each in a fresh subprocess:
- `offline`: the load `serve --cluster-snapshot FILE` does (`load_snapshot_file` into a `ClusterState`,
  then the heap settled as `serve` does), from a YAML file (kubectl's `kind: List` layout) and from a
  JSON file of the same objects: wall time, peak RSS (VmHWM), RSS once settled, and RSS after
  `malloc_trim(0)` (what the allocator could give back);
- `--live`: creates the same objects through a local control plane's API server (pods already bound,
  `spec.nodeName` set; nodes not managed by kwok, so nothing else acts on them), then starts
  `serve --kubeconfig` and times until `/readyz` answers 200 (every kind listed and synced), with the
  extender's peak and current RSS then and 10 s later.
Generated files are kept in `--workdir` and reused when they exist. `--profile` runs the YAML and JSON
loads once more under tracemalloc (top allocations by file:line, at the peak) and cProfile (top
functions by cumulative and own time) and prints both.
Targets: ≤ 1 GiB RSS, ≤ 60 s from a file, ≤ 30 s from start to ready against an API server.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
EPOCH = "2026-03-01T10:00:00Z"
IMAGE = "registry.example.org/ml/tf-train:2.16.1-gpu"
NODE_CPU = 64
CPU_REQUEST = {"ps": 4, "worker": 2}


# -- the cluster -------------------------------------------------------------------------------------------


def gang_sizes(pods: int, gangs: int) -> list[int]:
    """Sizes 4..19 in a fixed pattern, then nudged by one pod each until they add up to `pods`."""
    sizes = [4 + (i * 7) % 16 for i in range(gangs)]
    difference = pods - sum(sizes)
    step = 1 if difference > 0 else -1
    index = 0
    while difference:
        if sizes[index % gangs] + step >= 2:
            sizes[index % gangs] += step
            difference -= step
        index += 1
    return sizes


def uid(kind: str, number: int) -> str:
    return f"{kind:0>8.8}-{number >> 16 & 0xFFFF:04x}-4{number & 0xFFF:03x}-8000-{number:012x}"


def node(index: int, full: bool) -> dict[str, Any]:
    name = f"node-{index:05d}"
    allocatable = {"cpu": str(NODE_CPU), "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "network.topology.nvidia.com/block": f"block-{index // 64}",
        "network.topology.nvidia.com/spine": f"spine-{index // 1024}",
    }
    if not full:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": allocatable},
        }
    labels.update(
        {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": "gpu-8x",
            "topology.kubernetes.io/zone": f"zone-{index % 3}",
        }
    )
    conditions = [
        {
            "lastHeartbeatTime": EPOCH,
            "lastTransitionTime": EPOCH,
            "message": message,
            "reason": reason,
            "status": status,
            "type": kind,
        }
        for kind, status, reason, message in (
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        )
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": EPOCH,
            "labels": labels,
            "name": name,
            "resourceVersion": str(1000 + index),
            "uid": uid("node", index),
        },
        "spec": {
            "podCIDR": f"10.{index // 256}.{index % 256}.0/24",
            "podCIDRs": [f"10.{index // 256}.{index % 256}.0/24"],
        },
        "status": {
            "addresses": [
                {"address": f"172.16.{index // 256}.{index % 256}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": allocatable,
            "capacity": {**allocatable, "ephemeral-storage": "1Ti"},
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": uid("boot", index),
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": "6.1.0-28-amd64",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.34.4",
                "machineID": f"{index:032x}",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "systemUUID": uid("system", index),
            },
        },
    }


def tf_config(job: str, namespace: str, size: int, role: str, index: int) -> str:
    cluster = {
        "ps": [f"{job}-ps-0.{namespace}.svc:2222"],
        "worker": [f"{job}-worker-{i}.{namespace}.svc:2222" for i in range(size - 1)],
    }
    return json.dumps({"cluster": cluster, "task": {"type": role, "index": index}, "environment": "cloud"})


def pod(
    job: str, job_uid: str, namespace: str, size: int, role: str, index: int, node_name: str, number: int, full: bool
) -> dict[str, Any]:
    name = f"{job}-{role}-{index}"
    labels = {
        "scheduling.x-k8s.io/pod-group": job,
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/operator-name": "tfjob-controller",
        "training.kubeflow.org/replica-index": str(index),
        "training.kubeflow.org/replica-type": role,
    }
    if role == "ps" or index == 0:
        labels["training.kubeflow.org/job-role"] = "master" if role == "worker" else "ps"
    owner = {
        "apiVersion": "kubeflow.org/v1",
        "blockOwnerDeletion": True,
        "controller": True,
        "kind": "TFJob",
        "name": job,
        "uid": job_uid,
    }
    requests = {"cpu": str(CPU_REQUEST[role]), "memory": "16Gi" if role == "ps" else "8Gi"}
    running = bool(node_name)
    if not full:
        spec: dict[str, Any] = {
            "schedulerName": "tfjob-scheduler",
            "containers": [{"name": "tensorflow", "resources": {"requests": requests}}],
        }
        if node_name:
            spec["nodeName"] = node_name
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid("pod", number),
                "creationTimestamp": EPOCH,
                "labels": labels,
                "ownerReferences": [owner],
            },
            "spec": spec,
            "status": {"phase": "Running" if running else "Pending"},
        }
    spec = {
        "containers": [
            {
                "args": ["--train-steps=200000", "--batch-size=256", f"--model-dir=/data/{job}"],
                "command": ["python", "/opt/train/main.py"],
                "env": [{"name": "TF_CONFIG", "value": tf_config(job, namespace, size, role, index)}],
                "image": IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "name": "tensorflow",
                "ports": [{"containerPort": 2222, "name": "tfjob-port", "protocol": "TCP"}],
                "resources": {"limits": dict(requests), "requests": dict(requests)},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [
                    {
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "name": f"kube-api-access-{number % 100000:05d}",
                        "readOnly": True,
                    }
                ],
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Never",
        "schedulerName": "tfjob-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {
                "effect": "NoExecute",
                "key": f"node.kubernetes.io/{taint}",
                "operator": "Exists",
                "tolerationSeconds": 300,
            }
            for taint in ("not-ready", "unreachable")
        ],
        "volumes": [
            {
                "name": f"kube-api-access-{number % 100000:05d}",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace",
                                    }
                                ]
                            }
                        },
                    ],
                },
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any]
    if running:
        ip = f"10.{number >> 16 & 255}.{number >> 8 & 255}.{number & 255}"
        status = {
            "conditions": [
                {"lastProbeTime": None, "lastTransitionTime": EPOCH, "status": "True", "type": kind}
                for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "containerID": f"containerd://{number:064x}",
                    "image": IMAGE,
                    "imageID": f"{IMAGE}@sha256:{'ab' * 32}",
                    "lastState": {},
                    "name": "tensorflow",
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": EPOCH}},
                }
            ],
            "hostIP": "172.16.0.1",
            "hostIPs": [{"ip": "172.16.0.1"}],
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": "Guaranteed",
            "startTime": EPOCH,
        }
    else:
        status = {
            "conditions": [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": EPOCH,
                    "message": "0/5000 nodes are available: gang is waiting for capacity.",
                    "reason": "Unschedulable",
                    "status": "False",
                    "type": "PodScheduled",
                }
            ],
            "phase": "Pending",
            "qosClass": "Guaranteed",
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": EPOCH,
            "labels": labels,
            "name": name,
            "namespace": namespace,
            "ownerReferences": [owner],
            "resourceVersion": str(100000 + number),
            "uid": uid("pod", number),
        },
        "spec": spec,
        "status": status,
    }


def podgroup(job: str, namespace: str, size: int, number: int, full: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": job, "namespace": namespace, "creationTimestamp": EPOCH}
    if full:
        meta.update({"generation": 1, "resourceVersion": str(300000 + number), "uid": uid("podgroup", number)})
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "TFJob",
                "name": job,
                "uid": uid("tfjob", number),
            }
        ]
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": size},
    }


def tfjob(job: str, namespace: str, size: int, number: int, full: bool) -> dict[str, Any]:
    def replica(count: int, requests: dict[str, str]) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": "tensorflow",
            "resources": {"requests": requests, "limits": dict(requests)},
        }
        if full:
            container.update(
                {
                    "image": IMAGE,
                    "command": ["python", "/opt/train/main.py"],
                    "ports": [{"containerPort": 2222, "name": "tfjob-port"}],
                }
            )
        return {"replicas": count, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}

    spec: dict[str, Any] = {
        "tfReplicaSpecs": {
            "PS": replica(1, {"cpu": "4", "memory": "16Gi"}),
            "Worker": replica(size - 1, {"cpu": "2", "memory": "8Gi"}),
        }
    }
    meta: dict[str, Any] = {
        "name": job,
        "namespace": namespace,
        "creationTimestamp": EPOCH,
        "uid": uid("tfjob", number),
    }
    obj: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": meta, "spec": spec}
    if full:
        meta.update({"generation": 1, "resourceVersion": str(400000 + number)})
        spec["runPolicy"] = {"cleanPodPolicy": "None", "schedulingPolicy": {"minAvailable": size}}
        obj["status"] = {
            "conditions": [
                {
                    "lastTransitionTime": EPOCH,
                    "lastUpdateTime": EPOCH,
                    "message": f"TFJob {namespace}/{job} is created.",
                    "reason": "TFJobCreated",
                    "status": "True",
                    "type": "Created",
                },
                {
                    "lastTransitionTime": EPOCH,
                    "lastUpdateTime": EPOCH,
                    "message": f"TFJob {namespace}/{job} is running.",
                    "reason": "TFJobRunning",
                    "status": "True",
                    "type": "Running",
                },
            ],
            "replicaStatuses": {"PS": {"active": 1}, "Worker": {"active": size - 1}},
            "startTime": EPOCH,
        }
    return obj


def cluster(nodes: int, pods: int, gangs: int, pending_share: float, full: bool) -> Iterator[dict[str, Any]]:
    """Nodes, then pods, then PodGroups, then TFJobs (kubectl's order for `get nodes,pods,podgroups,tfjobs`).
    Bound gangs fill the nodes in turn by CPU, a gang's pods on consecutive nodes."""
    sizes = gang_sizes(pods, gangs)
    pending_every = round(1 / pending_share) if pending_share > 0 else 0
    for index in range(nodes):
        yield node(index, full)
    number, cpu_on, cursor = 0, [0] * nodes, 0
    for gang, size in enumerate(sizes):
        job, namespace = f"job-{gang:05d}", f"team-{gang % 40:02d}"
        pending = bool(pending_every) and gang % pending_every == pending_every - 1
        for role_index in range(size):
            role, index = ("ps", 0) if role_index == 0 else ("worker", role_index - 1)
            node_name = ""
            if not pending:
                cpu = CPU_REQUEST[role]
                for _ in range(nodes):
                    if cpu_on[cursor % nodes] + cpu <= NODE_CPU:
                        break
                    cursor += 1
                else:
                    raise ValueError("the bound pods do not fit on the nodes")
                cpu_on[cursor % nodes] += cpu
                node_name = f"node-{cursor % nodes:05d}"
            yield pod(job, uid("tfjob", gang), namespace, size, role, index, node_name, number, full)
            number += 1
    for gang, size in enumerate(sizes):
        yield podgroup(f"job-{gang:05d}", f"team-{gang % 40:02d}", size, gang, full)
    for gang, size in enumerate(sizes):
        yield tfjob(f"job-{gang:05d}", f"team-{gang % 40:02d}", size, gang, full)
    yield {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def write_yaml(path: Path, objects: Iterator[dict[str, Any]]) -> None:
    """kubectl's layout: `apiVersion: v1`, `items:` with each item a `- ` entry at column 0, `kind: List`."""
    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class Dumper(base):  # type: ignore[valid-type,misc]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    with path.open("w") as out:
        out.write("apiVersion: v1\nitems:\n")
        for obj in objects:
            out.write(yaml.dump([obj], Dumper=Dumper, default_flow_style=False, sort_keys=True, width=1 << 20))
        out.write('kind: List\nmetadata:\n  resourceVersion: ""\n')


def write_json(path: Path, objects: Iterator[dict[str, Any]]) -> None:
    """kubectl's layout of `-o json` (indented), a `kind: List`."""
    with path.open("wb") as out:
        out.write(b'{\n  "apiVersion": "v1",\n  "items": [\n')
        for position, obj in enumerate(objects):
            if position:
                out.write(b",\n")
            out.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        out.write(b'\n  ],\n  "kind": "List",\n  "metadata": {\n    "resourceVersion": ""\n  }\n}\n')


# -- measuring ---------------------------------------------------------------------------------------------


def memory_mib(pid: int | str = "self") -> dict[str, float]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(value.split()[0]) / 1024
    return values


def malloc_trim() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def load_once(path: Path) -> dict[str, Any]:
    """In this (fresh) process: what `serve --cluster-snapshot` does before it answers."""
    from extender.cli.serving import settle_heap
    from extender.state.offline import load_snapshot_file
    from extender.state.store import ClusterState

    before = memory_mib()
    started = time.perf_counter()
    state = ClusterState()
    count = load_snapshot_file(state, path)
    loaded_s = time.perf_counter() - started
    settle_heap()
    settled_s = time.perf_counter() - started
    snapshot = state.snapshot()
    settled = memory_mib()
    malloc_trim()
    trimmed = memory_mib()
    return {
        "objects": count,
        "pods": len(snapshot.pods),
        "nodes": len(snapshot.nodes),
        "gangs": len(snapshot.groups),
        "load_s": loaded_s,
        "settled_s": settled_s,
        "start_mib": before["VmRSS"],
        "peak_mib": settled["VmHWM"],
        "settled_mib": settled["VmRSS"],
        "trimmed_mib": trimmed["VmRSS"],
    }


def profile_load(path: Path, top: int) -> None:
    """The load under tracemalloc (allocations alive at the peak, by line) and then under cProfile."""
    import cProfile
    import pstats
    import tracemalloc

    from extender.state.offline import load_snapshot_file
    from extender.state.store import ClusterState

    tracemalloc.start(1)
    state = ClusterState()
    largest: list[tracemalloc.Snapshot] = []
    done = threading.Event()

    def watch_peak() -> None:
        """Keep a snapshot of the allocations whenever the traced total grew by 10 % past the last one:
        the one kept last is within 10 % of the peak."""
        kept = 0
        while not done.wait(0.2):
            current, _ = tracemalloc.get_traced_memory()
            if current > kept * 1.1:
                largest[:] = [tracemalloc.take_snapshot()]
                kept = current

    watcher = threading.Thread(target=watch_peak, daemon=True)
    watcher.start()
    try:
        load_snapshot_file(state, path)
    finally:
        done.set()
        watcher.join()
    current, peak = tracemalloc.get_traced_memory()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    print(f"## tracemalloc {path.name}: traced peak {peak / 2**20:.0f} MiB, after load {current / 2**20:.0f} MiB")
    for title, snap in (("near the peak", largest[0] if largest else after), ("after the load", after)):
        stats = snap.statistics("lineno")
        total = sum(stat.size for stat in stats)
        print(f"### {title}: {total / 2**20:.0f} MiB traced; top {top} lines")
        for stat in stats[:top]:
            frame = stat.traceback[0]
            file = Path(frame.filename)
            shown = file.relative_to(REPO) if file.is_relative_to(REPO) else Path(*file.parts[-2:])
            where = f"{shown}:{frame.lineno}"
            print(f"{stat.size / 2**20:>9.1f} MiB {stat.count:>10} blocks  {where}")
    largest.clear()
    del state, after
    gc.collect()
    profiler = cProfile.Profile()
    state = ClusterState()
    profiler.enable()
    load_snapshot_file(state, path)
    profiler.disable()
    timing = pstats.Stats(profiler)
    print(f"## cProfile {path.name}")
    for order in ("cumulative", "tottime"):
        print(f"### by {order}")
        timing.sort_stats(order).print_stats(top)


def run_child(args: list[str]) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), *args]
    result = subprocess.run(
        command, check=True, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    parsed: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return parsed


def generate(args: argparse.Namespace) -> dict[str, Path]:
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    stem = f"cluster-{args.shape}-{args.nodes}n-{args.pods}p-{args.gangs}g-{args.pending_share:g}"
    files = {fmt: workdir / f"{stem}.{fmt}" for fmt in args.formats.split(",")}
    full = args.shape == "full"
    for fmt, path in files.items():
        if path.exists():
            continue
        started = time.perf_counter()
        partial = path.with_suffix(".partial")
        writer = write_yaml if fmt == "yaml" else write_json
        writer(partial, cluster(args.nodes, args.pods, args.gangs, args.pending_share, full))
        partial.rename(path)
        print(
            f"# wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - started:.0f}s",
            flush=True,
        )
    return files


def offline(args: argparse.Namespace, files: dict[str, Path]) -> None:
    print(
        f"{'file':<6} {'MiB':>6} {'objects':>8} {'pods':>7} {'load s':>7} {'ready s':>7} "
        f"{'peak MiB':>9} {'settled':>8} {'trimmed':>8}"
    )
    for fmt, path in files.items():
        result = run_child(["--load-once", str(path)])
        print(
            f"{fmt:<6} {path.stat().st_size / 2**20:>6.0f} {result['objects']:>8} {result['pods']:>7} "
            f"{result['load_s']:>7.1f} {result['settled_s']:>7.1f} {result['peak_mib']:>9.0f} "
            f"{result['settled_mib']:>8.0f} {result['trimmed_mib']:>8.0f}",
            flush=True,
        )


# -- live --------------------------------------------------------------------------------------------------


def list_pods(api: Any, page_size: int) -> tuple[float, int]:
    """The time one paginated list of every pod takes, decoded as the informer decodes it: what the API
    server's share of the extender's start-up is at least."""
    import urllib.parse

    started = time.perf_counter()
    count, token = 0, ""
    while True:
        query = f"?limit={page_size}" + (f"&continue={urllib.parse.quote(token)}" if token else "")
        page = api.call("GET", f"/api/v1/pods{query}")
        count += len(page["items"])
        token = page["metadata"].get("continue") or ""
        if not token:
            return time.perf_counter() - started, count


def live(args: argparse.Namespace) -> None:
    from extender.devcluster import LocalControlPlane, build_control_plane, free_port
    from tests.e2e.bulk import Api, create_all

    full = args.shape == "full"
    plane = LocalControlPlane(build_control_plane(), with_operator=False, with_extender=False, with_scheduler=False)
    with plane:
        api = Api(plane.api_port, plane.token)
        started = time.perf_counter()
        namespaces: set[str] = set()
        batch: list[tuple[str, str, bytes]] = []
        created = 0
        uids: dict[str, str] = {}

        def flush() -> None:
            nonlocal created
            create_all(api, batch, args.threads, None)
            created += len(batch)
            batch.clear()

        for obj in cluster(args.nodes, args.pods, args.gangs, args.pending_share, full):
            meta = obj["metadata"]
            for field in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
                meta.pop(field, None)
            namespace = meta.get("namespace")
            if namespace and namespace not in namespaces:
                api.call("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": namespace}}))
                namespaces.add(namespace)
            kind = obj["kind"]
            if kind == "Node":
                meta.get("annotations", {}).pop("kwok.x-k8s.io/node", None)
                path = "/api/v1/nodes"
            elif kind == "Pod":
                path = f"/api/v1/namespaces/{namespace}/pods"
            elif kind == "PodGroup":
                path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups"
            elif kind == "TFJob":
                obj.pop("status", None)
                path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs"
            else:
                path = "/apis/scheduling.k8s.io/v1/priorityclasses"
            if "ownerReferences" in meta:
                meta.pop("ownerReferences")  # no TFJob uid yet; the job-name label names the job
            batch.append((path, f"{kind}/{namespace}/{meta['name']}", orjson.dumps(obj)))
            if len(batch) >= 2000:
                flush()
                print(f"# created {created} objects in {time.perf_counter() - started:.0f}s", flush=True)
        flush()
        del uids
        print(f"# created {created} objects through the API server in {time.perf_counter() - started:.0f}s", flush=True)
        listed_s, listed = list_pods(api, args.page_size)
        print(f"# one paginated list of all {listed} pods ({args.page_size} a page, JSON decoded) took {listed_s:.1f}s")
        port = free_port()
        command = [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--kubeconfig", str(plane.kubeconfig), "--log-level", "warning"]
        log = (plane.run_dir / "extender-live.log").open("wb")
        begun = time.perf_counter()
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)}
        )
        try:
            ready_s = None
            while time.perf_counter() - begun < args.live_timeout_s:
                if server.poll() is not None:
                    raise SystemExit(f"the extender exited with {server.returncode}; see {plane.run_dir}")
                try:
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                    connection.request("GET", "/readyz")
                    status = connection.getresponse().status
                    connection.close()
                except OSError:
                    status = 0
                if status == 200:
                    ready_s = time.perf_counter() - begun
                    break
                time.sleep(0.1)
            at_ready = memory_mib(server.pid)
            time.sleep(10)
            later = memory_mib(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()
        shown = "not ready" if ready_s is None else f"{ready_s:.1f}"
        print(
            f"live: start→ready {shown} s | at ready: RSS {at_ready['VmRSS']:.0f} MiB, peak "
            f"{at_ready['VmHWM']:.0f} MiB | 10 s later: RSS {later['VmRSS']:.0f} MiB, peak {later['VmHWM']:.0f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--gangs", type=int, default=8500)
    parser.add_argument("--pending-share", type=float, default=0.1, help="share of gangs left pending")
    parser.add_argument("--shape", choices=["full", "minimal"], default="full")
    parser.add_argument("--workdir", default=str(Path.home() / ".cache" / "tfjob-extender" / "model-scale"))
    parser.add_argument("--formats", default="yaml,json", help="comma-separated subset of yaml,json")
    parser.add_argument("--live", action="store_true", help="also measure serve --kubeconfig on a local control plane")
    parser.add_argument("--no-offline", action="store_true", help="skip the offline loads")
    parser.add_argument("--generate-only", action="store_true", help="only write the files")
    parser.add_argument("--threads", type=int, default=6, help="concurrent creates in --live")
    parser.add_argument("--live-timeout-s", type=float, default=900)
    parser.add_argument("--page-size", type=int, default=500, help="page size of the timed pod list in --live")
    parser.add_argument("--profile", action="store_true", help="profile the loads (tracemalloc, cProfile)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--load-once", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile-once", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load_once:
        print(json.dumps(load_once(args.load_once)))
        return
    if args.profile_once:
        profile_load(args.profile_once, args.top)
        return
    print(
        f"# {args.nodes} nodes, {args.pods} pods in {args.gangs} gangs, {args.pending_share:.0%} of gangs pending, "
        f"shape {args.shape}",
        flush=True,
    )
    if not args.no_offline or args.profile or args.generate_only:
        files = generate(args)
        if args.generate_only:
            return
        if not args.no_offline:
            offline(args, files)
        if args.profile:
            for path in files.values():
                subprocess.run(
                    [
                        sys.executable,
                        str(Path(__file__).resolve()),
                        "--profile-once",
                        str(path),
                        "--top",
                        str(args.top),
                    ],
                    check=True,
                    env={**os.environ, "PYTHONPATH": str(REPO)},
                )
    if args.live:
        live(args)


if __name__ == "__main__":
    main()
