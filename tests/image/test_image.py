"""The container image, built by `hack/build-image.sh` (which reuses its cached base and layers when nothing
changed) and run the only way this kind of machine allows: `buildah run --isolation chroot` in a working
container, on the host's network, as the user and entrypoint the image's own config names.

It checks the config (entrypoint, non-root user, OCI labels), runs the entrypoint, serves the example
snapshot as uid 65532 and asks it `/readyz` and a `POST /filter` on 127.0.0.1 (and `/ui` on its observe
listener), and checks a serve run
writes nothing to the root filesystem. buildah 1.28 cannot mount a container's root read-only, so that last
check runs as root with bytecode writing switched on and lists every file the run created or changed: none
may appear but the files buildah itself writes for each run. Without buildah, podman, mmdebstrap or root the
tests are skipped, except in CI (CI=true), where hack/test.sh installs the tools first.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import extender
from extender.devcluster import free_port

REPO = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("IMAGE", f"localhost/tfjob-extender:{extender.__version__}")
TOOLS = ("buildah", "podman", "mmdebstrap")
IMAGE_USER = "65532:65532"
BUILD_TIMEOUT_S = 900
"""Seconds a cold build may take (Debian base, every wheel, compiling); 80-130 s measured on 2 shared cores."""
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.2
WRITTEN_BY_BUILDAH = frozenset({"/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run", "/run/.containerenv"})
"""What `buildah run` itself writes into the container's root for every run, whatever the command."""
RUN_MARKER = "/image-test-run-marker"
SNAPSHOT_IN_CONTAINER = "/examples/cluster.yaml"

pytestmark = [pytest.mark.image, pytest.mark.timeout(BUILD_TIMEOUT_S)]


@dataclass(frozen=True)
class Container:
    """A buildah working container of the image, and the image's config."""

    name: str
    config: dict[str, Any]

    def command(self, args: Sequence[str], user: str, env: Sequence[str] = (), mounts: Sequence[str] = ()) -> list[str]:
        """`buildah run` of the image's entrypoint with `args`, as `user`."""
        options = ["--isolation", "chroot", "--user", user]
        options += [f"--env={variable}" for variable in env] + [f"--volume={mount}" for mount in mounts]
        return ["buildah", "run", *options, self.name, "--", *self.config["Entrypoint"], *args]

    def shell(self, script: str, user: str = "0:0") -> str:
        command = ["buildah", "run", "--isolation", "chroot", "--user", user, self.name, "--", "sh", "-c", script]
        return subprocess.run(command, check=True, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S).stdout


