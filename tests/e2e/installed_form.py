"""The chart's Deployments run as local processes, exactly as rendered, each under its own ServiceAccount.

No kubelet runs here, so each container of a rendered Deployment becomes a process of the control plane's
process group (stopped and logged like its other processes): the rendered `command` and `args` (an image's
entrypoint stood in for by the local program that image ships, `STAND_INS`), the rendered `env`, the files
of the ConfigMaps and Secrets it mounts written to a directory of its own (the mount paths in its arguments
and in kube-scheduler's configuration mapped there; a Secret read from the API server once it exists, as
the kubelet waits for it), under a kubeconfig holding a TokenRequest token of the ServiceAccount whose
credentials the container mounts. What differs from the rendered container is listed, with the reason, in
`LOCAL_CHANGES` and made in `local_command` only. The ports stay the rendered ones; one already taken fails
at once.

`probes` lists the HTTP probes the containers declare, and `answer_within_budget` asks each what the kubelet
would, until it answers 200 or its budget (the initial delay and as many periods as the failure threshold
allows) has passed since the process started.
"""

from __future__ import annotations

import re
import socket
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from extender.devcluster import UNVERIFIED_TLS, ControlPlaneError, LocalControlPlane
from tests.helm import Document, named, of_kind

TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where in-cluster clients read their ServiceAccount's token, CA and namespace."""
LOOPBACK = "127.0.0.1"
EVERY_ADDRESS = "0.0.0.0"
LOCAL_CHANGES = {
    "credentials": "each process gets a kubeconfig with its ServiceAccount's token (`--kubeconfig`; kube-scheduler: "
    "`clientConnection.kubeconfig` in its configuration and `--authentication-kubeconfig` / "
    "`--authorization-kubeconfig`, which in a pod also default to the in-cluster credentials): there is no "
    f"in-cluster token at {TOKEN_PATH} here",
    "loopback": f"{EVERY_ADDRESS} becomes {LOOPBACK} (kube-scheduler, which binds to {EVERY_ADDRESS} by default, gets "
    f"`--bind-address={LOOPBACK}`): servers bind to the loopback address only on this machine",
    "services": f"a Service's address in an argument or in kube-scheduler's extender `urlPrefix` "
    f"(`https://NAME.NAMESPACE.svc:PORT`) becomes {LOOPBACK} and the port of the container behind it: no cluster DNS "
    "or Service proxy runs here (the extender's `tlsConfig.serverName` still names the Service, so the serving "
    "certificate is checked as in a cluster)",
    "secrets": "a mounted Secret's items are read from the API server once, when the container starts: the kubelet "
    "would also update them in place as they change",
}
"""Every way a process run here differs from its rendered container, and why."""
DEFAULT_PERIOD_S = 10
DEFAULT_TIMEOUT_S = 1
DEFAULT_FAILURE_THRESHOLD = 3
"""Kubernetes' defaults for a probe's `periodSeconds`, `timeoutSeconds` and `failureThreshold`."""


def stand_ins(plane: LocalControlPlane) -> dict[str, list[str]]:
    """An image's program (its entrypoint, or a container's `command[0]`) → the local command standing in."""
    return {
        "kube-scheduler": [str(plane.bin / "kube-scheduler")],
        "tfjob-extender": [sys.executable, "-m", "extender"],
    }


ENTRYPOINTS = {"registry.k8s.io/kube-scheduler": [], "ghcr.io/tfjob-extender/tfjob-extender": ["tfjob-extender"]}
"""An image (without its tag) → its entrypoint (kube-scheduler's image has none: the container names the
program; the extender's is the Dockerfile's `ENTRYPOINT`)."""


@dataclass(frozen=True, slots=True)
class Container:
    """One container of a rendered Deployment, with its pod's spec."""

    deployment: str
    pod: dict[str, Any]
    spec: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def image(self) -> tuple[str, str]:
        """(repository, tag) of its image."""
        reference = self.spec["image"].partition("@")[0]
        repository, _, tag = reference.rpartition(":")
        return repository, tag

    def port(self, port: int | str) -> int:
        """A probe's port: a number, or the name of one of the container's ports."""
        if isinstance(port, int):
            return port
        (number,) = [p["containerPort"] for p in self.spec.get("ports") or [] if p["name"] == port]
        return int(number)


def containers(docs: list[Document]) -> list[Container]:
    return [
        Container(deployment["metadata"]["name"], deployment["spec"]["template"]["spec"], spec)
        for deployment in of_kind(docs, "Deployment")
        for spec in deployment["spec"]["template"]["spec"]["containers"]
    ]


