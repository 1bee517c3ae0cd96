"""`tfjob-extender probe URL...`: exit 0 only when every listener's /readyz answers 200, one line per URL."""

from __future__ import annotations

import http.server
from collections.abc import Iterator

import pytest

from extender.__main__ import main
from tests.local_http import serving


class Readiness(http.server.BaseHTTPRequestHandler):
    ready = True

    def do_GET(self) -> None:
        ok = self.path == "/readyz" and type(self).ready
        body = b"ok" if ok else b'{"error":"informers not synced"}'
        self.send_response(200 if ok else 503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def listener() -> Iterator[str]:
    try:
        with serving(Readiness) as url:
            yield url
    finally:
        Readiness.ready = True


def test_every_listener_ready_exits_0_and_one_not_ready_or_unreachable_exits_1(
    listener: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", listener, listener + "/"]) == 0
    assert capsys.readouterr().out == f"{listener}/readyz: ready\n" * 2
    Readiness.ready = False
    assert main(["probe", listener]) == 1
    assert "not ready: HTTP 503" in capsys.readouterr().out
    Readiness.ready = True
    assert main(["probe", listener, "http://127.0.0.1:1"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(": ready") and out[1].startswith("http://127.0.0.1:1/readyz: cannot ask")