def tools_or_skip() -> None:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    reason = f"the image tests need {', '.join(missing)} (apt-get install {' '.join(TOOLS)})" if missing else ""
    if not reason and os.geteuid() != 0:
        reason = "the image tests build with buildah as root"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}: hack/test.sh installs them in CI")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def container() -> Iterator[Container]:
    tools_or_skip()
    subprocess.run(["bash", str(REPO / "hack" / "build-image.sh")], check=True, env={**os.environ, "IMAGE": IMAGE})
    inspected = subprocess.run(
        ["buildah", "inspect", "--type", "image", IMAGE], check=True, capture_output=True, text=True
    ).stdout
    name = subprocess.run(
        ["buildah", "from", "--pull=never", IMAGE], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield Container(name, json.loads(inspected)["OCIv1"]["config"])
    finally:
        subprocess.run(["buildah", "rm", name], check=True, capture_output=True)


def test_config_names_the_entrypoint_a_non_root_user_and_the_labels(container: Container) -> None:
    assert container.config["Entrypoint"] == ["tfjob-extender"]
    assert container.config["User"] == IMAGE_USER
    labels = container.config["Labels"]
    assert labels["org.opencontainers.image.version"] == extender.__version__
    assert labels["org.opencontainers.image.title"] == "tfjob-extender"
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert "org.opencontainers.image.source" in labels


def test_entrypoint_runs_as_the_image_user(container: Container) -> None:
    printed = subprocess.run(
        container.command(["--version"], user=IMAGE_USER),
        check=True,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    ).stdout
    assert printed.strip() == f"tfjob-extender {extender.__version__}"
    identity = container.shell("id -u; python -c 'import sys; print(sys.prefix)'", user=IMAGE_USER)
    assert identity.split() == ["65532", "/opt/tfjob-extender"]


def test_serves_the_example_snapshot_as_uid_65532(container: Container) -> None:
    with serving(container, user=IMAGE_USER) as served:
        assert_answers_verbs(served.url)
        uids = serving_process_uids(served.args)
    assert uids and set(uids) == {65532}, f"processes serving port {served.port} run as {uids}"


def test_the_images_entrypoint_is_the_cli_explain_and_probe_included(container: Container) -> None:
    """The CLI from the image, as README's "The command-line tool" runs it (`podman run … IMAGE explain …`;
    here `buildah run`, the same entrypoint and user): `explain` of a TFJob in the example snapshot served by
    another run of the image, and `probe` of its listeners."""
    with serving(container, user=IMAGE_USER) as served:
        explained = subprocess.run(
            container.command(["explain", "default/resnet", "--url", served.observe_url], user=IMAGE_USER),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        probed = subprocess.run(
            container.command(["probe", served.url, served.observe_url], user=IMAGE_USER),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    assert explained.returncode in (0, 1) and explained.stdout.startswith("default/resnet (TFJob): "), explained
    assert probed.returncode == 0 and probed.stdout.count(": ready") == 2, probed


def test_serving_writes_nothing_to_the_root_filesystem(container: Container) -> None:
    container.shell(f"touch {RUN_MARKER}")
    # As root, and with bytecode writing switched back on: any file the service needs to write gets written.
    with serving(container, user="0:0", env=["PYTHONDONTWRITEBYTECODE="]) as served:
        assert_answers_verbs(served.url)
        with urllib.request.urlopen(f"{served.observe_url}/ui", timeout=REQUEST_TIMEOUT_S) as response:
            assert response.status == 200
    written = container.shell(f"find / -xdev -newer {RUN_MARKER}; find /tmp -newer {RUN_MARKER}").split()
    container.shell(f"rm {RUN_MARKER}")
    assert set(written) <= WRITTEN_BY_BUILDAH, f"a serve run wrote {sorted(set(written) - WRITTEN_BY_BUILDAH)}"


@dataclass(frozen=True)
class Served:
    """A serve run in the container: its arguments, its verb listener's port and its observe listener's."""

    args: list[str]
    port: int
    observe_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def observe_url(self) -> str:
        return f"http://127.0.0.1:{self.observe_port}"


@contextlib.contextmanager
def serving(container: Container, user: str, env: Sequence[str] = ()) -> Iterator[Served]:
    """`serve --cluster-snapshot examples/cluster.yaml` in the container, its verb listener and its observe
    listener (with the debug routes and the page) on free ports of 127.0.0.1."""
    port, observe_port = free_port(), free_port()
    args = ["serve", "--cluster-snapshot", SNAPSHOT_IN_CONTAINER, "--port", str(port)]
    args += ["--observe-port", str(observe_port), "--observe-debug"]
    served = Served(args, port, observe_port)
    command = container.command(args, user=user, env=env, mounts=[f"{REPO / 'examples'}:/examples:ro"])
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (ready(served.url) and ready(served.observe_url)):
            assert process.poll() is None, process.communicate()[0].decode()
            assert time.monotonic() < deadline, "the extender in the image did not become ready"
            time.sleep(POLL_INTERVAL_S)
        yield served
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert not ready(served.url) and not ready(served.observe_url), "the extender in the image still answers"


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=REQUEST_TIMEOUT_S) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def assert_answers_verbs(url: str) -> None:
    """A filter request as README's "Try it with curl" sends it: a pending bert worker, three candidate nodes."""
    items = yaml.safe_load((REPO / "examples" / "cluster.yaml").read_text())["items"]
    pod = next(item for item in items if item["metadata"]["name"] == "bert-worker-0")
    candidates = ["node-0", "node-1", "node-2"]
    body = json.dumps({"Pod": pod, "Nodes": None, "NodeNames": candidates}).encode()
    request = urllib.request.Request(f"{url}/filter", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
        assert response.status == 200
        answer = json.loads(response.read())
    assert isinstance(answer["NodeNames"], list)
    assert answer["NodeNames"] and set(answer["NodeNames"]) <= set(candidates), answer


def serving_process_uids(args: list[str]) -> list[int]:
    """The uids of the host's processes that run the entrypoint with `args` (the interpreter and buildah's
    exec wrapper in the container), not the `buildah run` that started them."""
    wanted = "".join(f"{arg}\0" for arg in args).encode()
    uids = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
            if cmdline.endswith(wanted) and Path(cmdline.split(b"\0")[0].decode()).name != "buildah":
                status = (proc / "status").read_text().splitlines()
                uids.append(int(next(line for line in status if line.startswith("Uid:")).split()[1]))
    return uids
