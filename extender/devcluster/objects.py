"""Talking to the local control plane's API server with raw JSON: objects in, objects out.

`ClusterClient` is what the tests, the demo and `dev-cluster` use to create namespaces, kwok nodes, TFJobs,
PodGroups and pods and to read them back. training-operator v1.9.4 can leave a new TFJob without pods for
good (see `OPERATOR_NUDGE_AFTER_S`), so `create_tfjob` looks after each new TFJob for a while.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from typing import Any

from kubernetes import client

from extender.devcluster.processes import wait_until

OPERATOR_NUDGE_AFTER_S = 3.0
"""training-operator v1.9.4 can leave a new TFJob without pods for good: when its cache misses the PodGroup
it has just created on two reconciles within one second, the second writes an unchanged status and nothing
calls it again (it ignores PodGroup events). A TFJob still without pods this many seconds after it was
submitted, and every as many seconds after, gets an annotation change, which makes it reconcile again."""
OPERATOR_NUDGE_FOR_S = 30.0
"""Seconds after a TFJob's submission during which it is looked after so."""
NUDGE_ANNOTATION = "e2e.tfjob-extender.io/reconcile-nudges"
SCHEDULER_NAME = "tfjob-scheduler"
"""The kube-scheduler profile that calls the extender; pods and TFJobs name it as their scheduler."""
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
COMPLETE_AFTER = "pod-complete.stage.kwok.x-k8s.io/delay"
"""A pod annotated so succeeds that long (a Go duration) after it turned Running (`kwok-stages.yaml`)."""


def kwok_node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    gpu: int = 0,
    pods: int = 110,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Node that the control plane's kwok manages (it turns Ready and keeps a lease)."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1]},
            "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})},
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ClusterClient:
    """Raw-JSON calls on `api` (set once the API server answers)."""

    api: client.ApiClient | None = None

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One API call with raw JSON in and out (the client's typed models are not needed here)."""
        assert self.api is not None, "the API server is not running"
        verb, url, headers, payload, _ = self.api.param_serialize(
            method,
            path,
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(verb, url, header_params=headers, body=payload, _request_timeout=30)
        data = response.read()  # type: ignore[no-untyped-call]
        if response.status >= 300:
            raise ApiError(response.status, f"{method} {path}: HTTP {response.status}: {data[:500]!r}")
        return json.loads(data) if data else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def merge_patch(self, path: str, body: Any) -> Any:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def create_namespace(self, name: str) -> None:
        self.post("/api/v1/namespaces", {"metadata": {"name": name}})

    def request_token(self, namespace: str, account: str, expiration_s: int, bound_secret: str | None = None) -> str:
        """A token of the ServiceAccount `namespace/account` from the TokenRequest API, for the API server's
        own audience, valid for `expiration_s` seconds; with `bound_secret`, bound to that Secret of the
        namespace (deleting it revokes the token, as deleting a pod revokes its projected tokens)."""
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
        spec: dict[str, Any] = {"expirationSeconds": expiration_s}
        if bound_secret is not None:
            secret = self.get(f"/api/v1/namespaces/{namespace}/secrets/{bound_secret}")
            uid = secret["metadata"]["uid"]
            spec["boundObjectRef"] = {"kind": "Secret", "apiVersion": "v1", "name": bound_secret, "uid": uid}
        answer = self.post(path, {**body, "spec": spec})
        return str(answer["status"]["token"])

    def create_node(
        self,
        name: str,
        *,
        cpu: str = "8",
        memory: str = "32Gi",
        gpu: int = 0,
        pods: int = 110,
        labels: dict[str, str] | None = None,
    ) -> None:
        self.post("/api/v1/nodes", kwok_node(name, cpu=cpu, memory=memory, gpu=gpu, pods=pods, labels=labels))

    def wait_nodes_ready(self, names: list[str], timeout_s: float = 60) -> None:
        def ready() -> bool:
            nodes = {n["metadata"]["name"]: n for n in self.get("/api/v1/nodes")["items"]}
            return all(
                name in nodes
                and any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in nodes[name]["status"].get("conditions") or []
                )
                for name in names
            )

        wait_until(f"nodes {names} Ready", ready, timeout_s)

    def pods(self, namespace: str, selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={urllib.parse.quote(selector)}" if selector else ""
        return list(self.get(f"/api/v1/namespaces/{namespace}/pods{query}")["items"])

    def create_pod(self, namespace: str, body: dict[str, Any]) -> None:
        self.post(f"/api/v1/namespaces/{namespace}/pods", body)

    def create_tfjob(self, namespace: str, body: dict[str, Any]) -> None:
        self.post(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs", body)
        name = body["metadata"]["name"]
        threading.Thread(
            target=self._nudge_until_pods, args=(namespace, name), name=f"nudge-{name}", daemon=True
        ).start()

    def _nudge_until_pods(self, namespace: str, name: str) -> None:
        """Make training-operator reconcile the TFJob again while it has no pods (see OPERATOR_NUDGE_AFTER_S)."""
        path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}"
        deadline = time.monotonic() + OPERATOR_NUDGE_FOR_S
        nudges = 0
        while time.monotonic() < deadline:
            time.sleep(OPERATOR_NUDGE_AFTER_S)
            try:
                if self.pods(namespace, f"training.kubeflow.org/job-name={name}"):
                    return
                nudges += 1
                self.merge_patch(path, {"metadata": {"annotations": {NUDGE_ANNOTATION: str(nudges)}}})
            except Exception:  # the TFJob or the control plane is gone; a helper thread must never raise
                return

    def delete_tfjob(self, namespace: str, name: str) -> None:
        self.delete(f"/apis/kubeflow.org/v1/namespaces/{namespace}/tfjobs/{name}")

    def create_podgroup(self, namespace: str, body: dict[str, Any]) -> None:
        group = body["apiVersion"].split("/")[0]
        self.post(f"/apis/{group}/v1alpha1/namespaces/{namespace}/podgroups", body)

    def events(self, namespace: str) -> list[dict[str, Any]]:
        return list(self.get(f"/api/v1/namespaces/{namespace}/events")["items"])
