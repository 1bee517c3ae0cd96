"""Who may call a port: bearer tokens from a file or a TokenReview (remembered, and asked at a bounded rate),
the TLS context, and what stops or warns about an exposed listener."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

import pytest

from extender.api.auth import (
    OBSERVE_OPEN_PATHS,
    OPEN_PATHS,
    TOKEN_REVIEW_CACHE_S,
    TOKEN_REVIEW_REFUSED_CACHE_S,
    TOKEN_REVIEWS_PER_S,
    TokenFile,
    TokenReviews,
    bearer_token,
    settings_problems,
    tls_context,
    token_checks,
    verb_findings,
)
from extender.cli.args import parse_args, settings_from
from extender.cli.exposure import exposure_checked
from extender.config import AuthSettings
from tests.certificates import self_signed_certificate

PROMETHEUS = "system:serviceaccount:monitoring:prometheus"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Reviewer:
    """A TokenReview that counts what it is asked: `good` authenticates as `user`, any other token fails; a
    SubjectAccessReview that allows the users in `proxies`."""

    def __init__(self, good: str = "good", user: str = PROMETHEUS, proxies: tuple[str, ...] = ()) -> None:
        self.good = good
        self.user = user
        self.proxies = proxies
        self.asked: list[str] = []
        self.access_asked: list[tuple[str, tuple[str, ...], str, str]] = []

    def __call__(self, token: str, audiences: tuple[str, ...]) -> tuple[bool, str, tuple[str, ...]]:
        self.asked.append(token)
        return token == self.good, self.user if token == self.good else "", ("system:authenticated",)

    def may_proxy(self, user: str, groups: tuple[str, ...], namespace: str, service: str) -> bool:
        self.access_asked.append((user, groups, namespace, service))
        return user in self.proxies


class Directory(Reviewer):
    """Tokens named after their users: `bad` fails, `prom` is Prometheus, `ops` is in the group `ops`,
    anything else is `someone`."""

    def __call__(self, token: str, audiences: tuple[str, ...]) -> tuple[bool, str, tuple[str, ...]]:
        self.asked.append(token)
        user = {"prom": PROMETHEUS}.get(token, "someone")
        return token != "bad", user, ("system:authenticated", *(("ops",) if token == "ops" else ()))


def test_a_token_from_the_file_passes_and_only_bearer_tokens_are_read(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# readers\nsecret-1\n\n  secret-2  \n  #comment\n\t# another\n")
    checks = token_checks(AuthSettings(token_file=tokens), None)
    assert checks is not None
    assert checks.known("secret-1") is True and checks.known("secret-2") is True
    assert checks.known("secret-3") is False, "a file alone answers every token at once"
    for comment in ("#comment", "  #comment", "# readers", "# another", ""):
        assert not checks.known(comment), f"{comment!r} is not a token"
    assert bearer_token(b"Bearer secret-2") == "secret-2"
    assert bearer_token(b"bearer secret-1") == "secret-1", "the scheme in any case"
    assert bearer_token(b"Basic secret-2") is None and bearer_token(b"Bearer   ") is None
    assert bearer_token(b"Bearer " + b"x" * 10_000) is None, "an oversized header is refused unread"
    assert bearer_token(None) is None


def test_the_probes_are_open_and_on_the_observe_listener_the_metrics_too() -> None:
    assert {b"/healthz", b"/readyz"} == OPEN_PATHS
    assert {b"/healthz", b"/readyz", b"/metrics"} == OBSERVE_OPEN_PATHS


def test_the_token_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("old\n")
    clock = Clock()
    accepts = TokenFile(path, clock)
    assert accepts("old")
    path.write_text("new\n")
    os.utime(path, ns=(1, 10**18))
    assert accepts("old"), "not looked at again within a second"
    clock.now = 2.0
    assert accepts("new") and not accepts("old")
    path.unlink()
    clock.now = 4.0
    assert not accepts("new"), "no file, no token"


def test_reviewed_tokens_are_remembered_and_checked_against_the_allowed_users() -> None:
    directory, clock = Directory(), Clock()
    reviews = TokenReviews(directory, ("tfjob-extender",), (PROMETHEUS,), clock=clock)

    def accepts(token: str) -> bool:
        return asyncio.run(reviews.accepts(token))

    assert reviews.known("prom") is None, "never asked yet"
    assert accepts("prom") and accepts("prom")
    assert directory.asked == ["prom"], "the second answer came from memory"
    assert reviews.known("prom") is True
    assert not accepts("bad") and not accepts("other"), "unauthenticated, or not an allowed user"
    clock.now = TOKEN_REVIEW_CACHE_S + 1
    assert reviews.known("prom") is None
    assert accepts("prom") and len(directory.asked) == 4


def test_a_reviewed_token_passes_by_its_group_or_by_an_access_review_and_else_never() -> None:
    directory = Directory(proxies=("someone",))
    by_group = TokenReviews(directory, allowed_groups=("ops",))
    assert asyncio.run(by_group.accepts("ops")) and not asyncio.run(by_group.accepts("someone"))
    assert not directory.access_asked, "no access review asked for"
    by_access = TokenReviews(directory, access=("tfjob-system", "tfjob-extender-observe"))
    assert asyncio.run(by_access.accepts("someone")) and not asyncio.run(by_access.accepts("prom"))
    assert directory.access_asked[0] == ("someone", ("system:authenticated",), "tfjob-system", "tfjob-extender-observe")
    nobody = TokenReviews(directory)
    assert not asyncio.run(nobody.accepts("prom")) and not asyncio.run(nobody.accepts("ops"))


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        (AuthSettings(token_review=True), "lets no one in by itself"),
        (AuthSettings(allowed_groups=("ops",)), "need --observe-auth-token-review"),
        (AuthSettings(token_review=True, access_review="tfjob-system"), "is not NAMESPACE/SERVICE"),
        (AuthSettings(token_review=True, access_review="a/b/c"), "is not NAMESPACE/SERVICE"),
    ],
)
def test_a_token_review_that_names_no_one_who_may_pass_does_not_start(auth: AuthSettings, problem: str) -> None:
    assert any(problem in found for found in settings_problems(auth, "--observe-"))


def test_a_token_review_naming_who_may_pass_starts() -> None:
    for auth in (
        AuthSettings(token_review=True, allowed_users=(PROMETHEUS,)),
        AuthSettings(token_review=True, allowed_groups=("ops",)),
        AuthSettings(token_review=True, access_review="tfjob-system/tfjob-extender-observe"),
    ):
        assert settings_problems(auth) == []


def test_a_refused_answer_is_remembered_briefly() -> None:
    reviewer, clock = Reviewer(), Clock()
    reviews = TokenReviews(reviewer, allowed_users=(PROMETHEUS,), clock=clock)
    assert not asyncio.run(reviews.accepts("bad"))
    clock.now = TOKEN_REVIEW_REFUSED_CACHE_S - 1
    assert reviews.known("bad") is False
    assert not asyncio.run(reviews.accepts("bad"))
    assert reviewer.asked == ["bad"], "asked once within the refusal's memory"
    clock.now = TOKEN_REVIEW_REFUSED_CACHE_S + 1
    assert reviews.known("bad") is None, "forgotten soon: a token may become valid"
    assert not asyncio.run(reviews.accepts("bad"))
    assert reviewer.asked == ["bad", "bad"]


def test_a_flood_of_bad_tokens_is_reviewed_at_a_bounded_rate_and_never_evicts_an_accepted_answer() -> None:
    reviewer, clock = Reviewer(), Clock()
    reviews = TokenReviews(reviewer, allowed_users=(PROMETHEUS,), clock=clock)

    async def flood(tokens: list[str], step_s: float) -> list[bool]:
        answers = []
        for token in tokens:
            answers.append(await reviews.accepts(token))
            clock.now += step_s
        return answers

    assert asyncio.run(reviews.accepts("good"))
    at_once = asyncio.run(flood([f"burst-{index}" for index in range(2000)], 0.0))
    assert not any(at_once)
    assert len(reviewer.asked) - 1 <= TOKEN_REVIEWS_PER_S, "a burst at one instant: one second's worth at most"
    asked_before = len(reviewer.asked)
    started = clock.now
    spread = asyncio.run(flood([f"bad-{index}" for index in range(2000)], 0.02))
    elapsed = clock.now - started
    assert not any(spread)
    reviewed = len(reviewer.asked) - asked_before
    assert 0 < reviewed <= TOKEN_REVIEWS_PER_S * (elapsed + 1), (reviewed, elapsed)
    assert elapsed < TOKEN_REVIEW_CACHE_S
    assert reviews.known("good") is True, "the accepted answer outlived the flood"
    assert asyncio.run(reviews.accepts("good")) and reviewer.asked.count("good") == 1


def test_token_review_is_refused_without_an_api_server() -> None:
    with pytest.raises(ValueError, match="--auth-token-review needs an API server"):
        token_checks(AuthSettings(token_review=True), None)
    with pytest.raises(ValueError, match="--observe-auth-token-review needs an API server"):
        token_checks(AuthSettings(token_review=True), None, flags="--observe-")
    assert token_checks(AuthSettings(), None) is None, "no token source, no check"


def test_the_tls_context_requires_client_certificates_from_the_ca(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    served = tls_context(AuthSettings(tls_cert_file=cert, tls_key_file=key))
    assert served is not None and served.verify_mode == ssl.CERT_NONE
    checked = tls_context(AuthSettings(tls_cert_file=cert, tls_key_file=key, tls_client_ca_file=cert))
    assert checked is not None and checked.verify_mode == ssl.CERT_REQUIRED
    assert tls_context(AuthSettings()) is None


@pytest.mark.parametrize(
    ("argv", "accepted", "warnings"),
    [
        pytest.param([], True, 0, id="loopback needs nothing"),
        pytest.param(["--host", "0.0.0.0"], False, 0, id="all interfaces, no authentication: refused"),
        pytest.param(["--host", "0.0.0.0", "--verbs-insecure"], True, 1, id="all interfaces, --verbs-insecure"),
        pytest.param(["--host", "::", "--auth-token-file", "t"], True, 1, id="tokens in clear text"),
        pytest.param(
            ["--host", "10.0.0.1", "--tls-cert-file", "c", "--tls-key-file", "k", "--tls-client-ca-file", "ca"],
            True,
            0,
            id="client certificates over TLS",
        ),
    ],
)
def test_serving_the_verbs_off_loopback_needs_authentication_or_verbs_insecure(
    argv: list[str], accepted: bool, warnings: int, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = settings_from(parse_args(["serve", *argv]))
    problems, said = verb_findings(settings.host, settings.auth, insecure=settings.verbs_insecure)
    assert (not problems, len(said)) == (accepted, warnings)
    assert exposure_checked(settings) is accepted
    err = capsys.readouterr().err
    assert err.count("warning:") == warnings
    if not accepted:
        assert "--verbs-insecure" in err and "--auth-token-file" in err


def test_impossible_tls_settings_stop_the_start(capsys: pytest.CaptureFixture[str]) -> None:
    settings = settings_from(parse_args(["serve", "--tls-client-ca-file", "ca"]))
    assert not exposure_checked(settings)
    assert "--tls-client-ca-file needs --tls-cert-file" in capsys.readouterr().err
