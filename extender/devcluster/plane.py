"""A real, local Kubernetes control plane for the end-to-end tests, the demo and `tfjob-extender dev-cluster`.

`LocalControlPlane` starts, on 127.0.0.1 with free ports: etcd, kube-apiserver (token auth, no
ServiceAccount / TaintNodesByCondition / PodGroupProtection admission, since no controller-manager runs),
the TFJob CRD and the CRDs of `manifests/crds/` (both PodGroup groups, ClusterNetworkTopology), kwok (fake
nodes whose pods run and complete on cue), the extender, a kube-scheduler with the repo's `scheduler-config/`
(profile `tfjob-scheduler` calling the extender), and optionally training-operator with
`--gang-scheduler-name=tfjob-scheduler` (`operator.py`) and Kueue admitting TFJobs (`kueue.py`, built by
`hack/build-kueue.sh`). Binaries come from `hack/build-control-plane.sh`
(built once, cached outside the repo; see `resources`). Every process logs into the run directory;
`stop()` ends exactly the processes it started, in reverse order. What a running control plane offers the
pieces started against it (its directories, kubeconfigs, CRD installation) is `PlaneAccess` (`access.py`).

With `workload_api=True` the API server serves Kubernetes' own gang API (`scheduling.k8s.io` Workload and PodGroup)
and kube-scheduler gates gangs itself: the feature gates and API version of the release the binaries are (see
`WORKLOAD_API`); a release missing from that table is refused. A kube-scheduler started later runs with those gates
unless it is given its own (`start_scheduler(feature_gates=...)`: none, say, for a scheduler that should not see
Kubernetes' own gangs). `apiserver_args` adds flags to kube-apiserver's command (an audit log, say).
`service_account_kubeconfig` writes a kubeconfig holding a ServiceAccount's token from the TokenRequest API, for a
process that should run as that account rather than as the administrator.

With `native_gangs=True` the extender gives every TFJob naming the scheduler Kubernetes' own gang
(`--native-gangs on`): its admission webhook listens on 127.0.0.1:`webhook_port`, registered by URL with the CA
the extender made (`webhook.py`); with `webhook=False` the listener is not started and the registration points
at a port nobody serves, as when the webhook is down. `native_gangs` implies `workload_api` unless it is given
`False`: a 1.37 cluster without the gate, where the extender keeps its own barrier.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from kubernetes import config

from extender.devcluster.access import PlaneAccess
from extender.devcluster.controllers import DEFAULT_SCHEDULER, default_scheduler_settings, start_controller_manager
from extender.devcluster.kueue import build_kueue, start_kueue
from extender.devcluster.objects import KWOK_NODE_ANNOTATION, SCHEDULER_NAME
from extender.devcluster.operator import start_operator
from extender.devcluster.processes import (
    UNVERIFIED_TLS,
    ControlPlaneError,
    free_port,
    run_build_script,
    wait_until,
)
from extender.devcluster.resources import KWOK_STAGES, Source, scheduler_settings_for, source
from extender.devcluster.webhook import native_gang_flags, register_webhook, wait_for_ca_bundle

LEASE_NAMESPACE = "tfjob-system"
"""Where the extender's loops elect their one active instance (as in manifests/namespace.yaml)."""
WORKLOAD_API = {
    "1.37": ("scheduling.k8s.io/v1beta1", ("GenericWorkload",)),
    "1.36": ("scheduling.k8s.io/v1alpha2", ("GenericWorkload", "GangScheduling")),
}
"""Kubernetes minor → the `scheduling.k8s.io` version serving Workloads and PodGroups, and the feature gates
that turn them and kube-scheduler's GangScheduling plugin on (1.37 folds GangScheduling into
GenericWorkload; 1.36 has both, alpha)."""
ADMISSION_OFF = ("ServiceAccount", "TaintNodesByCondition")
"""Admission plugins kube-apiserver runs without: no controller-manager runs to finish what they start."""
PODGROUP_PROTECTION = {"1.37": "PodGroupProtection"}
"""Kubernetes minor → its admission plugin putting a finalizer on every PodGroup that only kube-controller-manager
takes off (its podgroup-protection controller): off with the Workload API, so a deleted PodGroup goes at once."""


def build_control_plane() -> Path:
    """Build (or reuse) the binaries and CRDs; returns the cache directory."""
    return run_build_script(source().build_script)


