"""An API client from a kubeconfig file, in-cluster credentials, or the default kubeconfig; one JSON
request on it (`api_call`, what the actuator, the lease and the plan publisher write with); the reviews an
HTTP listener asks (`ApiReviews`: TokenReview and SubjectAccessReview)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml
from kubernetes import client, config

REQUEST_TIMEOUT_S = 10.0
"""Seconds one request to the API server may take."""
TOKEN_FILE_REREAD_S = 60.0
"""Seconds between two reads of a kubeconfig's `tokenFile` (client-go's period, and the official Python
client's for the in-cluster token)."""


def make_api_client(kubeconfig: str | None) -> client.ApiClient:
    """The official client's ApiClient; nothing is contacted until a request is made. In-cluster, the
    official loader reads the projected token again every minute, as the kubelet rotates it; a kubeconfig
    whose user names a `tokenFile` gets the same (`reread_token_file`), as client-go gives kube-scheduler."""
    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
        token_file = kubeconfig_token_file(Path(kubeconfig))
        if token_file is not None:
            reread_token_file(configuration, token_file)
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)


def kubeconfig_token_file(path: Path) -> Path | None:
    """The `tokenFile` of the current context's user in the kubeconfig at `path` (relative to the file's
    folder), or None."""
    document = yaml.safe_load(path.read_text()) or {}
    context = next(
        (
            c.get("context") or {}
            for c in document.get("contexts") or []
            if c.get("name") == document.get("current-context")
        ),
        {},
    )
    user = next((u.get("user") or {} for u in document.get("users") or [] if u.get("name") == context.get("user")), {})
    token_file = user.get("tokenFile")
    return path.parent / token_file if isinstance(token_file, str) and token_file else None


def reread_token_file(
    configuration: client.Configuration, token_file: Path, clock: Callable[[], float] = time.monotonic
) -> None:
    """Bear the token in `token_file` (stripped of surrounding whitespace, as client-go strips it), read now
    and again before a request once `TOKEN_FILE_REREAD_S` have passed since the last read; a file that
    cannot be read, or is empty, leaves the last token in use."""
    read_at = clock()

    def read(configured: client.Configuration) -> None:
        try:
            token = token_file.read_text().strip()
        except OSError:
            return
        if token:
            configured.api_key["BearerToken"] = f"Bearer {token}"

    def refresh(configured: client.Configuration) -> None:
        nonlocal read_at
        now = clock()
        if now - read_at >= TOKEN_FILE_REREAD_S:
            read_at = now
            read(configured)

    read(configuration)
    configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]  # the stubs type the hook as None


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
