"""A kubeconfig whose user names a `tokenFile` is read again as the token rotates, as client-go does and as
the official client does in-cluster: the next request after `TOKEN_FILE_REREAD_S` carries the new token."""

from __future__ import annotations

from pathlib import Path

from extender.k8s.client import TOKEN_FILE_REREAD_S, kubeconfig_token_file, make_api_client, reread_token_file
from tests.kubeconfigs import kubeconfig_file


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def bearer(api_client: object) -> str:
    configuration = api_client.configuration  # type: ignore[attr-defined]
    return str(configuration.get_api_key_with_prefix("BearerToken"))


def test_the_token_file_is_read_again_once_the_period_passed_and_a_bad_read_keeps_the_last(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    path = kubeconfig_file(tmp_path, {"tokenFile": "token"}, "https://127.0.0.1:6443")
    assert kubeconfig_token_file(path) == token
    api_client = make_api_client(str(path))
    assert bearer(api_client) == "Bearer first"
    clock = Clock()
    reread_token_file(api_client.configuration, token, clock)
    token.write_text("second\n")
    assert bearer(api_client) == "Bearer first", "not read again within the period"
    clock.now = TOKEN_FILE_REREAD_S
    assert bearer(api_client) == "Bearer second"
    token.unlink()
    clock.now = 2 * TOKEN_FILE_REREAD_S
    assert bearer(api_client) == "Bearer second", "a file gone for a moment (mid-rotation) keeps the last token"


def test_a_kubeconfig_with_an_inline_token_has_no_token_file(tmp_path: Path) -> None:
    assert kubeconfig_token_file(kubeconfig_file(tmp_path, {"token": "inline"})) is None
