"""A local control plane as its components and its users reach it: its files, its API server, its processes.

`PlaneAccess` holds what every piece started against the control plane needs, whoever starts it: the
binaries' cache (`bin`, `crds`), the run directory every process logs into, the administrator's token and
kubeconfig, the API server's port and certificate, the raw-JSON client (`ClusterClient`) and the named
processes (`ProcessGroup`). `LocalControlPlane` (`plane`) builds on it to start etcd, kube-apiserver,
kwok, kube-scheduler and the extender; training-operator (`operator`) and Kueue (`kueue`) start against
a `PlaneAccess`, so neither needs the module that starts them.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from extender.devcluster.objects import ClusterClient
from extender.devcluster.processes import ProcessGroup, free_port, wait_until

SERVICE_ACCOUNT_TOKEN_S = 3600
"""Lifetime of the ServiceAccount tokens `service_account_kubeconfig` requests, in seconds: as long as the
kubelet's projected tokens, far longer than any run of the control plane."""


def token_file_of(kubeconfig: Path) -> Path:
    """Where `service_account_kubeconfig` keeps the token of the kubeconfig at `kubeconfig`."""
    return kubeconfig.with_suffix(".token")


class PlaneAccess(ClusterClient, ProcessGroup):
    def __init__(self, cache: Path, run_dir: Path | None) -> None:
        """`cache`: the directory `hack/build-control-plane.sh` built; `run_dir`: where state and logs go
        (None: a fresh temporary directory)."""
        self.bin = cache / "bin"
        self.crds = cache / "crds"
        self.run_dir = run_dir or Path(tempfile.mkdtemp(prefix="tfjob-e2e-"))
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.commands: dict[str, tuple[list[str], dict[str, str] | None]] = {}
        self.token = secrets.token_hex(24)
        self.api_port = free_port()
        self.kubeconfig = self.run_dir / "admin.kubeconfig"
        self.api = None

    @property
    def certificate_authority(self) -> Path:
        """The API server's self-signed serving certificate, which its clients trust."""
        return self.run_dir / "pki" / "apiserver.crt"

    def write_kubeconfig(self, path: Path, user: str, token: str | Path) -> Path:
        """A kubeconfig at `path` that reaches this API server with the bearer `token` (as `user`); a `Path`
        is a token file (`tokenFile`), which clients read again as it changes, as a kubelet rotates a pod's."""
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "e2e",
            "clusters": [
                {
                    "name": "e2e",
                    "cluster": {
                        "server": f"https://127.0.0.1:{self.api_port}",
                        "certificate-authority": str(self.certificate_authority),
                    },
                }
            ],
            "users": [
                {"name": user, "user": {"tokenFile": str(token)} if isinstance(token, Path) else {"token": token}}
            ],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
        }
        path.write_text(yaml.safe_dump(kubeconfig))
        return path

    def service_account_kubeconfig(
        self, namespace: str, account: str, path: Path, bound_secret: str | None = None
    ) -> Path:
        """A kubeconfig at `path` whose token file (`token_file_of(path)`) holds a token of the ServiceAccount
        `namespace/account` from the TokenRequest API (valid for `SERVICE_ACCOUNT_TOKEN_S`; with
        `bound_secret`, only while that Secret of the namespace exists)."""
        token_file = token_file_of(path)
        token_file.write_text(self.request_token(namespace, account, SERVICE_ACCOUNT_TOKEN_S, bound_secret))
        return self.write_kubeconfig(path, f"system:serviceaccount:{namespace}:{account}", token_file)

    def kubernetes_version(self) -> str:
        """The version of the kube-apiserver binary, e.g. `v1.37.1`."""
        printed = subprocess.run(
            [str(self.bin / "kube-apiserver"), "--version"], check=True, capture_output=True, text=True
        ).stdout
        return printed.split()[-1]

    def install_crds(self, crds: list[dict[str, Any]]) -> None:
        """Create these CRDs and wait until each is established."""
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        for crd in crds:
            self.post(path, crd)
        for crd in crds:
            name = crd["metadata"]["name"]

            def established(name: str = name) -> bool:
                conditions = (self.get(f"{path}/{name}").get("status") or {}).get("conditions") or []
                return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

            wait_until(f"CRD {name} established", established, 60)
