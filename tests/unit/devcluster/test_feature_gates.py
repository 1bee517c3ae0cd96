"""The feature gates a local control plane's processes run with: one `--feature-gates` flag turning each on,
none at all without gates, and none before a Workload API plane starts; the scheduler configuration fitted
to the release of kube-scheduler; the admission plugins kube-apiserver runs without."""

from __future__ import annotations

from pathlib import Path

from extender.devcluster import LocalControlPlane
from extender.devcluster.plane import admission_off, feature_gate_flag
from extender.devcluster.resources import scheduler_settings_for


def test_each_gate_is_turned_on_in_one_flag() -> None:
    assert feature_gate_flag(("GenericWorkload", "CompositePodGroup")) == (
        "--feature-gates=GenericWorkload=true,CompositePodGroup=true",
    )


def test_no_gates_give_no_flag() -> None:
    assert feature_gate_flag(()) == ()


def test_a_plane_has_no_gates_before_it_starts(tmp_path: Path) -> None:
    plane = LocalControlPlane(tmp_path / "cache", run_dir=tmp_path / "run", workload_api=True)
    assert (plane.feature_gates, plane.feature_gate_args) == ((), ())


def test_a_kube_scheduler_older_than_1_37_is_not_given_the_podgroup_post_filter_point() -> None:
    profile = {"schedulerName": "s", "plugins": {"podGroupPostFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}
    assert scheduler_settings_for({"profiles": [dict(profile)]}, "v1.37.1") == {"profiles": [profile]}
    assert scheduler_settings_for({"profiles": [dict(profile)]}, "v1.36.4") == {"profiles": [{"schedulerName": "s"}]}


def test_podgroup_protection_is_off_only_where_the_release_has_it() -> None:
    assert admission_off("1.37") == ("ServiceAccount", "TaintNodesByCondition", "PodGroupProtection")
    assert admission_off("1.36") == ("ServiceAccount", "TaintNodesByCondition"), "no plugin of that name to name"
