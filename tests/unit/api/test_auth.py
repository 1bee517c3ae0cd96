"""Who may call the port: bearer tokens from a file or a TokenReview, TLS options, exposure warnings."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extender.api.app import create_app, make_service
from extender.api.auth import TokenFile, TokenReviews, exposure_warnings, guarded, uvicorn_tls_options
from extender.cli.args import parse_args, settings_from
from extender.cli.exposure import exposure_checked
from extender.config import AuthSettings, Settings
from tests.builders import cluster, make_node


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def client_for(auth: AuthSettings, reviewer: object = None) -> TestClient:
    service = make_service(Settings(), cluster(make_node("node-0")), lambda: 0.0)
    return TestClient(guarded(create_app(service), auth, reviewer))  # type: ignore[arg-type]


def test_a_token_from_the_file_opens_every_route_and_probes_need_none(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# readers\nsecret-1\n\nsecret-2\n")
    client = client_for(AuthSettings(token_file=tokens))
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    refused = client.get("/debug/gangs")
    assert refused.status_code == 401 and refused.json()["error"].startswith("a bearer token")
    assert client.get("/debug/gangs", headers={"Authorization": "Bearer secret-2"}).status_code == 200
    assert client.get("/debug/gangs", headers={"Authorization": "Bearer secret-3"}).status_code == 401
    assert client.get("/debug/gangs", headers={"Authorization": "Basic secret-2"}).status_code == 401
    assert client.post("/filter", content=b"{}").status_code == 401
    reply = client.post("/filter", content=b"{}", headers={"Authorization": "bearer secret-1"})
    assert reply.status_code == 200 and "Pod is missing" in reply.json()["Error"]


def test_the_token_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("old\n")
    clock = Clock()
    tokens = TokenFile(path, clock)

    def accepts(token: str) -> bool:
        return asyncio.run(tokens(token))

    assert accepts("old")
    path.write_text("new\n")
    os.utime(path, ns=(1, 10**18))
    assert accepts("old"), "not looked at again within a second"
    clock.now = 2.0
    assert accepts("new") and not accepts("old")
    path.unlink()
    clock.now = 4.0
    assert not accepts("new"), "no file, no token"


def test_reviewed_tokens_are_cached_and_checked_against_the_allowed_users() -> None:
    calls: list[tuple[str, tuple[str, ...]]] = []

    def review(token: str, audiences: tuple[str, ...]) -> tuple[bool, str]:
        calls.append((token, audiences))
        return token != "bad", {"prom": "system:serviceaccount:monitoring:prometheus"}.get(token, "someone")

    clock = Clock()
    reviews = TokenReviews(review, ("tfjob-extender",), ("system:serviceaccount:monitoring:prometheus",), clock)

    def accepts(token: str) -> bool:
        return asyncio.run(reviews(token))

    assert accepts("prom") and accepts("prom")
    assert calls == [("prom", ("tfjob-extender",))], "the second answer came from the cache"
    assert not accepts("bad") and not accepts("other"), "unauthenticated, or not an allowed user"
    clock.now = 61.0
    assert accepts("prom") and len(calls) == 4


def test_token_review_is_refused_without_an_api_server() -> None:
    with pytest.raises(ValueError, match="needs an API server"):
        client_for(AuthSettings(token_review=True))


def test_tls_options_require_client_certificates_from_the_ca() -> None:
    auth = AuthSettings(tls_cert_file=Path("c.pem"), tls_key_file=Path("k.pem"), tls_client_ca_file=Path("ca.pem"))
    assert uvicorn_tls_options(auth) == {
        "ssl_certfile": "c.pem",
        "ssl_keyfile": "k.pem",
        "ssl_ca_certs": "ca.pem",
        "ssl_cert_reqs": ssl.CERT_REQUIRED,
    }
    assert uvicorn_tls_options(AuthSettings()) == {}


@pytest.mark.parametrize(
    ("argv", "warnings"),
    [
        pytest.param([], 0, id="loopback needs nothing"),
        pytest.param(["--host", "0.0.0.0"], 2, id="all interfaces, no authentication, no TLS"),
        pytest.param(["--host", "::", "--auth-token-file", "t"], 1, id="tokens in clear text"),
        pytest.param(
            ["--host", "10.0.0.1", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-client-ca-file", "ca"],
            0,
            id="client certificates over TLS",
        ),
    ],
)
def test_serving_off_loopback_without_protection_warns(
    argv: list[str], warnings: int, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_from(parse_args(["serve", *argv]))
    assert len(exposure_warnings(settings.host, settings.auth)) == warnings
    assert exposure_checked(settings)
    assert capsys.readouterr().err.count("warning:") == warnings


def test_impossible_tls_settings_stop_the_start(capsys: pytest.CaptureFixture[str]) -> None:
    settings = settings_from(parse_args(["serve", "--tls-client-ca-file", "ca"]))
    assert not exposure_checked(settings)
    assert "--tls-client-ca-file needs --tls-cert-file" in capsys.readouterr().err