def hook_pods(docs: list[Document], hook: str) -> list[Container]:
    """The containers of the rendered Pods that are Helm hooks of `hook` (`test`: what `helm test` runs)."""
    return [
        Container(pod["metadata"]["name"], pod["spec"], spec)
        for pod in of_kind(docs, "Pod")
        if hook in (pod["metadata"].get("annotations") or {}).get("helm.sh/hook", "").split(",")
        for spec in pod["spec"]["containers"]
    ]


SERVICE_URL = re.compile(r"^(https?)://([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?:([0-9]+)(/.*)?$")


def local_url(docs: list[Document], argument: str) -> str:
    """`argument`, if it is a rendered Service's URL, as the URL of the container port behind that Service."""
    found = SERVICE_URL.match(argument)
    if found is None:
        return argument
    scheme, name, _, port, path = found.groups()
    service = named(docs, "Service", name)
    (target,) = [p["targetPort"] for p in service["spec"]["ports"] if p["port"] == int(port)]
    selector = service["spec"]["selector"]
    backends = [
        c
        for d in of_kind(docs, "Deployment")
        if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        for c in containers([d])
        if any(p.get("name") == target or p["containerPort"] == target for p in c.spec.get("ports") or [])
    ]
    (backend,) = backends
    return f"{scheme}://{LOOPBACK}:{backend.port(target)}{path or ''}"


def service_account(docs: list[Document], container: Container) -> str:
    """The ServiceAccount whose credentials the container holds: its pod's, through the projected token
    mounted at `TOKEN_PATH` or, with none mounted there, the token mounted automatically."""
    volumes = {v["name"]: v for v in container.pod.get("volumes") or []}
    mounts = [m for m in container.spec.get("volumeMounts") or [] if m["mountPath"] == TOKEN_PATH]
    pod_account = str(container.pod.get("serviceAccountName") or "default")
    if not mounts:
        account = named(docs, "ServiceAccount", pod_account)
        automount = container.pod.get("automountServiceAccountToken", account.get("automountServiceAccountToken"))
        assert automount is not False, f"{container.name}: no credentials at all"
        return pod_account
    volume = volumes[mounts[0]["name"]]
    sources = volume["projected"]["sources"]
    assert any("serviceAccountToken" in source for source in sources), volume
    return pod_account


def mounted_secrets(container: Container) -> list[str]:
    """The Secrets the container mounts (which must exist before it can start)."""
    volumes = {v["name"]: v for v in container.pod.get("volumes") or []}
    mounted = [volumes[m["name"]] for m in container.spec.get("volumeMounts") or [] if m["mountPath"] != TOKEN_PATH]
    return [volume["secret"]["secretName"] for volume in mounted if "secret" in volume]


def mounted_files(
    docs: list[Document], container: Container, directory: Path, secret_data: Callable[[str], dict[str, str]]
) -> dict[str, Path]:
    """Write the files of every ConfigMap and Secret the container mounts under `directory` (a Secret's keys →
    texts from `secret_data`); return mount path → the local directory holding them. The credentials at
    `TOKEN_PATH` are left to `LOCAL_CHANGES`; any other volume has no stand-in here."""
    volumes = {v["name"]: v for v in container.pod.get("volumes") or []}
    mapped: dict[str, Path] = {}
    for mount in container.spec.get("volumeMounts") or []:
        if mount["mountPath"] == TOKEN_PATH:
            continue
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            source = volume["configMap"]
            data = named(docs, "ConfigMap", source["name"])["data"]
        else:
            assert "secret" in volume, f"{container.name}: volume {mount['name']} has no local stand-in: {volume}"
            source = volume["secret"]
            data = secret_data(source["secretName"])
        items = source.get("items") or [{"key": key, "path": key} for key in data]
        local = directory / container.name / mount["name"]
        local.mkdir(parents=True)
        for item in items:
            (local / item["path"]).write_text(data[item["key"]])
        mapped[mount["mountPath"]] = local
    return mapped


def mapped_argument(argument: str, mounts: dict[str, Path]) -> str:
    """`argument` with a mount path in its value (`PATH…` or `--flag=PATH…`) pointing at the local copy."""
    flag, equals, value = argument.partition("=") if argument.startswith("-") else ("", "", argument)
    for mount_path, local in mounts.items():
        if value == mount_path or value.startswith(mount_path + "/"):
            return f"{flag}{equals}{local}{value[len(mount_path) :]}"
    assert not any(value.startswith(path) for path in (TOKEN_PATH, "/etc/", "/var/")), (
        f"{argument}: a path with no local stand-in"
    )
    return argument


def program(plane: LocalControlPlane, container: Container) -> list[str]:
    """The rendered command (or the image's entrypoint) with its program stood in for, then the args."""
    repository, _ = container.image
    command = container.spec.get("command") or ENTRYPOINTS[repository]
    return [*stand_ins(plane)[command[0]], *command[1:], *(container.spec.get("args") or [])]


