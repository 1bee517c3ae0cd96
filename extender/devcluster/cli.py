"""`tfjob-extender dev-cluster up|down|status`: the local control plane for trying the extender by hand.

`up` builds the control plane once (hack/build-control-plane.sh of the source checkout, cached outside
it), starts etcd, kube-apiserver, kwok, the extender, kube-scheduler and training-operator (and with
`--with-kueue` Kueue, `extender.devcluster.kueue`; with `--native-gangs` Kubernetes' own gangs, the extender's
admission webhook registered against it, `extender.devcluster.webhook`) on 127.0.0.1,
writes what it started to `RUN_DIR/dev-cluster.json` and prints the kubeconfig path, the page's URL and the
`explain` command (both on the extender's observe listener);
the processes keep running after the command returns (each in a session of its own), unless
`--foreground`, which stops them on Ctrl-C. `down` stops exactly the processes recorded there, by process
id and only while their command line still names the run directory, then removes it. `status` says what
runs and exits 0 when everything does, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from extender.devcluster.plane import LocalControlPlane, build_control_plane
from extender.devcluster.processes import ControlPlaneError
from extender.devcluster.resources import SourceNotFound

STATE_FILE = "dev-cluster.json"
STOP_WAIT_S = 10.0
"""Seconds each process gets to exit after SIGTERM before it is killed."""
POLL_S = 0.1


def run(args: argparse.Namespace) -> int:
    """`tfjob-extender dev-cluster ACTION` with the arguments `extender.__main__` parsed."""
    run_dir = args.run_dir or default_run_dir()
    if args.action == "up":
        return up(
            run_dir,
            with_operator=not args.no_operator,
            with_kueue=args.with_kueue,
            native_gangs=args.native_gangs,
            foreground=args.foreground,
            with_controllers=args.with_controllers,
        )
    if args.action == "down":
        return down(run_dir)
    return status(run_dir)


def default_run_dir() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tfjob-extender" / "dev-cluster"


@dataclass(frozen=True, slots=True)
class Recorded:
    """What `up` started, as read back from the state file."""

    run_dir: Path
    pids: dict[str, int]
    kubeconfig: str
    page: str

    @staticmethod
    def load(run_dir: Path) -> Recorded | None:
        path = run_dir / STATE_FILE
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return Recorded(run_dir, {str(k): int(v) for k, v in data["pids"].items()}, data["kubeconfig"], data["page"])

    def alive(self) -> dict[str, bool]:
        return {name: _ours(pid, self.run_dir) for name, pid in self.pids.items()}


def up(
    run_dir: Path,
    *,
    with_operator: bool,
    foreground: bool,
    with_kueue: bool = False,
    native_gangs: bool = False,
    with_controllers: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    recorded = Recorded.load(run_dir)
    if recorded is not None and all(recorded.alive().values()):
        _print_access(recorded, out, "already running")
        return 0
    if recorded is not None:
        down(run_dir, out=out)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    print("building or reusing the local control plane (the first build takes a while) ...", file=out, flush=True)
    try:
        plane = LocalControlPlane(
            build_control_plane(),
            run_dir=run_dir,
            with_operator=with_operator,
            with_kueue=with_kueue,
            native_gangs=native_gangs,
            with_controller_manager=with_controllers,
        )
    except (ControlPlaneError, SourceNotFound) as error:
        print(f"dev-cluster: {error}", file=sys.stderr)
        return 1
    try:
        plane.start()
    except BaseException as error:
        plane.stop()
        if not isinstance(error, ControlPlaneError | TimeoutError):
            raise
        print(f"dev-cluster: {error}", file=sys.stderr)
        return 1
    page = f"{plane.observe_url}/ui"
    pids = {name: process.pid for name, process in plane.processes.items()}
    state = {"pids": pids, "kubeconfig": str(plane.kubeconfig), "page": page}
    (run_dir / STATE_FILE).write_text(json.dumps(state, indent=2))
    recorded = Recorded(run_dir, pids, str(plane.kubeconfig), page)
    _print_access(recorded, out, "up")
    if not foreground:
        return 0
    print("Ctrl-C stops it", file=out, flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        return down(run_dir, out=out)


def down(run_dir: Path, *, out: TextIO = sys.stdout) -> int:
    recorded = Recorded.load(run_dir)
    if recorded is None:
        print(f"no dev cluster recorded in {run_dir}", file=out)
        return 0
    for name, pid in reversed(list(recorded.pids.items())):
        if _ours(pid, run_dir):
            _stop(pid, run_dir)
            print(f"stopped {name} (pid {pid})", file=out)
    shutil.rmtree(run_dir, ignore_errors=True)
    return 0


def status(run_dir: Path, *, out: TextIO = sys.stdout) -> int:
    recorded = Recorded.load(run_dir)
    if recorded is None:
        print(f"no dev cluster in {run_dir} (tfjob-extender dev-cluster up starts one)", file=out)
        return 1
    alive = recorded.alive()
    for name, running in alive.items():
        print(f"{name:>20}: {'running' if running else 'stopped'} (pid {recorded.pids[name]})", file=out)
    _print_access(recorded, out, "running" if all(alive.values()) else "partly stopped")
    return 0 if all(alive.values()) else 1


def _print_access(recorded: Recorded, out: TextIO, state: str) -> None:
    print(f"dev cluster {state}", file=out)
    print(f"kubeconfig: {recorded.kubeconfig}", file=out)
    print(f"  export KUBECONFIG={recorded.kubeconfig}", file=out)
    print(f"page: {recorded.page}", file=out)
    print(
        f"explain: tfjob-extender explain --url {recorded.page.removesuffix('/ui')} NAMESPACE/NAME",
        file=out,
        flush=True,
    )


def _ours(pid: int, run_dir: Path) -> bool:
    """Whether `pid` runs and is one of the dev cluster's (its command line names the run directory)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return str(run_dir) in command


def _stop(pid: int, run_dir: Path) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT_S
        while _ours(pid, run_dir) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if _ours(pid, run_dir):
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
