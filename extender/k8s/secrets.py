"""Read and write a Secret of PEM texts kept by a process of the extender (the webhook's and the verbs'
certificates): `read` gives its keys' texts (None: no such Secret), `write` creates it or replaces its keys
under the resourceVersion that was read, so of two replicas racing one wins and the other reads the
winner's next round."""

from __future__ import annotations

import base64
from typing import Any

from kubernetes.client import ApiClient

from extender.k8s.client import api_call
from extender.k8s.reads import get_or_none


def path_of(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/secrets/{name}"


def texts(secret: dict[str, Any] | None) -> dict[str, str]:
    """Key → text of every key of `secret` ({} for none)."""
    data = (secret or {}).get("data") or {}
    return {key: base64.b64decode(value).decode() for key, value in data.items() if value}


def encoded(values: dict[str, str]) -> dict[str, str]:
    """A Secret's `data` holding `values` (key → text)."""
    return {key: base64.b64encode(text.encode()).decode("ascii") for key, text in values.items()}


def read(api: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    return get_or_none(api, path_of(namespace, name))


def write(
    api: ApiClient, namespace: str, name: str, read_before: dict[str, Any] | None, values: dict[str, str]
) -> None:
    """Create the Secret with `values` (key → text), or replace those keys of the one read before."""
    data = encoded(values)
    if read_before is None:
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": data,
        }
        api_call(api, "POST", f"/api/v1/namespaces/{namespace}/secrets", body)
        return
    read_before["data"] = {**(read_before.get("data") or {}), **data}
    api_call(api, "PUT", path_of(namespace, name), read_before)
