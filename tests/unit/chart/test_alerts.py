"""The chart's alerts (`monitoring.prometheusRule`), checked and run by promtool, Prometheus's own rule
engine: each alert fires on the series that should raise it and stays silent on a healthy cluster's, with
the labels and annotations it is written with. A new alert without its case here fails the test."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.helm import RELEASE, REPO, built_tool, named, render

BUILD_SCRIPT = REPO / "hack" / "build-promtool.sh"
LEADER = "tfjob_extender_preemption_leader"
FIRING: dict[str, tuple[dict[str, str], str, dict[str, str]]] = {
    "TfjobExtenderVerbErrors": (
        {'tfjob_extender_decisions_total{verb="filter",outcome="error"}': "0+6x30"},
        "15m",
        {"verb": "filter"},
    ),
    "TfjobExtenderVerbsNearTimeout": (
        {
            'tfjob_extender_verb_duration_seconds_count{verb="filter"}': "0+100x30",
            'tfjob_extender_verb_duration_seconds_bucket{verb="filter",le="4.0"}': "0+90x30",
        },
        "20m",
        {"verb": "filter"},
    ),
    "TfjobExtenderGangPartlyBound": ({"tfjob_extender_gangs_partly_bound": "1x30"}, "15m", {}),
    "TfjobExtenderLoopsWithoutLeader": ({f'{LEADER}{{instance="loops-0"}}': "0x30"}, "10m", {}),
    "TfjobExtenderLeaderFlapping": ({f'{LEADER}{{instance="loops-0"}}': "0 1 0 1 0 1 0 1 0 1"}, "10m", {}),
    "TfjobExtenderSuspensionsFlapping": (
        {
            "tfjob_extender_preemption_suspensions_total": "0+1x120",
            "tfjob_extender_preemption_resumptions_total": "0+1x120",
        },
        "70m",
        {},
    ),
    "TfjobExtenderSchedulerDown": (
        {f'up{{job="{RELEASE}-observe",instance="10.0.0.1:8890",endpoint="observe"}}': "0x10"},
        "6m",
        {"job": f"{RELEASE}-observe", "instance": "10.0.0.1:8890", "endpoint": "observe"},
    ),
}
"""Alert → (input series, when to evaluate, the labels it fires with beyond its own)."""
HEALTHY = {
    'tfjob_extender_decisions_total{verb="filter",outcome="admitted"}': "0+60x120",
    'tfjob_extender_decisions_total{verb="filter",outcome="error"}': "0x120",
    'tfjob_extender_verb_duration_seconds_count{verb="filter"}': "0+60x120",
    'tfjob_extender_verb_duration_seconds_bucket{verb="filter",le="4.0"}': "0+60x120",
    "tfjob_extender_gangs_partly_bound": "0x120",
    f'{LEADER}{{instance="loops-0"}}': "1x120",
    "tfjob_extender_preemption_suspensions_total": "0+0.1x120",
    "tfjob_extender_preemption_resumptions_total": "0+0.1x120",
    f'up{{job="{RELEASE}-observe",instance="10.0.0.1:8890",endpoint="observe"}}': "1x120",
    f'up{{job="{RELEASE}-loops",instance="10.0.0.2:8889",endpoint="observe"}}': "1x120",
}
"""A healthy cluster's series over two hours: no alert fires."""


@functools.cache
def promtool() -> Path:
    printed = subprocess.run(["bash", str(BUILD_SCRIPT), "--print-path"], check=True, capture_output=True, text=True)
    reason = "the alert tests need promtool, built by `bash hack/build-promtool.sh` (Go >= 1.26)"
    return built_tool(Path(printed.stdout.strip()), reason)


def rules() -> dict[str, Any]:
    rule = named(render({"monitoring": {"prometheusRule": {"enabled": True}}}), "PrometheusRule", RELEASE)
    return dict(rule["spec"])


def expanded(text: str, labels: dict[str, str]) -> str:
    """An annotation as Prometheus expands it for an alert with `labels` (the templates here read labels only)."""
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda found: labels[found.group(1)], text)


def series(inputs: dict[str, str]) -> list[dict[str, str]]:
    return [{"series": name, "values": values} for name, values in inputs.items()]


def test_every_alert_fires_on_its_series_and_none_on_a_healthy_cluster(tmp_path: Path) -> None:
    spec = rules()
    alerts = {rule["alert"]: rule for group in spec["groups"] for rule in group["rules"]}
    assert set(alerts) == set(FIRING), "each alert has its case here"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    checked = subprocess.run(
        [str(promtool()), "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tests = []
    for name, (inputs, at, labels) in FIRING.items():
        rule = alerts[name]
        expected = {
            "exp_labels": {**rule["labels"], **labels},
            "exp_annotations": {key: expanded(text, labels) for key, text in rule["annotations"].items()},
        }
        tests.append(
            {
                "interval": "1m",
                "input_series": series(inputs),
                "alert_rule_test": [{"eval_time": at, "alertname": name, "exp_alerts": [expected]}],
            }
        )
    quiet = [{"eval_time": "110m", "alertname": name, "exp_alerts": []} for name in FIRING]
    tests.append({"interval": "1m", "input_series": series(HEALTHY), "alert_rule_test": quiet})
    (tmp_path / "test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "tests": tests}))
    done = subprocess.run([str(promtool()), "test", "rules", "test.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_and_the_rules_render_only_when_asked_and_kube_scheduler_is_scraped_too() -> None:
    plain = render()
    assert not [
        doc for doc in plain if doc["kind"] == "PrometheusRule" or doc["metadata"]["name"].endswith("-dashboard")
    ]
    docs = render(
        {
            "monitoring": {"prometheusRule": {"enabled": True}, "dashboard": {"enabled": True}},
            "serviceMonitor": {"enabled": True},
        }
    )
    board = named(docs, "ConfigMap", f"{RELEASE}-dashboard")
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = yaml.safe_load(board["data"]["tfjob-extender.json"])
    panels = dashboard["panels"]
    assert any("scheduler_pending_pods" in target["expr"] for panel in panels for target in panel["targets"])
    assert all(
        'job=~"$release-kube-scheduler"' in t["expr"] for p in panels for t in p["targets"] if "scheduler_" in t["expr"]
    )
    (release,) = [v for v in dashboard["templating"]["list"] if v["name"] == "release"]
    assert release["query"] == RELEASE, "kube-scheduler's series are those of this release's Service"
    endpoints = named(docs, "ServiceMonitor", RELEASE)["spec"]["endpoints"]
    assert [e["port"] for e in endpoints] == ["observe", "kube-scheduler"]
    assert endpoints[1]["scheme"] == "https" and "bearerTokenFile" in endpoints[1]
    ports = [p["name"] for p in named(docs, "Service", f"{RELEASE}-kube-scheduler")["spec"]["ports"]]
    assert ports == ["kube-scheduler"]
    policy = named(docs, "NetworkPolicy", f"{RELEASE}-scheduler")
    assert {"port": 10259, "protocol": "TCP"} in policy["spec"]["ingress"][0]["ports"]
