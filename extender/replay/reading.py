"""Where a replay's Nodes and TFJobs come from: a `/debug/state` dump (or any file of manifests), or the API server.

A dump is read with the model's own file reader (`read_documents`); a file that cannot be read is `Unreadable`
(exit 2). From the API server, read-only, one request at a time on the client `make_api_client` makes, through
`api_call`: the server's version first (no answer, or credentials refused, is `Unreachable`, exit 3), then every
Node and every TFJob (of one namespace when asked), paged. A list the server refuses (no TFJob API, or no right to
list) is `Unreadable`; a connection lost midway is `Unreachable`. The items of a list carry no `kind`: it is set
here, so the conversion sees manifests either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client

from extender.k8s.client import ApiCallError
from extender.k8s.reads import CONNECTION_ERRORS, NOT_FOUND, Unreachable, list_all, server_version
from extender.state.manifests import SnapshotFileError, read_documents

NODES_PATH = "/api/v1/nodes"
TFJOBS_PATH = "/apis/kubeflow.org/v1/tfjobs"
KINDS = ("Node", "TFJob")
"""The kinds a replay reads (a dump's pods, PodGroups and PriorityClasses are not replayed)."""


class Unreadable(ValueError):
    """The input cannot be read: a file that is not manifests, or a list the API server refuses."""


def from_dump(path: Path) -> list[dict[str, Any]]:
    """The Nodes and TFJobs of a `/debug/state` dump or any YAML or JSON file of manifests."""
    try:
        return [document for document in read_documents(path) if document.get("kind") in KINDS]
    except SnapshotFileError as error:
        raise Unreadable(str(error)) from error


def from_api(api: client.ApiClient, namespace: str = "") -> list[dict[str, Any]]:
    """Every Node and every TFJob (of `namespace` when given) from the API server."""
    tfjobs = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs" if namespace else TFJOBS_PATH
    try:
        server_version(api)
        return _listed(api, NODES_PATH, "Node") + _listed(api, tfjobs, "TFJob")
    except CONNECTION_ERRORS as error:
        raise Unreachable(f"cannot reach the API server: {error}") from error


def _listed(api: client.ApiClient, path: str, kind: str) -> list[dict[str, Any]]:
    try:
        items = list_all(api, path)
    except ApiCallError as error:
        if error.status == NOT_FOUND and kind == "TFJob":
            raise Unreadable(f"the API server has no TFJob API (is training-operator installed?): {error}") from error
        raise Unreadable(f"cannot list {kind}s: {error}") from error
    return [{**item, "kind": kind} for item in items]
