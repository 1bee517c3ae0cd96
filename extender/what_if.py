"""`tfjob-extender explain --what-if FILE`: what would happen to a TFJob if it were submitted now.

Reads the TFJob's manifest from FILE (YAML or JSON, `-` for standard input; of a file of several documents,
its one TFJob), sends it as JSON to a running extender (`POST /debug/what-if` on its observe listener, with
the bearer token `explain` sends), and words the answer in a line — `would start now on NODE, ...`,
`would wait: needs ...; ... free` or `never: bigger than the cluster — ...` — and a few lines of details.
Nothing is submitted. The exit code says which, for scripts: 0 would start now, 1 would wait, 2 would never
start or the manifest is not one the extender can answer for, 3 the extender could not be asked.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from extender.explain import (
    EXIT_UNREACHABLE,
    REQUEST_TIMEOUT_S,
    TOKEN_ENVIRONMENT_VARIABLE,
    Explanation,
    bearer_token,
)

WHAT_IF_PATH = "/debug/what-if"
EXIT_NOW = 0
EXIT_WAIT = 1
EXIT_NEVER = 2
"""Also the exit code of a manifest the extender cannot answer for (or that cannot be read)."""
EXIT_CODES = {"now": EXIT_NOW, "wait": EXIT_WAIT, "never": EXIT_NEVER}
REFUSED_INPUT = (400, 409, 413)
"""The extender's answers to a manifest it cannot answer for: not a TFJob, already known, too large."""
SHOWN_PODS = 12
"""Pods of a plan listed by name; the rest are counted."""


def what_if(file: str, url: str, token: str | None = None, namespace: str | None = None) -> Explanation:
    """Ask the extender at `url` what would happen to the TFJob of `file`, in `namespace` when its manifest
    names none (else `default`)."""
    try:
        manifest = read_manifest(file)
    except (OSError, ValueError, yaml.YAMLError) as error:
        return Explanation(f"explain --what-if: cannot read {file}: {error}", EXIT_NEVER)
    if namespace and isinstance(manifest.get("metadata"), dict) and not manifest["metadata"].get("namespace"):
        manifest["metadata"]["namespace"] = namespace
    try:
        status, body = _post(url.rstrip("/") + WHAT_IF_PATH, manifest, token)
    except (OSError, ValueError) as error:
        return Explanation(f"explain --what-if: cannot ask the extender at {url}: {error}", EXIT_UNREACHABLE)
    if status in REFUSED_INPUT and isinstance(body.get("error"), str):
        return Explanation(f"explain --what-if: {body['error']}", EXIT_NEVER)
    if status != 200 or body.get("verdict") not in EXIT_CODES:
        return Explanation(_refusal(url, status, body, token), EXIT_UNREACHABLE)
    return Explanation(describe(body), EXIT_CODES[body["verdict"]], body)


def read_manifest(file: str) -> dict[str, Any]:
    """The TFJob of `file` (`-`: standard input): its one document, or of several its one TFJob."""
    text = sys.stdin.read() if file == "-" else Path(file).read_text()
    documents = [document for document in yaml.safe_load_all(text) if document is not None]
    tfjobs = [document for document in documents if isinstance(document, dict) and document.get("kind") == "TFJob"]
    if len(tfjobs) == 1:
        return tfjobs[0]
    if len(documents) == 1 and isinstance(documents[0], dict):
        return documents[0]
    raise ValueError(f"it holds {len(tfjobs)} TFJobs among {len(documents)} documents: give it one TFJob")


def _post(url: str, manifest: dict[str, Any], token: str | None) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON object answered) of the manifest POSTed to `url`."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=json.dumps(manifest).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            status, data = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, data = error.code, error.read()
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    return status, body if isinstance(body, dict) else {}


def _refusal(url: str, status: int, body: dict[str, Any], token: str | None) -> str:
    if status in (401, 403):
        hint = f" (give a token: --token-file or {TOKEN_ENVIRONMENT_VARIABLE})" if not token else ""
        return f"explain --what-if: the extender at {url} refused: HTTP {status}{hint}"
    if status in (404, 405):
        return (
            f"explain --what-if: the extender at {url} does not answer {WHAT_IF_PATH} (HTTP {status}): its debug "
            "routes are off (--observe-debug) or it is older than this command"
        )
    answered = json.dumps(body)[:300] if body else "no JSON object"
    return f"explain --what-if: unexpected answer from {url}: HTTP {status}, {answered}"


def describe(body: dict[str, Any]) -> str:
    """The answer in a few lines of text: the verdict's line, then what it rests on."""
    verdict = body["verdict"]
    if verdict == "now":
        lines = [f"would start now on {', '.join(body.get('nodes') or [])}"]
    elif verdict == "wait":
        lines = [f"would wait: needs {body['needed']}; {body['free']} free"]
    else:
        lines = [f"never: bigger than the cluster — {body['reason']}"]
    lines.append(f"  {body['object']} (TFJob, not submitted): {body['pods']} pods, {body['asks']}")
    if verdict == "now":
        plan = body.get("plan") or []
        placed = ", ".join(f"{entry['pod'].split('/')[-1]}→{entry['node']}" for entry in plan[:SHOWN_PODS])
        more = f" and {len(plan) - SHOWN_PODS} more" if len(plan) > SHOWN_PODS else ""
        lines.append(f"  plan: {placed}{more}")
        return "\n".join(lines)
    if verdict == "never":
        return "\n".join(lines)
    for short in body.get("shortfall") or []:
        lines.append(f"  short of {short['resource']}: needs {short['needed']}, {short['free']} free")
    lines.append(f"  why: {body['reason']}")
    if body.get("rank"):
        lines.append(f"  it would be rank {body['rank']} of {body['waiting']} waiting gangs")
    if body.get("freeable") and body["freeable"] != "nothing":
        lines.append(f"  lower-ranked work holds {body['freeable']} that a preemption could free")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--what-if FILE` and `--namespace` on `explain`'s parser."""
    parser.add_argument(
        "--what-if",
        metavar="FILE",
        help="instead of NAMESPACE/NAME: say what would happen to the TFJob of FILE (YAML or JSON, - for standard "
        "input) if it were submitted now, without submitting it (exit 0 would start now, 1 would wait, 2 would "
        "never start or FILE is not a TFJob the extender can answer for, 3 extender not reachable)",
    )
    parser.add_argument(
        "--namespace",
        "-n",
        help="with --what-if: the namespace of a manifest that names none (default: default)",
    )


def run(args: argparse.Namespace) -> int:
    """`tfjob-extender explain --what-if FILE`: the answer on stdout (a failure on stderr), the exit code."""
    if args.target is not None:
        sys.stderr.write("explain: give NAMESPACE/NAME or --what-if FILE, not both\n")
        return EXIT_NEVER
    answer = what_if(args.what_if, args.url, bearer_token(args), args.namespace)
    if args.json and answer.body is not None:
        sys.stdout.write(json.dumps(answer.body, indent=2) + "\n")
    else:
        (sys.stdout if answer.body is not None else sys.stderr).write(answer.text + "\n")
    return answer.exit_code
