"""Where the local control plane's pieces are: the build script, the scheduler configuration (as a release
of kube-scheduler reads it: `scheduler_settings_for`), the CRDs.

The kwok stages ship inside the package. The rest lives in the source checkout, which the control plane
needs anyway (the Go build of etcd, kube-apiserver, kube-scheduler, kwok and training-operator is
`hack/build-control-plane.sh`, cached outside the repo, e.g. ~/.cache/tfjob-extender): the checkout this
package was installed from (an editable install), else the one `TFJOB_EXTENDER_SOURCE` names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SOURCE_ENV = "TFJOB_EXTENDER_SOURCE"
KWOK_STAGES = Path(__file__).with_name("kwok-stages.yaml")
BUILD_SCRIPT_IN_SOURCE = Path("hack") / "build-control-plane.sh"
KUEUE_BUILD_SCRIPT_IN_SOURCE = Path("hack") / "build-kueue.sh"
POD_GROUP_POST_FILTER_SINCE = (1, 37)
"""The first Kubernetes release whose scheduler configuration has the `podGroupPostFilter` extension point
(the repository's profile turns upstream's PodGroup preemption off there); an older kube-scheduler refuses
the unknown field (its configuration is decoded strictly)."""


class SourceNotFound(RuntimeError):
    """No source checkout: the control plane cannot be built nor configured."""


@dataclass(frozen=True, slots=True)
class Source:
    root: Path

    @property
    def build_script(self) -> Path:
        return self.root / BUILD_SCRIPT_IN_SOURCE

    @property
    def kueue_build_script(self) -> Path:
        """Builds the optional Kueue component (`extender.devcluster.kueue`)."""
        return self.root / KUEUE_BUILD_SCRIPT_IN_SOURCE

    @property
    def scheduler_config(self) -> Path:
        return self.root / "scheduler-config" / "kube-scheduler-config.yaml"

    @property
    def crd_files(self) -> list[Path]:
        """The CRDs of `manifests/crds/` (the chart's, rendered), as the kustomization there lists them."""
        folder = self.root / "manifests" / "crds"
        kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
        return [folder / name for name in kustomization["resources"]]


def scheduler_settings_for(settings: dict[str, Any], kubernetes_version: str) -> dict[str, Any]:
    """`settings` (a KubeSchedulerConfiguration) as kube-scheduler of `kubernetes_version` ("v1.36.4") reads
    it: without the extension points that release does not have."""
    major, minor = (int(part) for part in kubernetes_version.lstrip("v").split(".")[:2])
    if (major, minor) >= POD_GROUP_POST_FILTER_SINCE:
        return settings
    for profile in settings.get("profiles") or []:
        plugins = profile.get("plugins") or {}
        plugins.pop("podGroupPostFilter", None)
        if "plugins" in profile and not plugins:
            del profile["plugins"]
    return settings


def source() -> Source:
    """The source checkout (see the module docstring); raises `SourceNotFound` without one."""
    named = os.environ.get(SOURCE_ENV)
    candidates = [Path(named)] if named else []
    candidates.append(Path(__file__).resolve().parents[2])
    for root in candidates:
        if (root / BUILD_SCRIPT_IN_SOURCE).is_file():
            return Source(root)
    raise SourceNotFound(
        f"the local control plane needs a source checkout of tfjob-extender (with {BUILD_SCRIPT_IN_SOURCE}): "
        f"install the package from one (pip install -e .) or set {SOURCE_ENV} to its path"
    )
