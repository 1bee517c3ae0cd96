"""A real, local Kubernetes control plane for end-to-end tests and the live demo.

`LocalControlPlane` starts, on 127.0.0.1 with free ports: etcd, kube-apiserver (token auth, no
ServiceAccount / TaintNodesByCondition admission, since no controller-manager runs), the TFJob CRD and the
CRDs of `manifests/crds/` (both PodGroup groups, ClusterNetworkTopology), kwok (fake nodes whose pods run
and complete on cue), the extender under test, a kube-scheduler with the repo's `scheduler-config/`
(profile `tfjob-scheduler` calling the extender), and optionally training-operator with
`--gang-scheduler-name=tfjob-scheduler`. Binaries come from
`hack/build-control-plane.sh` (built once, cached outside the repo). Every process logs into the run
directory; `stop()` ends exactly the processes it started, in reverse order.

With `workload_api=True` the API server serves Kubernetes' own gang API (`scheduling.k8s.io` Workload and
PodGroup) and kube-scheduler gates gangs itself: the feature gates and API version of the release the
binaries are (see `WORKLOAD_API`); a release missing from that table is refused.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, config

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "hack" / "build-control-plane.sh"
KWOK_STAGES = REPO / "hack" / "kwok-stages.yaml"
SCHEDULER_CONFIG = REPO / "scheduler-config" / "kube-scheduler-config.yaml"
PODGROUP_CRDS = REPO / "manifests" / "crds"
SCHEDULER_NAME = "tfjob-scheduler"
OPERATOR_CERT_SUBDIR = Path("k8s-webhook-server/serving-certs")
"""Where training-operator's webhook server reads its certificate, under its TMPDIR (one per control plane, so
two control planes on one machine never serve each other's certificate)."""
OPERATOR_CERT_PROBE = Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
"""The file training-operator's certificate rotator waits for before it reports ready: a fixed path
(`pkg/cert/cert.go` of v1.9.4), whatever TMPDIR says. Only its existence is checked, never its content."""
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
LEASE_NAMESPACE = "tfjob-system"
"""Where the extender's loops elect their one active instance (as in manifests/namespace.yaml)."""
WORKLOAD_API = {
    "1.37": ("scheduling.k8s.io/v1beta1", ("GenericWorkload",)),
    "1.36": ("scheduling.k8s.io/v1alpha2", ("GenericWorkload", "GangScheduling")),
}
"""Kubernetes minor → the `scheduling.k8s.io` version serving Workloads and PodGroups, and the feature gates
that turn them and kube-scheduler's GangScheduling plugin on (1.37 folds GangScheduling into
GenericWorkload; 1.36 has both, alpha)."""
OPERATOR_NUDGE_AFTER_S = 3.0
"""training-operator v1.9.4 can leave a new TFJob without pods for good: when its cache misses the PodGroup
it has just created on two reconciles within one second, the second writes an unchanged status and nothing
calls it again (it ignores PodGroup events). A TFJob still without pods this many seconds after it was
submitted, and every as many seconds after, gets an annotation change, which makes it reconcile again."""
OPERATOR_NUDGE_FOR_S = 30.0
"""Seconds after a TFJob's submission during which it is looked after so."""
NUDGE_ANNOTATION = "e2e.tfjob-extender.io/reconcile-nudges"
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
T = TypeVar("T")


def _unverified_tls() -> ssl.SSLContext:
    """For health probes of local components serving self-signed certificates."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


UNVERIFIED_TLS = _unverified_tls()


class ControlPlaneError(RuntimeError):
    """A component did not come up; the message names it and ends with its log tail."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_control_plane() -> Path:
    """Build (or reuse) the binaries and CRDs; returns the cache directory."""
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], check=False, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise ControlPlaneError(f"{BUILD_SCRIPT.name} failed with exit code {result.returncode}")
    return Path(result.stdout.strip().splitlines()[-1])


