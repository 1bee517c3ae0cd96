"""Who can reach a listener: before any process starts serving, `exposure_checked` prints the TLS and token
settings that are wrong (and refuses to start) and the exposures that are merely risky, such as a port off the
loopback address with no authentication or a read-only observe listener anyone can reach.
"""

from __future__ import annotations

import sys

from extender.config import Settings


def exposure_checked(settings: Settings) -> bool:
    """Print what is wrong (False: do not start) or risky about who can reach the port."""
    from extender.api.auth import exposure_warnings, settings_problems

    for problem in settings_problems(settings.auth):
        print(f"tfjob-extender: {problem}", file=sys.stderr)
    for warning in exposure_warnings(settings.host, settings.auth):
        print(f"tfjob-extender: warning: {warning}", file=sys.stderr)
    if settings.observe_port and exposure_warnings(settings.observe_host, settings.auth):
        print(
            f"tfjob-extender: note: the observe listener on {settings.observe_host}:{settings.observe_port} is "
            "read-only (no verbs); whoever reaches it can read /metrics, /debug and /ui",
            file=sys.stderr,
        )
    return not settings_problems(settings.auth)
