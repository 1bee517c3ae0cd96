"""An API client from a kubeconfig file, in-cluster credentials, or the default kubeconfig; one JSON
request on it (`api_call`, what the actuator, the lease and the plan publisher write with); the reviews an
HTTP listener asks (`ApiReviews`: TokenReview and SubjectAccessReview)."""

from __future__ import annotations

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


class ApiReviews:
    """The API server's reviews an HTTP listener asks (`extender.api.auth.Reviewer`): TokenReview, and a
    SubjectAccessReview of `get` on a Service's `services/proxy`."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client

    def __call__(self, token: str, audiences: tuple[str, ...]) -> tuple[bool, str, tuple[str, ...]]:
        spec: dict[str, Any] = {"token": token}
        if audiences:
            spec["audiences"] = list(audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        answer = api_call(self.api_client, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", body) or {}
        status = answer.get("status") or {}
        user = status.get("user") or {}
        groups = tuple(str(group) for group in user.get("groups") or ())
        return bool(status.get("authenticated")), str(user.get("username") or ""), groups

    def may_proxy(self, user: str, groups: tuple[str, ...], namespace: str, service: str) -> bool:
        attributes = {"namespace": namespace, "verb": "get", "resource": "services", "subresource": "proxy"}
        spec = {"user": user, "groups": list(groups), "resourceAttributes": {**attributes, "name": service}}
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
        return bool(((api_call(self.api_client, "POST", path, body) or {}).get("status") or {}).get("allowed"))


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
