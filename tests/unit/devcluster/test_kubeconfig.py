"""The kubeconfigs the local control plane writes (its administrator's, a ServiceAccount's) reach its API server
over TLS, trusting its own serving certificate, with the bearer token given, or a token file its clients read
again as it rotates."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client, config

from extender.devcluster import LocalControlPlane
from extender.devcluster.access import token_file_of


def test_a_kubeconfig_names_the_api_server_its_certificate_and_the_token(tmp_path: Path) -> None:
    plane = LocalControlPlane(tmp_path / "cache", run_dir=tmp_path / "run")
    plane.certificate_authority.parent.mkdir(parents=True)
    plane.certificate_authority.write_text("what kube-apiserver writes into its --cert-dir")
    path = plane.write_kubeconfig(tmp_path / "loops.kubeconfig", "system:serviceaccount:ns:loops", "t0ken")
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=configuration)  # type: ignore[no-untyped-call]
    assert configuration.host == f"https://127.0.0.1:{plane.api_port}"
    assert configuration.ssl_ca_cert == str(plane.certificate_authority)
    assert "Bearer t0ken" in configuration.api_key.values()
    assert plane.feature_gate_args == (), "no feature gates before a Workload API plane starts"


def test_a_token_file_kubeconfig_names_the_file_for_its_clients_to_read_again(tmp_path: Path) -> None:
    plane = LocalControlPlane(tmp_path / "cache", run_dir=tmp_path / "run")
    token = tmp_path / "loops.token"
    token.write_text("t0ken\n")
    path = plane.write_kubeconfig(tmp_path / "loops.kubeconfig", "system:serviceaccount:ns:loops", token)
    assert yaml.safe_load(path.read_text())["users"][0]["user"] == {"tokenFile": str(token)}
    assert token_file_of(path) == token
