"""An API client from a kubeconfig file, in-cluster credentials, or the default kubeconfig; a TokenReview
caller on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def token_reviewer(api_client: client.ApiClient) -> Callable[[str, tuple[str, ...]], tuple[bool, str]]:
    """Whether the API server authenticates a bearer token (a TokenReview), and as which user."""
    from extender.k8s.actuator import api_call

    def review(token: str, audiences: tuple[str, ...]) -> tuple[bool, str]:
        spec: dict[str, Any] = {"token": token}
        if audiences:
            spec["audiences"] = list(audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        status = (api_call(api_client, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", body) or {}).get(
            "status"
        ) or {}
        return bool(status.get("authenticated")), str((status.get("user") or {}).get("username") or "")

    return review
