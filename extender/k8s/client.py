"""An API client from a kubeconfig file, in-cluster credentials, or the default kubeconfig."""

from __future__ import annotations

from kubernetes import client, config


def make_api_client(kubeconfig: str | None) -> client.ApiClient:
    """The official client's ApiClient; nothing is contacted until a request is made."""
    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)
