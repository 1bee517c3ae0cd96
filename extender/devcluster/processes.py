"""The local control plane's processes: started in sessions of their own, logging into the run directory,
stopped gracefully in reverse order; and the helpers around them (free ports, polling, failures)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def _unverified_tls() -> ssl.SSLContext:
    """For health probes of local components serving self-signed certificates."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


UNVERIFIED_TLS = _unverified_tls()


class ControlPlaneError(RuntimeError):
    """A component did not come up; the message names it and ends with its log tail."""


LISTEN_PORTS_FROM = 20000
"""The lowest port a local component is told to listen on."""
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def ephemeral_floor() -> int:
    """The lowest port the kernel gives outgoing connections (and `bind(0)`); 32768 where it is not said."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port on 127.0.0.1 free now, for a component started later. Chosen below the ephemeral range where
    there is room, so no outgoing connection made in between (kube-apiserver to etcd, a client to the
    apiserver) can take it before the component binds; never the same port twice in one process."""
    floor = ephemeral_floor()
    candidates = range(LISTEN_PORTS_FROM, floor) if floor - LISTEN_PORTS_FROM >= 1000 else range(0)
    for _ in range(200 if candidates else 0):
        port = secrets.choice(candidates)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    _handed_out.add(port)
    return port


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_until(what: str, condition: Callable[[], T | None], timeout_s: float, interval_s: float = 0.2) -> T:
    """Poll `condition` until it returns something truthy. Other exceptions count as "not yet", but an
    `AssertionError` from `condition` (something that must never happen while waiting) fails at once. On
    timeout the error names the last thing the condition returned or raised, so a wait that never ends
    says whether the condition kept failing to be asked or kept answering no."""
    deadline = time.monotonic() + timeout_s
    last: str = "nothing"
    while True:
        try:
            value = condition()
            if value:
                return value
            last = f"returned {value!r}"
        except AssertionError:
            raise
        except Exception as error:  # a server still starting refuses, times out or answers 5xx: not yet
            last = f"raised {type(error).__name__}: {error}"
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}; last {last[:2000]}")
        time.sleep(interval_s)


def run_build_script(script: Path) -> Path:
    """Run one of the `hack/build-*.sh` scripts (each reuses its cache); returns the cache directory it
    prints last."""
    result = subprocess.run(["bash", str(script)], check=False, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise ControlPlaneError(f"{script.name} failed with exit code {result.returncode}")
    return Path(result.stdout.strip().splitlines()[-1])


def create_once(path: Path, content: bytes) -> None:
    """Create `path` whole unless it exists (another control plane may have made it, or be making it)."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    draft.write_bytes(content)
    os.replace(draft, path)


class ProcessGroup:
    """Named processes started here, each logging to `run_dir/NAME.log`."""

    run_dir: Path
    processes: dict[str, subprocess.Popen[bytes]]
    commands: dict[str, tuple[list[str], dict[str, str] | None]]

    def kill(self, name: str) -> None:
        """End a process started here at once (SIGKILL), as a crash would."""
        process = self.processes.pop(name)
        process.kill()
        process.wait(timeout=10)

    def pid(self, name: str) -> int:
        """The process id of a process started here."""
        return self.processes[name].pid

    def stop_process(self, name: str) -> None:
        """End a process started here gracefully (SIGTERM)."""
        self._stop_process(name)

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.run_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def restart(self, name: str) -> None:
        """Start a component again with the command it was first started with (after `kill` or a stop)."""
        command, env = self.commands[name]
        self.spawn(name, command, env)

    def spawn(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        self.commands[name] = (command, env)
        log = (self.run_dir / f"{name}.log").open("ab")
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, start_new_session=True
        )
        log.close()
        self.processes[name] = process
        time.sleep(0.1)
        if process.poll() is not None:
            raise ControlPlaneError(f"{name} exited at once:\n{self.log_tail(name)}")

    def _stop_process(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def http_ok(self, url: str) -> bool:
        """Whether a plain-HTTP GET of `url` answers 200 (False on any failure)."""
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def probe(self, url: str, context: ssl.SSLContext | None = None) -> bool:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise ControlPlaneError(f"{name} exited with {process.returncode}:\n{self.log_tail(name)}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False
