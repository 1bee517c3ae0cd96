"""Who can reach a listener: before any process starts serving, `exposure_checked` prints the TLS and token
settings that are wrong (and refuses to start) and the exposures that are merely risky. The verb listener
(`serve --host/--port`) is judged by `--tls-*` and `--auth-*`: off the loopback address it needs client
certificates or bearer tokens, or `--verbs-insecure`; the observe listener (`serve --observe-*`, or
the one listener of `loops` and `scaler`) by `--observe-*`: its `/debug` and `/ui` (`--observe-debug`) off
the loopback address need a token check of their own, or `--observe-debug-insecure`.
"""

from __future__ import annotations

import sys

from extender.config import Settings

OBSERVE_ONLY_FLAGS = "--observe-debug, --observe-debug-insecure, --observe-tls-* and --observe-auth-*"


def exposure_checked(settings: Settings, *, verbs: bool = True) -> bool:
    """Print what is wrong (False: do not start) or risky about who can reach the ports: `serve`'s verb
    listener and observe listener (`verbs`), or a loop process's one listener (`settings.host`/`port`)."""
    from extender.api.auth import observe_findings, verb_findings

    problems: list[str] = []
    warnings: list[str] = []
    observe_host: str | None = settings.host
    if verbs:
        verb_problems, verb_warnings = verb_findings(settings.host, settings.auth, insecure=settings.verbs_insecure)
        problems += verb_problems
        warnings += verb_warnings
        observe_host = settings.observe_host if settings.observe_port else None
        if observe_host is None and _observe_flags_given(settings):
            problems.append(f"{OBSERVE_ONLY_FLAGS} apply to the observe listener: they need --observe-port")
    if observe_host is not None:
        observe_problems, observe_warnings = observe_findings(
            observe_host,
            settings.observe_auth,
            debug=settings.observe_debug,
            insecure=settings.observe_debug_insecure,
        )
        problems += observe_problems
        warnings += observe_warnings
    for problem in problems:
        print(f"tfjob-extender: {problem}", file=sys.stderr)
    for warning in warnings:
        print(f"tfjob-extender: warning: {warning}", file=sys.stderr)
    return not problems


def _observe_flags_given(settings: Settings) -> bool:
    observe = settings.observe_auth
    return (
        settings.observe_debug
        or settings.observe_debug_insecure
        or observe.checks_tokens
        or observe.tls_cert_file is not None
        or observe.tls_key_file is not None
    )