def kwok_node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Node that the control plane's kwok manages (it turns Ready and keeps a lease)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1]},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})},
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def wait_until(what: str, condition: Callable[[], T | None], timeout_s: float, interval_s: float = 0.2) -> T:
    """Poll `condition` until it returns something truthy."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(Exception):
            value = condition()
            if value:
                return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


class LocalControlPlane:
    def __init__(
        self,
        cache: Path,
        *,
        with_operator: bool = True,
        run_dir: Path | None = None,
        extender_args: tuple[str, ...] = (),
        scheduler_qps: float | None = None,
        scheduler_burst: int | None = None,
        with_extender: bool = True,
        with_scheduler: bool = True,
        workload_api: bool = False,
    ) -> None:
        """`scheduler_qps` / `scheduler_burst`: kube-scheduler's client rate limit (`clientConnection`),
        instead of the one in `scheduler-config/`. Without `with_extender` / `with_scheduler` the control
        plane starts without the extender / kube-scheduler (a caller may start them later)."""
        self.with_extender = with_extender
        self.with_scheduler = with_scheduler
        self.extender_args = extender_args
        self.scheduler_qps = scheduler_qps
        self.scheduler_burst = scheduler_burst
        self.workload_api = workload_api
        self.workload_api_version = ""
        """With `workload_api`: the `apiVersion` of the served Workloads and PodGroups, once started."""
        self._gates: tuple[str, ...] = ()
        self._runtime_config: tuple[str, ...] = ()
        self.bin = cache / "bin"
        self.crds = cache / "crds"
        self.with_operator = with_operator
        self.run_dir = run_dir or Path(tempfile.mkdtemp(prefix="tfjob-e2e-"))
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.commands: dict[str, tuple[list[str], dict[str, str] | None]] = {}
        self.token = secrets.token_hex(24)
        self.api_port = free_port()
        self.extender_port = free_port()
        self.kubeconfig = self.run_dir / "admin.kubeconfig"
        self.api: client.ApiClient | None = None

    # -- lifecycle --------------------------------------------------------------------------------------

    def __enter__(self) -> LocalControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.workload_api:
            self.workload_api_version, gates = self._workload_api_settings()
            self._gates = (f"--feature-gates={','.join(f'{gate}=true' for gate in gates)}",)
            self._runtime_config = (f"--runtime-config={self.workload_api_version}=true",)
        self._start_etcd()
        self._start_apiserver()
        self.create_namespace(LEASE_NAMESPACE)
        self._install_crds()
        self._start_kwok()
        if self.with_extender:
            self.start_extender()
        if self.with_scheduler:
            self._start_scheduler()
        if self.with_operator:
            self._start_operator()

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            self._stop_process(name)
        if self.api is not None:
            self.api.close()  # type: ignore[no-untyped-call]
            self.api = None
        if not os.environ.get("TFJOB_E2E_KEEP"):
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def kubernetes_version(self) -> str:
        """The version of the kube-apiserver binary, e.g. `v1.37.1`."""
        printed = subprocess.run(
            [str(self.bin / "kube-apiserver"), "--version"], check=True, capture_output=True, text=True
        ).stdout
        return printed.split()[-1]

    def _workload_api_settings(self) -> tuple[str, tuple[str, ...]]:
        version = self.kubernetes_version()
        minor = ".".join(version.lstrip("v").split(".")[:2])
        if minor not in WORKLOAD_API:
            raise ControlPlaneError(
                f"no settings for the Workload API of Kubernetes {version} (known: {list(WORKLOAD_API)})"
            )
        return WORKLOAD_API[minor]

    def start_extender(self) -> None:
        self._spawn(
            "extender",
            [
                sys.executable,
                "-m",
                "extender",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.extender_port),
                "--kubeconfig",
                str(self.kubeconfig),
                *self.extender_args,
            ],
            env={"PYTHONPATH": str(REPO)},
        )
        wait_until(
            "the extender's /readyz",
            lambda: self._http_ok(f"http://127.0.0.1:{self.extender_port}/readyz"),
            60,
            interval_s=0.1,
        )

    def stop_extender(self) -> None:
        self._stop_process("extender")

    def start_scaler(self, name: str, args: tuple[str, ...], *, command_name: str = "scaler") -> int:
        """A standalone `tfjob-extender scaler` (or `loops`) process; returns the port of its /debug/scaler."""
        port = free_port()
        command = [sys.executable, "-m", "extender", command_name, "--kubeconfig", str(self.kubeconfig)]
        self._spawn(name, [*command, "--port", str(port), *args], env={"PYTHONPATH": str(REPO)})
        wait_until(f"{name}'s /healthz", lambda: self._http_ok(f"http://127.0.0.1:{port}/healthz"), 60, 0.1)
        return port

    def kill(self, name: str) -> None:
        """End a process started here at once (SIGKILL), as a crash would."""
        process = self.processes.pop(name)
        process.kill()
        process.wait(timeout=10)

    def pid(self, name: str) -> int:
        """The process id of a process started here."""
        return self.processes[name].pid

    def stop_process(self, name: str) -> None:
        """End a process started here gracefully (SIGTERM)."""
        self._stop_process(name)

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.run_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- components -------------------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        client_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        self._spawn(
            "etcd",
            [
                str(self.bin / "etcd"),
                "--name=e2e",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=e2e={peer}",
                "--unsafe-no-fsync",
                "--log-level=warn",
                "--listen-metrics-urls=",
            ],
        )
        wait_until("etcd", lambda: self._http_ok(f"{self.etcd_url}/health"), 60)

    def _start_apiserver(self) -> None:
        pki = self.run_dir / "pki"
        pki.mkdir()
        subprocess.run(
            ["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        (pki / "tokens.csv").write_text(f"{self.token},e2e-admin,e2e-admin,system:masters\n")
        self._spawn(
            "kube-apiserver",
            [
                str(self.bin / "kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                f"--cert-dir={pki}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.key'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--v=1",
                *self._gates,
                *self._runtime_config,
            ],
        )
        wait_until(
            "kube-apiserver /readyz",
            lambda: self._http_ok(f"https://127.0.0.1:{self.api_port}/readyz", context=UNVERIFIED_TLS),
            120,
        )
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "e2e",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": f"https://127.0.0.1:{self.api_port}",
                        "certificate-authority": str(pki / "apiserver.crt"),
                    },
                }
            ],
            "users": [{"name": "e2e-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e-admin"}}],
        }
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig))
        self.api = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        wait_until("namespace default", lambda: self.get("/api/v1/namespaces/default"), 60)

    def _install_crds(self) -> None:
        podgroups = [yaml.safe_load(path.read_text()) for path in sorted(PODGROUP_CRDS.glob("*.yaml"))]
        tfjobs = yaml.safe_load((self.crds / "tfjobs.yaml").read_text())
        crds = [*podgroups, tfjobs]
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        for crd in crds:
            self.post(path, crd)
        for crd in crds:
            name = crd["metadata"]["name"]

            def established(name: str = name) -> bool:
                conditions = (self.get(f"{path}/{name}").get("status") or {}).get("conditions") or []
                return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

            wait_until(f"CRD {name} established", established, 60)

    def _start_kwok(self) -> None:
        home = self.run_dir / "kwok-home"
        home.mkdir()
        self._spawn(
            "kwok",
            [
                str(self.bin / "kwok"),
                f"--kubeconfig={self.kubeconfig}",
                f"--config={KWOK_STAGES}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={'='.join(KWOK_NODE_ANNOTATION)}",
                "--manage-nodes-with-label-selector=",
                "--manage-single-node=",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.0/16",
                "--node-ip=10.244.255.254",
                "--server-address=",
            ],
            env={"HOME": str(home)},
        )

    def scheduler_settings(self) -> dict[str, Any]:
        """The repo's kube-scheduler configuration as this control plane runs it: its kubeconfig, no leader
        election, the extender's URL, and the client rate limit given to the constructor, if any."""
        settings: dict[str, Any] = yaml.safe_load(SCHEDULER_CONFIG.read_text())
        settings["clientConnection"]["kubeconfig"] = str(self.kubeconfig)
        if self.scheduler_qps is not None:
            settings["clientConnection"]["qps"] = self.scheduler_qps
        if self.scheduler_burst is not None:
            settings["clientConnection"]["burst"] = self.scheduler_burst
        settings["leaderElection"] = {"leaderElect": False}
        for extender in settings["extenders"]:
            extender["urlPrefix"] = f"http://127.0.0.1:{self.extender_port}"
        return settings

    def start_scheduler(self, name: str, settings: dict[str, Any], verbosity: int = 2) -> int:
        """A kube-scheduler process called `name` with the configuration `settings` (a
        KubeSchedulerConfiguration as a dict); returns its secure port once /healthz answers."""
        path = self.run_dir / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(settings))
        port = free_port()
        self._spawn(
            name,
            [
                str(self.bin / "kube-scheduler"),
                f"--config={path}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--v={verbosity}",
                *self._gates,
            ],
        )
        wait_until(
            f"{name} /healthz",
            lambda: self._http_ok(f"https://127.0.0.1:{port}/healthz", context=UNVERIFIED_TLS),
            60,
        )
        return port

    def _start_scheduler(self) -> None:
        self.start_scheduler("kube-scheduler", self.scheduler_settings())

    def _start_operator(self) -> None:
        self.create_namespace("kubeflow")
        secret = "/api/v1/namespaces/kubeflow/secrets/training-operator-webhook-cert"
        self.post("/api/v1/namespaces/kubeflow/secrets", {"metadata": {"name": "training-operator-webhook-cert"}})
        probe = free_port()
        self._spawn(
            "training-operator",
            [
                str(self.bin / "training-operator.v1"),
                f"--kubeconfig={self.kubeconfig}",
                "--enable-scheme=tfjob",
                f"--gang-scheduler-name={SCHEDULER_NAME}",
                "--leader-elect=false",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{probe}",
                f"--webhook-server-port={free_port()}",
            ],
            env={"TMPDIR": str(self.run_dir)},
        )

        def filled_secret() -> dict[str, str] | None:
            data: dict[str, str] = self.get(secret).get("data") or {}
            return data if "tls.crt" in data and "tls.key" in data else None

        data = wait_until("training-operator's webhook certificate", filled_secret, 90)
        cert_dir = self.run_dir / OPERATOR_CERT_SUBDIR
        cert_dir.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (cert_dir / name).write_bytes(base64.b64decode(data[name]))
        _create_once(OPERATOR_CERT_PROBE, base64.b64decode(data["tls.crt"]))
        wait_until("training-operator /readyz", lambda: self._http_ok(f"http://127.0.0.1:{probe}/readyz"), 120)

    # -- processes --------------------------------------------------------------------------------------

    def restart(self, name: str) -> None:
        """Start a component again with the command it was first started with (after `kill` or a stop)."""
        command, env = self.commands[name]
        self._spawn(name, command, env)

    def _spawn(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        self.commands[name] = (command, env)
        log = (self.run_dir / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, start_new_session=True
        )
        log.close()
        self.processes[name] = process
        time.sleep(0.1)
        if process.poll() is not None:
            raise ControlPlaneError(f"{name} exited at once:\n{self.log_tail(name)}")

    def _stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def http_ok(self, url: str) -> bool:
        """Whether a plain-HTTP GET of `url` answers 200 (False on any failure)."""
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _http_ok(self, url: str, context: ssl.SSLContext | None = None) -> bool:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {process.returncode}:\n{self.log_tail(name)}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    # -- cluster helpers --------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One API call with raw JSON in and out (the client's typed models are not needed here)."""
        assert self.api is not None, "the API server is not running"
        verb, url, headers, payload, _ = self.api.param_serialize(
            method,
            path,
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(verb, url, header_params=headers, body=payload, _request_timeout=30)
        data = response.read()  # type: ignore[no-untyped-call]
        if response.status >= 300:
            raise ApiError(response.status, f"{method} {path}: HTTP {response.status}: {data[:500]!r}")
        return json.loads(data) if data else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def merge_patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def create_namespace(self, name: str) -> None:
        self.post("/api/v1/namespaces", {"metadata": {"name": name}})

    def create_node(
        self,
        name: str,
        *,
        cpu: str = "8",
        memory: str = "32Gi",
        gpu: int = 0,
        pods: int = 110,
        labels: dict[str, str] | None = None,
    ) -> None:
        self.post("/api/v1/nodes", kwok_node(name, cpu=cpu, memory=memory, gpu=gpu, pods=pods, labels=labels))

    def wait_nodes_ready(self, names: list[str], timeout_s: float = 60) -> None:
        def ready() -> bool:
            nodes = {n["metadata"]["name"]: n for n in self.get("/api/v1/nodes")["items"]}
            return all(
                name in nodes
                and any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in nodes[name]["status"].get("conditions") or []
                )
                for name in names
            )

        wait_until(f"nodes {names} Ready", ready, timeout_s)

    def pods(self, namespace: str, selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        return list(self.get(f"/api/v1/namespaces/{namespace}/pods{query}")["items"])

    def create_pod(self, namespace: str, body: dict[str, Any]) -> None:
        self.post(f"/api/v1/namespaces/{namespace}/pods", body)

    def create_tfjob(self, namespace: str, body: dict[str, Any]) -> None:
        self.post(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs", body)
        name = body["metadata"]["name"]
        threading.Thread(
            target=self._nudge_until_pods, args=(namespace, name), name=f"nudge-{name}", daemon=True
        ).start()

    def _nudge_until_pods(self, namespace: str, name: str) -> None:
        """Make training-operator reconcile the TFJob again while it has no pods (see OPERATOR_NUDGE_AFTER_S)."""
        path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}"
        deadline = time.monotonic() + OPERATOR_NUDGE_FOR_S
        nudges = 0
        while time.monotonic() < deadline:
            time.sleep(OPERATOR_NUDGE_AFTER_S)
            try:
                if self.pods(namespace, f"training.kubeflow.org/job-name={name}"):
                    return
                nudges += 1
                self.merge_patch(path, {"metadata": {"annotations": {NUDGE_ANNOTATION: str(nudges)}}})
            except Exception:  # the TFJob or the control plane is gone; a helper thread must never raise
                return

    def delete_tfjob(self, namespace: str, name: str) -> None:
        self.delete(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}")

    def create_podgroup(self, namespace: str, body: dict[str, Any]) -> None:
        group = body["apiVersion"].split("/")[0]
        self.post(f"/apis/{group}/v1alpha1/namespaces/{namespace}/podgroups", body)

    def events(self, namespace: str) -> list[dict[str, Any]]:
        return list(self.get(f"/api/v1/namespaces/{namespace}/events")["items"])


def _create_once(path: Path, content: bytes) -> None:
    """Create `path` whole unless it exists (another control plane may have made it, or be making it)."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    draft.write_bytes(content)
    os.replace(draft, path)


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@contextlib.contextmanager
def local_control_plane(*, with_operator: bool = True) -> Iterator[LocalControlPlane]:
    with LocalControlPlane(build_control_plane(), with_operator=with_operator) as plane:
        yield plane
