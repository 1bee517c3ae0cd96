"""`explain` against an observe listener that guards its debug routes: it sends the bearer token of
`--token-file` (or of `TFJOB_EXTENDER_TOKEN`), and without one it says how to give one (exit 3). A small HTTP
server on 127.0.0.1 stands in for the listener: it answers an explanation to the right token and a JSON 401
to anything else, as `serve --observe-debug --observe-auth-token-file` does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from extender import explain as explain_command
from extender.__main__ import main
from tests.local_http import serving

TOKEN = "observe-secret"
ANSWER = {
    "status": "waiting",
    "object": "default/bert",
    "kind": "TFJob",
    "summary": "waits for room",
    "pods": {"bound": {}, "total": 2, "pending": ["default/bert-ps-0", "default/bert-worker-0"]},
}


class GuardedListener(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        allowed = self.headers.get("Authorization") == f"Bearer {TOKEN}"
        body = json.dumps(ANSWER if allowed else {"error": "a bearer token is required"}).encode()
        self.send_response(200 if allowed else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads the answers, not the server's log."""


@pytest.fixture
def url() -> Iterator[str]:
    with serving(GuardedListener) as served:
        yield served


def test_without_a_token_explain_says_how_to_give_one(url: str) -> None:
    answer = explain_command.explain("default/bert", url)
    assert answer.exit_code == explain_command.EXIT_UNREACHABLE
    assert "HTTP 401" in answer.text and "--token-file" in answer.text


def test_the_token_file_is_sent_as_a_bearer_token(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(explain_command.TOKEN_ENVIRONMENT_VARIABLE, raising=False)
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    assert main(["explain", "default/bert", "--url", url, "--token-file", str(token_file), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["object"] == "default/bert"


def test_the_environment_gives_the_token_when_no_file_does(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(explain_command.TOKEN_ENVIRONMENT_VARIABLE, TOKEN)
    assert main(["explain", "default/bert", "--url", url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "waiting"
