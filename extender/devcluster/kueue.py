"""Kueue in the local control plane: its controller manager admitting TFJobs, its webhooks served on 127.0.0.1.

`hack/build-kueue.sh` builds `sigs.k8s.io/kueue/cmd/kueue` from the Go module proxy into a cache keyed by its
version, with its CRDs and its webhook configurations. `start_kueue` installs the CRDs, writes Kueue's
configuration (only the `kubeflow.org/tfjob` integration, which Kueue leaves off by default; no leader
election; health and metrics on free loopback ports; the visibility API server off; the alpha gate
`PriorityBoost` on, so the priority boost the preemption loop may write is read) and starts the
manager against this control plane. There is no Service to reach a webhook through (no kube-proxy, no
cluster network), so the webhook configurations are registered with `clientConfig.url`
(`https://127.0.0.1:PORT/PATH`) and the caBundle of a CA made here with openssl, whose serving
certificate (IP SAN 127.0.0.1) Kueue reads from its cert dir, its internal certificate management off.
Only the webhooks of Kueue's own kinds and of TFJobs are registered: every other integration is off.
With its certificate management off Kueue's metrics server reads a certificate from a fixed path
(`METRICS_CERT_DIR`); one is written there when there is none (only for that server's TLS).
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import yaml

from extender.devcluster.access import PlaneAccess
from extender.devcluster.processes import ControlPlaneError, create_once, free_port, run_build_script, wait_until
from extender.devcluster.resources import source

KUEUE_NAMESPACE = "kueue-system"
TFJOB_FRAMEWORK = "kubeflow.org/tfjob"
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
"""Where Kueue v0.17's metrics server reads its certificate when its internal certificate management is
off (`cmd/kueue/main.go`): a fixed path."""
WEBHOOK_RESOURCES = frozenset(
    {"tfjobs", "workloads", "resourceflavors", "clusterqueues", "localqueues", "cohorts", "topologies"}
)
"""The resources whose webhooks are registered: Kueue's own kinds and TFJobs."""
READY_TIMEOUT_S = 120.0
"""Seconds Kueue has to report ready on its health port."""
CA_SUBJECT = "/CN=tfjob-extender local Kueue webhook CA"
CERT_DAYS = 2
"""Validity of the CA and serving certificate made for one control plane, days."""


def build_kueue() -> Path:
    """Build (or reuse) Kueue; returns its cache directory (`bin/kueue`, `crds/`, `webhooks.yaml`)."""
    return run_build_script(source().kueue_build_script)


def start_kueue(plane: PlaneAccess, cache: Path) -> None:
    plane.install_crds([yaml.safe_load(path.read_text()) for path in sorted((cache / "crds").glob("*.yaml"))])
    plane.create_namespace(KUEUE_NAMESPACE)
    certs = plane.run_dir / "kueue-certs"
    ca = _make_certificates(certs)
    create_once(METRICS_CERT_DIR / "tls.crt", (certs / "tls.crt").read_bytes())
    create_once(METRICS_CERT_DIR / "tls.key", (certs / "tls.key").read_bytes())
    webhook_port, health_port = free_port(), free_port()
    settings = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": KUEUE_NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "integrations": {"frameworks": [TFJOB_FRAMEWORK]},
    }
    config = plane.run_dir / "kueue-config.yaml"
    config.write_text(yaml.safe_dump(settings))
    plane.spawn(
        "kueue",
        [
            str(cache / "bin" / "kueue"),
            f"--config={config}",
            f"--kubeconfig={plane.kubeconfig}",
            "--feature-gates=VisibilityOnDemand=false,PriorityBoost=true",
        ],
    )
    wait_until("Kueue /readyz", lambda: plane.probe(f"http://127.0.0.1:{health_port}/readyz"), READY_TIMEOUT_S)
    for kind, body in _webhook_configurations(cache / "webhooks.yaml", webhook_port, ca):
        plane.post(f"/apis/admissionregistration.k8s.io/v1/{kind}", body)


def _make_certificates(folder: Path) -> bytes:
    """A CA and a serving certificate for 127.0.0.1 signed by it (`tls.crt`, `tls.key`); returns the CA's
    certificate (PEM)."""
    folder.mkdir(parents=True)
    days = str(CERT_DAYS)

    def openssl(*args: str) -> None:
        done = subprocess.run(["openssl", *args], check=False, cwd=folder, capture_output=True, text=True)
        if done.returncode != 0:
            raise ControlPlaneError(f"openssl {args[0]} failed for Kueue's webhook certificate: {done.stderr[-500:]}")

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        days,
        "-subj",
        CA_SUBJECT,
    )
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=127.0.0.1")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl(
        "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "tls.crt", "-days", days, "-extfile", "san.ext",
    )  # fmt: skip
    return (folder / "ca.crt").read_bytes()


def _webhook_configurations(manifests: Path, port: int, ca: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Kueue's webhook configurations, named `kueue-…`, reduced to `WEBHOOK_RESOURCES`, each webhook
    called at `https://127.0.0.1:PORT/PATH` and trusting `ca`."""
    bundle = base64.b64encode(ca).decode()
    configurations = []
    for document in yaml.safe_load_all(manifests.read_text()):
        if not document:
            continue
        webhooks = []
        for webhook in document["webhooks"]:
            resources = {resource for rule in webhook["rules"] for resource in rule["resources"]}
            if not {resource.split("/")[0] for resource in resources} & WEBHOOK_RESOURCES:
                continue
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            webhook.pop("namespaceSelector", None)
            webhooks.append(webhook)
        kind = (
            "mutatingwebhookconfigurations"
            if document["kind"].startswith("Mutating")
            else "validatingwebhookconfigurations"
        )
        body = {**document, "metadata": {"name": f"kueue-{document['metadata']['name']}"}, "webhooks": webhooks}
        configurations.append((kind, body))
    return configurations
