"""`tfjob-extender probe URL...`: whether running listeners are ready, for scripts and `helm test`.

Asks each URL's `/readyz` (an observe listener's or the verb listener's: both answer it without a token)
and prints one line per URL; exit 0 when every one answered 200, 1 when one answered anything else or could
not be asked. The chart's test pod runs it against the extender's and the loops' Services, so `helm test`
says whether both processes serve a synced model.
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request

REQUEST_TIMEOUT_S = 10.0
"""Seconds one URL has to answer."""
ANSWER_SHOWN_CHARS = 200
"""Characters of an answer that is not 200 printed with it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("urls", nargs="+", metavar="URL", help="a listener's address, e.g. http://127.0.0.1:8890")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])


def readiness(url: str) -> tuple[bool, str]:
    """Whether the listener at `url` is ready, and a line saying so."""
    target = url.rstrip("/") + "/readyz"
    try:
        with urllib.request.urlopen(target, timeout=REQUEST_TIMEOUT_S):
            return True, f"{target}: ready"
    except urllib.error.HTTPError as error:
        answer = error.read()[:ANSWER_SHOWN_CHARS].decode("utf-8", "replace").strip()
        return False, f"{target}: not ready: HTTP {error.code} {answer}"
    except (OSError, ValueError) as error:
        return False, f"{target}: cannot ask: {error}"


def run(args: argparse.Namespace) -> int:
    ready = True
    for url in args.urls:
        ok, line = readiness(url)
        ready = ready and ok
        sys.stdout.write(line + "\n")
    return 0 if ready else 1
