"""What preflight looks at and what it says: the install's names and a finding.

The names follow the chart (`charts/tfjob-extender/templates/_helpers.tpl`): `fullname` is the release name
alone when it contains the chart's name, else `<release>-tfjob-extender`, cut to 63 characters; every object
and identity is named from it (`<fullname>-scheduler` for kube-scheduler, `<fullname>` for the extender,
`<fullname>-loops` for the loops). A finding is one line of the report: its status (ok, warn, fail), the
check, what was found, and, when it is not ok, what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OK = "ok"
WARN = "warn"
FAIL = "fail"
STATUSES = (OK, WARN, FAIL)
"""A finding's status, from good to bad."""
CHART_NAME = "tfjob-extender"
"""The chart's name, which `fullname` contains."""
CHART_PATH = "charts/tfjob-extender"
"""Where the chart is, from the repository's root (as the docs' Helm commands name it)."""
MAX_NAME_CHARS = 63
"""Characters the chart cuts `fullname` to (a label value's limit)."""
DEFAULT_NAMESPACE = "tfjob-system"
DEFAULT_RELEASE = "tfjob-extender"
DEFAULT_SCHEDULER_NAME = "tfjob-scheduler"

Object = dict[str, Any]
"""A Kubernetes object as the API server's JSON gives it."""


def fullname(release: str) -> str:
    """The chart's `fullname` of a release (no `fullnameOverride`)."""
    name = release if CHART_NAME in release else f"{release}-{CHART_NAME}"
    return name[:MAX_NAME_CHARS].removesuffix("-")


@dataclass(frozen=True, slots=True)
class Install:
    """The release preflight checks: its namespace, its name, its scheduler's name, and whether its CRDs are
    someone else's (installed with `crds.install=false`, so they need only exist)."""

    namespace: str = DEFAULT_NAMESPACE
    release: str = DEFAULT_RELEASE
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    crds_external: bool = False

    @property
    def fullname(self) -> str:
        return fullname(self.release)

    @property
    def scheduler_account(self) -> str:
        """kube-scheduler's ServiceAccount, and the name of the Deployment it runs in."""
        return f"{self.fullname}-scheduler"

    @property
    def extender_account(self) -> str:
        """The verb-serving extender's ServiceAccount."""
        return self.fullname

    @property
    def loops_account(self) -> str:
        """The loops' ServiceAccount, and the name of their Deployment and (by default) their Lease."""
        return f"{self.fullname}-loops"

    def upgrade_command(self, *extra: str) -> str:
        """The `helm upgrade` that puts the chart's objects back as its values say, with `extra` flags."""
        words = ["helm upgrade", self.release, CHART_PATH, "-n", self.namespace, "--reset-then-reuse-values", *extra]
        return " ".join(words)


@dataclass(frozen=True, slots=True)
class Finding:
    status: str
    check: str
    found: str
    fix: str = ""

    def line(self) -> str:
        """`ok|warn|fail  <check>: <what was found> [— fix: <what to do>]`."""
        fix = f" — fix: {self.fix}" if self.fix else ""
        return f"{self.status:<4}  {self.check}: {self.found}{fix}"

    def as_json(self) -> dict[str, str]:
        return {"status": self.status, "check": self.check, "found": self.found, "fix": self.fix}


def unreadable(check: str, what: str, why: str) -> Finding:
    """The finding of a check whose objects the API server would not give."""
    return Finding(FAIL, check, f"cannot read {what}: {why}", f"run preflight with credentials that may read {what}")


def labels_of(obj: Object) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def annotations_of(obj: Object) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def name_of(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def namespace_of(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def containers_of(workload: Object) -> list[Object]:
    """The containers of a Deployment's pod template (or of a pod)."""
    spec = workload.get("spec") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or spec
    return list(pod_spec.get("containers") or [])


def find(objects: list[Object], namespace: str, name: str) -> Object | None:
    return next((o for o in objects if namespace_of(o) == namespace and name_of(o) == name), None)
