"""An API client from a kubeconfig file, in-cluster credentials, or the default kubeconfig; one JSON
request on it (`api_call`, what the actuator, the lease and the plan publisher write with); a TokenReview
caller."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from kubernetes import client, config

REQUEST_TIMEOUT_S = 10.0
"""Seconds one request to the API server may take."""


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


class ApiCallError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def api_call(
    api: client.ApiClient, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> Any:
    """One JSON request to the API server; raises `ApiCallError` for any status from 300 up."""
    verb, url, headers, payload, _ = api.param_serialize(
        method,
        path,
        header_params={"Accept": "application/json", "Content-Type": content_type},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(verb, url, header_params=headers, body=payload, _request_timeout=REQUEST_TIMEOUT_S)
    data = response.read()  # type: ignore[no-untyped-call]
    if response.status >= 300:
        raise ApiCallError(response.status, f"{method} {path}: HTTP {response.status}: {data[:300]!r}")
    return orjson.loads(data) if data else None