def local_command(
    plane: LocalControlPlane, docs: list[Document], container: Container, kubeconfig: Path, mounts: dict[str, Path]
) -> list[str]:
    """The container's command as run here: rendered, with only `LOCAL_CHANGES` made."""
    command = [mapped_argument(argument, mounts) for argument in program(plane, container)]
    command = [LOOPBACK if argument == EVERY_ADDRESS else argument for argument in command]
    if container.image[0] == "registry.k8s.io/kube-scheduler":
        (config,) = [argument.partition("=")[2] for argument in command if argument.startswith("--config=")]
        settings = yaml.safe_load(Path(config).read_text())
        assert "kubeconfig" not in settings.get("clientConnection", {}), settings
        settings.setdefault("clientConnection", {})["kubeconfig"] = str(kubeconfig)
        for extender in settings.get("extenders") or []:
            extender["urlPrefix"] = local_url(docs, extender["urlPrefix"])
            tls = extender.get("tlsConfig") or {}
            for key in ("caFile", "certFile", "keyFile"):
                if key in tls:
                    tls[key] = mapped_argument(tls[key], mounts)
        Path(config).write_text(yaml.safe_dump(settings))
        return [
            *command,
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
        ]
    return [*command, "--kubeconfig", str(kubeconfig)]


def environment(container: Container) -> dict[str, str]:
    """The rendered `env` (plain values; nothing else is rendered today)."""
    env = {}
    for entry in container.spec.get("env") or []:
        assert "value" in entry, f"{container.name}: env {entry['name']} has no plain value to set here"
        env[entry["name"]] = str(entry["value"])
    return env


def listening_ports(container: Container) -> set[int]:
    """The ports the container serves: its declared ports, its probes' ports, and every `--*port` flag."""
    ports = {int(p["containerPort"]) for p in container.spec.get("ports") or []}
    ports |= {probe.port for probe in probes([container])}
    arguments = [*(container.spec.get("command") or []), *(container.spec.get("args") or [])]
    for index, argument in enumerate(arguments):
        flag, equals, value = argument.partition("=")
        if flag.startswith("--") and flag.endswith("port"):
            ports.add(int(value if equals else arguments[index + 1]))
    return ports


def refuse_taken_ports(container: Container) -> None:
    """Fail at once, naming the port, if one the container would serve is taken on the loopback address."""
    for port in sorted(listening_ports(container)):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((LOOPBACK, port))
            except OSError as error:
                raise ControlPlaneError(
                    f"port {port} of container {container.name} is taken on {LOOPBACK} ({error}): the installed "
                    "form keeps the chart's ports; stop what holds it"
                ) from error


@dataclass(frozen=True, slots=True)
class Probe:
    container: str
    kind: str
    """`startupProbe`, `readinessProbe` or `livenessProbe`."""
    port: int
    url: str
    timeout_s: float
    budget_s: float
    """The initial delay and `failureThreshold` periods: how long the kubelet waits before it acts."""


def probes(containers_: list[Container]) -> list[Probe]:
    found = []
    for container in containers_:
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            probe = container.spec.get(kind)
            if probe is None:
                continue
            get = probe["httpGet"]
            scheme = get.get("scheme", "HTTP").lower()
            port = container.port(get["port"])
            url = f"{scheme}://{LOOPBACK}:{port}{get['path']}"
            period = probe.get("periodSeconds", DEFAULT_PERIOD_S)
            budget = probe.get("initialDelaySeconds", 0) + period * probe.get(
                "failureThreshold", DEFAULT_FAILURE_THRESHOLD
            )
            timeout = probe.get("timeoutSeconds", DEFAULT_TIMEOUT_S)
            found.append(Probe(container.name, kind, port, url, timeout, budget))
    return found


def answers_200(probe: Probe) -> bool:
    try:
        context = UNVERIFIED_TLS if probe.url.startswith("https") else None
        with urllib.request.urlopen(probe.url, timeout=probe.timeout_s, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def answer_within_budget(
    plane: LocalControlPlane, started: dict[str, float], found: list[Probe], interval_s: float = 0.2
) -> dict[Probe, float | None]:
    """Ask every probe until it answers 200 or its budget since its process started (`started`, container →
    monotonic time) has passed: probe → seconds it took, or None. A process that exits fails at once."""
    took: dict[Probe, float | None] = {}
    pending = list(found)
    while pending:
        for name, process in plane.processes.items():
            if process.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {process.returncode}:\n{plane.log_tail(name)}")
        for probe in list(pending):
            elapsed = time.monotonic() - started[probe.container]
            if answers_200(probe):
                took[probe] = elapsed
                pending.remove(probe)
            elif elapsed > probe.budget_s:
                took[probe] = None
                pending.remove(probe)
        time.sleep(interval_s)
    return took