class LocalControlPlane(PlaneAccess):
    def __init__(
        self,
        cache: Path,
        *,
        with_operator: bool = True,
        with_kueue: bool = False,
        run_dir: Path | None = None,
        extender_args: tuple[str, ...] = (),
        scheduler_qps: float | None = None,
        scheduler_burst: int | None = None,
        with_extender: bool = True,
        with_scheduler: bool = True,
        workload_api: bool | None = None,
        apiserver_args: tuple[str, ...] = (),
        native_gangs: bool = False,
        webhook: bool = True,
        with_controller_manager: bool = False,
    ) -> None:
        """`scheduler_qps` / `scheduler_burst`: kube-scheduler's client rate limit (`clientConnection`),
        instead of the one in `scheduler-config/`. Without `with_extender` / `with_scheduler` the control
        plane starts without the extender / kube-scheduler (a caller may start them later);
        `with_controller_manager` adds kube-controller-manager and a default-profile kube-scheduler
        (`controllers`).
        `apiserver_args`: flags appended to kube-apiserver's command. `workload_api`: by default as
        `native_gangs`."""
        self.source: Source = source()
        self.with_extender = with_extender
        self.with_scheduler = with_scheduler
        self.extender_args = extender_args
        self.scheduler_qps = scheduler_qps
        self.scheduler_burst = scheduler_burst
        self.workload_api = native_gangs if workload_api is None else workload_api
        self.native_gangs = native_gangs
        self.webhook = webhook
        self.apiserver_args = apiserver_args
        self.workload_api_version = ""
        """With `workload_api`: the `apiVersion` of the served Workloads and PodGroups, once started."""
        self._gate_names: tuple[str, ...] = ()
        self._runtime_config: tuple[str, ...] = ()
        self._admission_off: tuple[str, ...] = ADMISSION_OFF
        self.with_operator = with_operator
        self.with_kueue = with_kueue
        self.with_controller_manager = with_controller_manager
        super().__init__(cache, run_dir)
        self.extender_port = free_port()
        """The extender's verb listener: the verbs kube-scheduler calls, and the probes."""
        self.observe_port = free_port()
        """The extender's observe listener, on 127.0.0.1 with its debug routes: `/debug`, `/ui`, explain,
        `/metrics` (and the probes)."""
        self.webhook_port = free_port()
        """With `native_gangs`: the extender's admission webhook listener (TLS), on 127.0.0.1."""

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
            minor = self._workload_api_minor()
            self.workload_api_version, self._gate_names = WORKLOAD_API[minor]
            self._runtime_config = (f"--runtime-config={self.workload_api_version}=true",)
            self._admission_off = admission_off(minor)
        self._start_etcd()
        self._start_apiserver()
        self.create_namespace(LEASE_NAMESPACE)
        self._install_crds()
        self._start_kwok()
        if self.with_controller_manager:
            start_controller_manager(self)
            self.start_scheduler(DEFAULT_SCHEDULER, default_scheduler_settings(self))
        if self.native_gangs:
            register_webhook(self, self.webhook_port, SCHEDULER_NAME)
        if self.with_extender:
            self.start_extender()
        if self.with_scheduler:
            self.start_scheduler("kube-scheduler", self.scheduler_settings())
        if self.with_operator:
            start_operator(self)
        if self.with_kueue:
            start_kueue(self, build_kueue())

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            self._stop_process(name)
        if self.api is not None:
            self.api.close()  # type: ignore[no-untyped-call]
            self.api = None
        if not os.environ.get("TFJOB_E2E_KEEP"):
            shutil.rmtree(self.run_dir, ignore_errors=True)

    @property
    def feature_gates(self) -> tuple[str, ...]:
        """The feature gates kube-apiserver runs with, and kube-scheduler unless told otherwise (none without
        `workload_api`), once started."""
        return self._gate_names

    @property
    def feature_gate_args(self) -> tuple[str, ...]:
        """The `--feature-gates` flag kube-apiserver and kube-scheduler run with (none without
        `workload_api`), once started: what a kube-scheduler started elsewhere must be given too."""
        return feature_gate_flag(self._gate_names)

    def _workload_api_minor(self) -> str:
        version = self.kubernetes_version()
        minor = ".".join(version.lstrip("v").split(".")[:2])
        if minor not in WORKLOAD_API:
            raise ControlPlaneError(f"no settings for the Workload API of {version} (known: {list(WORKLOAD_API)})")
        return minor

    def start_extender(self, *, native_gangs: bool | None = None) -> None:
        """The extender (`serve`); `native_gangs`: in native mode or not, instead of as the plane was made
        (a caller that turns it on registers the webhook first, `register_webhook`)."""
        native = self.native_gangs if native_gangs is None else native_gangs
        flags = native_gang_flags(self.webhook_port if self.webhook else 0) if native else ()
        command = [sys.executable, "-m", "extender", "serve", "--host", "127.0.0.1", "--port", str(self.extender_port)]
        command += ["--observe-port", str(self.observe_port), "--observe-host", "127.0.0.1", "--observe-debug"]
        command += ["--kubeconfig", str(self.kubeconfig), *flags, *self.extender_args]
        self.spawn("extender", command, env={"PYTHONPATH": str(self.source.root)})
        readyz = f"http://127.0.0.1:{self.extender_port}/readyz"
        wait_until("the extender's /readyz", lambda: self.probe(readyz), 60, interval_s=0.1)
        if native and self.webhook:
            wait_for_ca_bundle(self)

    @property
    def observe_url(self) -> str:
        """Where the extender's debug routes, page, explain and metrics are read."""
        return f"http://127.0.0.1:{self.observe_port}"

    def stop_extender(self) -> None:
        self._stop_process("extender")

    def start_scaler(self, name: str, args: tuple[str, ...], *, command_name: str = "scaler") -> int:
        """A standalone `tfjob-extender scaler` (or `loops`) process; returns the port of its /debug/scaler."""
        port = free_port()
        command = [sys.executable, "-m", "extender", command_name, "--kubeconfig", str(self.kubeconfig)]
        self.spawn(name, [*command, "--port", str(port), *args], env={"PYTHONPATH": str(self.source.root)})
        wait_until(f"{name}'s /healthz", lambda: self.probe(f"http://127.0.0.1:{port}/healthz"), 60, 0.1)
        return port

    # -- components -------------------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        client_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        self.spawn(
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
        wait_until("etcd", lambda: self.probe(f"{self.etcd_url}/health"), 60)

    def _start_apiserver(self) -> None:
        pki = self.run_dir / "pki"
        pki.mkdir()
        key_command = ["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"]
        subprocess.run(key_command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (pki / "tokens.csv").write_text(f"{self.token},e2e-admin,e2e-admin,system:masters\n")
        self.spawn(
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
                f"--disable-admission-plugins={','.join(self._admission_off)}",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--v=1",
                *self.feature_gate_args,
                *self._runtime_config,
                *self.apiserver_args,
            ],
        )
        wait_until(
            "kube-apiserver /readyz",
            lambda: self.probe(f"https://127.0.0.1:{self.api_port}/readyz", context=UNVERIFIED_TLS),
            120,
        )
        self.write_kubeconfig(self.kubeconfig, "e2e-admin", self.token)
        self.api = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        wait_until("namespace default", lambda: self.get("/api/v1/namespaces/default"), 60)

    def _install_crds(self) -> None:
        podgroups = [yaml.safe_load(path.read_text()) for path in self.source.crd_files]
        tfjobs = yaml.safe_load((self.crds / "tfjobs.yaml").read_text())
        self.install_crds([*podgroups, tfjobs])

    def _start_kwok(self) -> None:
        home = self.run_dir / "kwok-home"
        home.mkdir()
        self.spawn(
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
        election, the extender's URL, the client rate limit given to the constructor, if any, and only the
        extension points its release has."""
        loaded = yaml.safe_load(self.source.scheduler_config.read_text())
        settings = scheduler_settings_for(loaded, self.kubernetes_version())
        settings["clientConnection"]["kubeconfig"] = str(self.kubeconfig)
        if self.scheduler_qps is not None:
            settings["clientConnection"]["qps"] = self.scheduler_qps
        if self.scheduler_burst is not None:
            settings["clientConnection"]["burst"] = self.scheduler_burst
        settings["leaderElection"] = {"leaderElect": False}
        for extender in settings["extenders"]:
            extender["urlPrefix"] = f"http://127.0.0.1:{self.extender_port}"
        return settings

    def start_scheduler(
        self,
        name: str,
        settings: dict[str, Any],
        verbosity: int = 2,
        *,
        binary: Path | None = None,
        extra_args: tuple[str, ...] = (),
        feature_gates: tuple[str, ...] | None = None,
    ) -> int:
        """A kube-scheduler process called `name` with the configuration `settings` (a
        KubeSchedulerConfiguration as a dict); returns its secure port once /healthz answers. `binary`: another
        build of kube-scheduler (one with out-of-tree plugins registered) instead of the control plane's;
        `extra_args`: more command-line flags; `feature_gates`: the gates it runs with, each turned on (by
        default the control plane's own, `feature_gates`)."""
        gates = self._gate_names if feature_gates is None else feature_gates
        path = self.run_dir / f"{name}-config.yaml"
        path.write_text(yaml.safe_dump(settings))
        port = free_port()
        self.spawn(
            name,
            [
                str(binary or self.bin / "kube-scheduler"),
                f"--config={path}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--v={verbosity}",
                *feature_gate_flag(gates),
                *extra_args,
            ],
        )
        wait_until(
            f"{name} /healthz",
            lambda: self.probe(f"https://127.0.0.1:{port}/healthz", context=UNVERIFIED_TLS),
            60,
        )
        return port


def admission_off(workload_api_minor: str) -> tuple[str, ...]:
    """The admission plugins kube-apiserver runs without when it serves the Workload API of that minor."""
    protection = PODGROUP_PROTECTION.get(workload_api_minor)
    return (*ADMISSION_OFF, protection) if protection else ADMISSION_OFF


def feature_gate_flag(gates: tuple[str, ...]) -> tuple[str, ...]:
    """The `--feature-gates` flag turning `gates` on; no flag for no gates."""
    return (f"--feature-gates={','.join(f'{gate}=true' for gate in gates)}",) if gates else ()


@contextlib.contextmanager
def local_control_plane(*, with_operator: bool = True) -> Iterator[LocalControlPlane]:
    with LocalControlPlane(build_control_plane(), with_operator=with_operator) as plane:
        yield plane
