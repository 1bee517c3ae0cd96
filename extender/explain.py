"""`tfjob-extender explain NAMESPACE/NAME`: where a TFJob, PodGroup or pod stands, for a person.

Asks a running extender (`GET /debug/explain/{namespace}/{name}`, read-only) and words its answer: the
job's state, weight and rank, what its gang waits for, the plan reserved or the best plan found, where it
was tried and why it falls short, and what would let it start. The exit code tells the state, for scripts:
0 started (every member placed or finished), 1 waiting, 2 unknown (the extender knows no such object),
3 the extender could not be asked (not reachable, refused, or an answer that is not an explanation).
An observe listener that guards its debug routes (`serve --observe-debug --observe-auth-*`) is asked with a
bearer token, read from `--token-file` or the environment variable `TFJOB_EXTENDER_TOKEN`. With `--what-if
FILE` the command asks instead what would happen to a TFJob not submitted yet (`extender.what_if`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8890"
"""The observe listener of `serve --observe-port 8890 --observe-debug` on this machine."""
TOKEN_ENVIRONMENT_VARIABLE = "TFJOB_EXTENDER_TOKEN"
"""Where `explain` finds a bearer token when no `--token-file` is given."""
REQUEST_TIMEOUT_S = 10.0
EXIT_STARTED = 0
EXIT_WAITING = 1
EXIT_UNKNOWN = 2
EXIT_UNREACHABLE = 3
EXIT_CODES = {"started": EXIT_STARTED, "waiting": EXIT_WAITING, "unknown": EXIT_UNKNOWN}


@dataclass(frozen=True, slots=True)
class Explanation:
    text: str
    exit_code: int
    body: dict[str, Any] | None = None


def explain(target: str, url: str = DEFAULT_URL, token: str | None = None) -> Explanation:
    """Ask the extender at `url` about `target` (`namespace/name`, or `name` in `default`), with `token` as
    a bearer token when given."""
    namespace, _, name = target.rpartition("/")
    namespace = namespace or "default"
    if not name or "/" in namespace:
        return Explanation(f"explain: {target!r} is not NAMESPACE/NAME", EXIT_UNKNOWN)
    path = f"/debug/explain/{urllib.parse.quote(namespace, safe='')}/{urllib.parse.quote(name, safe='')}"
    try:
        body = _get(url.rstrip("/") + path, token)
    except urllib.error.HTTPError as error:
        refused = error.code in (401, 403) and not token
        hint = f" (give a token: --token-file or {TOKEN_ENVIRONMENT_VARIABLE})" if refused else ""
        return Explanation(f"explain: the extender at {url} refused: HTTP {error.code}{hint}", EXIT_UNREACHABLE)
    except (OSError, ValueError) as error:
        return Explanation(f"explain: cannot ask the extender at {url}: {error}", EXIT_UNREACHABLE)
    status = body.get("status")
    if status not in EXIT_CODES:
        return Explanation(f"explain: unexpected answer from {url}: {json.dumps(body)[:300]}", EXIT_UNREACHABLE)
    return Explanation(describe(body), EXIT_CODES[status], body)


def _get(url: str, token: str | None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=REQUEST_TIMEOUT_S
        ) as response:
            data = response.read()
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise
        data = error.read()
    body = json.loads(data)
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")
    return body


def describe(body: dict[str, Any]) -> str:
    """The explanation in a few lines of text."""
    if body["status"] == "unknown":
        return f"{body['object']}: unknown — {body['summary']}"
    head = f"{body['object']} ({body['kind']}): {body['status'].upper()}"
    lines = [head if body.get("waitsFor") else f"{head} — {body['summary']}"]
    if body.get("job") and body["job"] != body["object"]:
        lines.append(f"  TFJob: {body['job']}")
    if body.get("podGroup") and body["podGroup"] != body["object"]:
        lines.append(f"  PodGroup: {body['podGroup']}")
    standing = body.get("standing") or {}
    if standing:
        lines.append("  " + _weights(standing))
    if standing.get("loops"):
        lines.append(f"  {standing['loops']}")
    pods = body["pods"]
    bound = pods["bound"]
    nodes = sorted(set(bound.values()))
    lines.append(
        f"  pods: {len(bound)}/{pods['total']} bound"
        + (f" on {', '.join(nodes)}" if nodes else "")
        + (f"; {len(pods['pending'])} pending" if pods["pending"] else "")
    )
    waits = body.get("waitsFor")
    if waits:
        lines.append(f"  waits for: {waits['waitsFor']} — {waits['why']}")
        best = waits.get("bestPlan")
        if best:
            tried = f", tried {best['triedOn']}" if best.get("triedOn") else ""
            lines.append(f"  best plan found: places {best['placed']} of the {best['needed']} pods it needs{tried}")
        if waits.get("blockers"):
            lines.append(f"  waiting on: {', '.join(waits['blockers'])}")
        if waits.get("wouldStart"):
            lines.append(f"  would start with: {waits['wouldStart']}")
    risk = body.get("atRisk")
    if risk and risk.get("basis") != "not running":
        lines.append(f"  {risk['text']}")
    forecast = body.get("startForecast")
    if forecast:
        lines.append(f"  {forecast['text']}" + _forecast_basis(forecast))
        for smaller in forecast.get("whatIf") or []:
            lines.append(
                f"    with {smaller['workers']} workers instead of {forecast.get('workers')}: {smaller['text']}"
            )
    if body.get("plan"):
        held = ", ".join(f"{entry['pod'].split('/')[-1]}→{entry['node']}" for entry in body["plan"])
        lines.append(f"  reserved plan: {held}")
    return "\n".join(lines)


def _forecast_basis(forecast: dict[str, Any]) -> str:
    """What the band rests on: its sampled futures and the past forecasts it was calibrated by."""
    if forecast.get("unknown"):
        return ""
    calibrated = forecast.get("calibratedWith") or 0
    basis = f"{forecast.get('samples', 0)} sampled futures"
    return f" ({basis}, calibrated by {calibrated} past forecasts)" if calibrated else f" ({basis}, not calibrated yet)"


def _weights(standing: dict[str, Any]) -> str:
    rank = standing.get("rank")
    place = f"rank {rank} of {standing.get('waiting', 0)} waiting gangs" if rank else "not in the wait queue"
    parts = [place, f"priority {standing.get('priority', 0)}"]
    if "agedWeight" in standing:
        parts.append(f"weight {standing['agedWeight']:.3f} (base {standing['baseWeight']:.3f})")
    elif "baseWeight" in standing:
        parts.append(f"weight {standing['baseWeight']:.3f}")
    inputs = standing.get("weightInputs")
    if inputs:
        parts.append(
            f"from {inputs['minWorkers']} min workers, CPU share {inputs['cpuShare']:.3f}, "
            f"memory share {inputs['memoryShare']:.3f}"
        )
    starvation = standing.get("starvation")
    if starvation and starvation["waitedSeconds"]:
        clock = f"waited {starvation['waitedSeconds']:.0f} s of the {starvation['limitSeconds']:.0f} s starvation limit"
        parts.append(clock + (" — starving, its weight ages" if starvation["starving"] else ""))
    return " · ".join(parts)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="NAMESPACE/NAME", nargs="?", help="a TFJob, PodGroup or pod (NAME alone: default)"
    )
    parser.add_argument("--url", default=DEFAULT_URL, help="the extender's address (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the extender's answer as JSON")
    parser.add_argument(
        "--token-file",
        type=argparse.FileType("r"),
        help=f"a file holding the bearer token an observe listener with --observe-auth-* asks for "
        f"(default: the environment variable {TOKEN_ENVIRONMENT_VARIABLE}, if set)",
    )
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])


def run(args: argparse.Namespace) -> int:
    """`tfjob-extender explain`: the explanation on stdout (a failure to ask on stderr), the exit code."""
    if args.target is None:
        sys.stderr.write("explain: give NAMESPACE/NAME (or --what-if FILE)\n")
        return EXIT_UNKNOWN
    answer = explain(args.target, args.url, bearer_token(args))
    if args.json and answer.body is not None:
        sys.stdout.write(json.dumps(answer.body, indent=2) + "\n")
    else:
        (sys.stdout if answer.body is not None else sys.stderr).write(answer.text + "\n")
    return answer.exit_code


def bearer_token(args: argparse.Namespace) -> str | None:
    """The token of `--token-file` (its first line), else of the environment, else none."""
    if args.token_file is not None:
        with args.token_file:
            return args.token_file.readline().strip() or None
    return os.environ.get(TOKEN_ENVIRONMENT_VARIABLE) or None
