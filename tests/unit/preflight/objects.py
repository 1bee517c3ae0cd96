"""Hand-written objects of a healthy install, as the API server gives them, for the preflight checks' tests;
each test breaks one thing of them."""

from __future__ import annotations

import copy
import json
import shlex
from typing import Any

from extender.preflight import rights
from extender.preflight.checks import CHART_CRDS, TFJOB_CRD, Observed
from extender.preflight.install import Install

Obj = dict[str, Any]
INSTALL = Install()
SERVER_VERSION = "v1.37.1"
OPERATOR_IMAGE = "kubeflow/training-operator:v1-855e096"


def deployment(namespace: str, name: str, containers: list[Obj], labels: dict[str, str] | None = None) -> Obj:
    template = {"metadata": {"labels": labels or {"app": name}}, "spec": {"containers": containers}}
    return {"kind": "Deployment", "metadata": {"namespace": namespace, "name": name}, "spec": {"template": template}}


def operator(args: list[str] | None = None, *, image: str = OPERATOR_IMAGE, command: list[str] | None = None) -> Obj:
    container: Obj = {"name": "training-operator", "image": image, "command": command or ["/manager"]}
    if args is not None:
        container["args"] = args
    return deployment("kubeflow", "training-operator", [container])


def scheduler(image: str = f"registry.k8s.io/kube-scheduler:{SERVER_VERSION}") -> Obj:
    containers = [
        {"name": "kube-scheduler", "image": image, "command": ["kube-scheduler", "--config=/etc/c.yaml"]},
        {"name": "tfjob-extender", "image": "ghcr.io/example/tfjob-extender:0.9.0", "args": ["serve"]},
    ]
    return deployment(INSTALL.namespace, INSTALL.scheduler_account, containers)


LOOPS_LABELS = {"app.kubernetes.io/name": "tfjob-extender", "app.kubernetes.io/component": "loops"}


def loops(lease: str = "tfjob-extender-loops") -> Obj:
    container = {
        "name": "tfjob-extender-loops",
        "image": "ghcr.io/example/tfjob-extender:0.9.0",
        "args": ["loops", "--lease-name", lease],
        "ports": [{"name": "observe", "containerPort": 8889}, {"name": "webhook", "containerPort": 9443}],
    }
    return deployment(INSTALL.namespace, INSTALL.loops_account, [container], {**LOOPS_LABELS, "extra": "x"})


def configuration(*, ca: str = "LS0tLS1CRUdJTg==", annotations: dict[str, str] | None = None) -> Obj:
    client_config: Obj = {"service": {"namespace": "tfjob-system", "name": "tfjob-extender-webhook", "port": 443}}
    if ca:
        client_config["caBundle"] = ca
    return {
        "metadata": {"name": "tfjob-extender", "annotations": annotations or {}},
        "webhooks": [{"name": "native-gangs.tfjob-extender.io", "clientConfig": client_config}],
    }


SERVICE = {
    "metadata": {"namespace": "tfjob-system", "name": "tfjob-extender-webhook"},
    "spec": {"selector": LOOPS_LABELS, "ports": [{"name": "webhook", "port": 443, "targetPort": "webhook"}]},
}
POD = {"metadata": {"namespace": "tfjob-system", "name": "loops-0", "labels": {**LOOPS_LABELS, "pod": "x"}}}


def crd(name: str, *, release: str = "tfjob-extender", namespace: str = "tfjob-system", owned: bool = True) -> Obj:
    metadata: Obj = {"name": name}
    if owned:
        metadata["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
        metadata["annotations"] = {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}
    return {"kind": "CustomResourceDefinition", "metadata": metadata}


def all_allowed(install: Install = INSTALL, lease: str = "tfjob-extender-loops") -> rights.Answers:
    return {(need.account, need.right): True for need in rights.needs(install, lease)}


def healthy(**changes: Any) -> Observed:
    """A healthy install's objects, with `changes` (Observed's fields) put over them."""
    fields: dict[str, Any] = {
        "server_version": SERVER_VERSION,
        "deployments": [operator(["--gang-scheduler-name=tfjob-scheduler"]), scheduler(), loops()],
        "crds": {name: crd(name) for name in (TFJOB_CRD, *CHART_CRDS)} | {TFJOB_CRD: crd(TFJOB_CRD, owned=False)},
        "access": all_allowed(),
    }
    return Observed(**{**fields, **changes})


def patched(obj: Obj, fix: str) -> Obj:
    """`obj` with the JSON patch of the `kubectl patch … -p PATCH` a fix gives applied (add and replace)."""
    words = shlex.split(fix.partition(": ")[2])
    assert words[:2] == ["kubectl", "patch"] and "--type" in words, fix
    result = copy.deepcopy(obj)
    for operation in json.loads(words[words.index("-p") + 1]):
        *parents, last = operation["path"].strip("/").split("/")
        target: Any = result
        for step in parents:
            target = target[int(step)] if isinstance(target, list) else target[step]
        if isinstance(target, list):
            if last == "-":
                target.append(operation["value"])
            else:
                target[int(last)] = operation["value"]
        else:
            assert operation["op"] == "add" or last in target
            target[last] = operation["value"]
    return result
