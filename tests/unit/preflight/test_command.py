"""`tfjob-extender preflight` end to end over a scripted API server (`api_call` replaced): what it reads,
the lines or the JSON it prints, and its exit code (0 passed, 1 a check failed, 3 no API server)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from extender.__main__ import main
from extender.k8s import reads
from extender.k8s.client import ApiCallError
from extender.preflight import reading, rights
from extender.preflight.checks import CHART_CRDS, TFJOB_CRD
from tests.kubeconfigs import kubeconfig_file
from tests.unit.preflight.objects import INSTALL, POD, SERVICE, configuration, crd, loops, operator, scheduler

Obj = dict[str, Any]


class FakeApi:
    """Answers preflight's requests from objects: every Deployment over two pages, the CRDs by name, each
    SubjectAccessReview allowed unless its (user, verb, resource) is `denied`; `refused` paths answer 403."""

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{n}": crd(n) for n in CHART_CRDS
        }
        self.objects[f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{TFJOB_CRD}"] = crd(
            TFJOB_CRD, owned=False
        )
        self.deployments = [operator(["--gang-scheduler-name=tfjob-scheduler"]), scheduler(), loops()]
        self.denied: set[tuple[str, str, str]] = set()
        self.refused: set[str] = set()
        self.lists: dict[str, list[Obj]] = {}
        self.asked: list[str] = []

    def __call__(self, api: object, method: str, path: str, body: Any = None) -> Any:
        self.asked.append(f"{method} {path}")
        route, _, query = path.partition("?")
        parameters = dict(urllib.parse.parse_qsl(query))
        if route in self.refused:
            raise ApiCallError(403, f"{method} {route}: HTTP 403: forbidden")
        if route == "/version":
            return {"gitVersion": "v1.37.1"}
        if route == "/apis/apps/v1/deployments":
            assert parameters["limit"] == str(reads.PAGE_SIZE)
            first = "continue" not in parameters
            page = self.deployments[:1] if first else self.deployments[1:]
            return {"metadata": {"continue": "next"} if first else {}, "items": page}
        if route == reading.REVIEWS_PATH:
            spec = body["spec"]
            attributes = spec["resourceAttributes"]
            asked = (spec["user"], attributes["verb"], attributes["resource"])
            return {"status": {"allowed": asked not in self.denied}}
        if route in self.lists:
            return {"metadata": {}, "items": self.lists[route]}
        if route in self.objects:
            return self.objects[route]
        raise ApiCallError(404, f"{method} {route}: HTTP 404")


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(reading, "api_call", fake)
    monkeypatch.setattr(reads, "api_call", fake)
    return fake


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    return str(kubeconfig_file(tmp_path))


def test_a_healthy_install_prints_one_ok_line_per_finding_and_exits_0(
    api: FakeApi, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["preflight", "--kubeconfig", kubeconfig]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("ok    ") for line in lines[:-1]), lines
    assert len(lines) == 1 + 4 + 1 + 3 + 1
    assert lines[-1] == "preflight of tfjob-system/tfjob-extender: 0 fail, 0 warn, 9 ok"
    assert "GET /apis/apps/v1/deployments?limit=500&continue=next" in api.asked
    assert sum(asked.startswith("POST ") for asked in api.asked) == len(rights.needs(INSTALL, INSTALL.loops_account))


def test_a_denied_right_fails_the_run_and_json_says_so(
    api: FakeApi, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    api.denied.add(("system:serviceaccount:tfjob-system:tfjob-extender-loops", "create", "pods"))
    assert main(["preflight", "--kubeconfig", kubeconfig, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["fullname"], report["exitCode"]) == ("tfjob-extender", 1)
    failed = [f for f in report["findings"] if f["status"] == "fail"]
    assert [(f["check"], f["found"]) for f in failed] == [
        ("rights tfjob-system/tfjob-extender-loops", "may not create pods/eviction (cluster-wide)")
    ]
    assert "ClusterRoleBinding tfjob-extender-loops" in failed[0]["fix"]


def test_a_refused_read_fails_the_checks_that_need_it(
    api: FakeApi, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    api.refused.add("/apis/apps/v1/deployments")
    assert main(["preflight", "--kubeconfig", kubeconfig]) == 1
    out = capsys.readouterr().out
    assert "fail  training-operator: cannot read Deployments: GET /apis/apps/v1/deployments: HTTP 403" in out


def test_the_webhooks_objects_are_read_when_its_configuration_exists(
    api: FakeApi, kubeconfig: str, capsys: pytest.CaptureFixture[str]
) -> None:
    api.objects["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/tfjob-extender"] = configuration()
    api.objects["/api/v1/namespaces/tfjob-system/services/tfjob-extender-webhook"] = SERVICE
    api.lists["/api/v1/namespaces/tfjob-system/pods"] = [POD]
    api.lists["/apis/networking.k8s.io/v1/namespaces/tfjob-system/networkpolicies"] = []
    assert main(["preflight", "--kubeconfig", kubeconfig]) == 0
    out = capsys.readouterr().out
    assert "ok    webhook service: Service tfjob-system/tfjob-extender-webhook selects 1 pod(s)" in out
    (pods,) = [asked for asked in api.asked if "/pods?" in asked]
    assert "labelSelector=app.kubernetes.io%2Fcomponent%3Dloops%2Capp.kubernetes.io%2Fname%3Dtfjob-extender" in pods


def test_no_api_server_or_credentials_refused_exits_3(
    api: FakeApi, kubeconfig: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreachable(*_: object) -> Any:
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(reading, "api_call", unreachable)
    monkeypatch.setattr(reads, "api_call", unreachable)
    assert main(["preflight", "--kubeconfig", kubeconfig]) == 3
    assert capsys.readouterr().err == "preflight: cannot reach the API server: connection refused\n"

    def refused(*_: object) -> Any:
        raise ApiCallError(401, "GET /version: HTTP 401")

    monkeypatch.setattr(reading, "api_call", refused)
    monkeypatch.setattr(reads, "api_call", refused)
    assert main(["preflight", "--kubeconfig", kubeconfig, "--json"]) == 3
    assert (
        json.loads(capsys.readouterr().out)["error"] == "the API server refused the credentials: GET /version: HTTP 401"
    )


def test_a_kubeconfig_that_cannot_be_loaded_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--kubeconfig", str(tmp_path / "missing")]) == 3
    assert capsys.readouterr().err.startswith("preflight: cannot load the credentials: ")


def test_the_help_names_every_check_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["preflight", "--help"])
    text = capsys.readouterr().out
    for words in ("training-operator", "crd", "kube-scheduler skew", "rights", "webhook", "Exit 0", "1 when", "3 when"):
        assert words in text
    assert INSTALL.release in text and INSTALL.namespace in text
