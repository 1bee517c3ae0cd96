"""training-operator in the local control plane: started with the gang scheduler name the extender serves.

Its webhook server wants a certificate it generates itself into a Secret; the certificate is copied to
where this control plane's operator reads it (under its own TMPDIR) and to the fixed path its
certificate rotator waits for before it reports ready.
"""

from __future__ import annotations

import base64
from pathlib import Path

from extender.devcluster.access import PlaneAccess
from extender.devcluster.objects import SCHEDULER_NAME
from extender.devcluster.processes import create_once, free_port, wait_until

OPERATOR_CERT_SUBDIR = Path("k8s-webhook-server/serving-certs")
"""Where training-operator's webhook server reads its certificate, under its TMPDIR (one per control plane, so
two control planes on one machine never serve each other's certificate)."""
OPERATOR_CERT_PROBE = Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
"""The file training-operator's certificate rotator waits for before it reports ready: a fixed path
(`pkg/cert/cert.go` of v1.9.4), whatever TMPDIR says. Only its existence is checked, never its content."""


def start_operator(plane: PlaneAccess) -> None:
    plane.create_namespace("kubeflow")
    secret = "/api/v1/namespaces/kubeflow/secrets/training-operator-webhook-cert"
    plane.post("/api/v1/namespaces/kubeflow/secrets", {"metadata": {"name": "training-operator-webhook-cert"}})
    probe = free_port()
    plane.spawn(
        "training-operator",
        [
            str(plane.bin / "training-operator.v1"),
            f"--kubeconfig={plane.kubeconfig}",
            "--enable-scheme=tfjob",
            f"--gang-scheduler-name={SCHEDULER_NAME}",
            "--leader-elect=false",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{probe}",
            f"--webhook-server-port={free_port()}",
        ],
        env={"TMPDIR": str(plane.run_dir)},
    )

    def filled_secret() -> dict[str, str] | None:
        data: dict[str, str] = plane.get(secret).get("data") or {}
        return data if "tls.crt" in data and "tls.key" in data else None

    data = wait_until("training-operator's webhook certificate", filled_secret, 90)
    cert_dir = plane.run_dir / OPERATOR_CERT_SUBDIR
    cert_dir.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        (cert_dir / name).write_bytes(base64.b64decode(data[name]))
    create_once(OPERATOR_CERT_PROBE, base64.b64decode(data["tls.crt"]))
    wait_until("training-operator /readyz", lambda: plane.probe(f"http://127.0.0.1:{probe}/readyz"), 120)
