"""`tfjob-extender preflight`: the flags, the report, the exit code.

Builds the install's names from `--namespace`, `--release` and `--scheduler-name`, reads the API server with
`--kubeconfig` (else in-cluster credentials, else the default kubeconfig, as every process of the extender
does), runs the pure checks and prints one line per finding (`ok|warn|fail  <check>: <found> [— fix: …]`)
and a summary, or with `--json` one JSON object. The exit code is for scripts and CI: `EXIT_PASSED` when no
check failed (warnings allowed), `EXIT_FAILED` when one did, `EXIT_UNREACHABLE` when the API server could
not be asked.
"""

from __future__ import annotations

import argparse
import json
import sys

import yaml
from kubernetes import config

from extender.k8s.client import make_api_client
from extender.k8s.reads import Unreachable
from extender.preflight import reading
from extender.preflight.checks import any_failed, run_checks
from extender.preflight.install import (
    DEFAULT_NAMESPACE,
    DEFAULT_RELEASE,
    DEFAULT_SCHEDULER_NAME,
    FAIL,
    OK,
    WARN,
    Finding,
    Install,
)

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_UNREACHABLE = 3
HELP = "check an install against the API server: training-operator's flag, the CRDs, kube-scheduler's version, "
HELP += "each identity's rights, the webhook (exit 0 passed, 1 a check failed, 3 API server not reachable)"
DESCRIPTION = """\
Answers a platform team's first questions about an install of the chart, from the API server:

  training-operator      a Deployment running it passes --gang-scheduler-name=<scheduler name>
  crd ...                tfjobs.kubeflow.org exists; the chart's three CRDs exist and are owned by the
                         release (Helm's label and annotations), else the commands that adopt them
  kube-scheduler skew    the release's kube-scheduler is not newer than the API server, nor more than
                         one minor older
  rights <account>       kube-scheduler's, the extender's and the loops' ServiceAccounts may do what
                         their processes do (SubjectAccessReviews)
  webhook ...            with native gangs' MutatingWebhookConfiguration: its Service selects a pod, it
                         has a CA, and NetworkPolicies let the API server in

One line per finding, `ok|warn|fail  <check>: <what was found> [— fix: <what to do>]`.
Exit 0 when no check failed (warnings allowed), 1 when one failed, 3 when the API server cannot be reached.
The credentials need to read Deployments in every namespace, CRDs, the webhook's objects, and to create
SubjectAccessReviews (a cluster administrator's do)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--kubeconfig", help="the kubeconfig to use (default: in-cluster, else ~/.kube/config)")
    parser.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help=f"the release's namespace (default {DEFAULT_NAMESPACE})"
    )
    parser.add_argument(
        "--release",
        default=DEFAULT_RELEASE,
        help=f"the Helm release (default {DEFAULT_RELEASE}); objects are named as the chart names them: the release "
        "alone when it contains 'tfjob-extender', else <release>-tfjob-extender",
    )
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help=f"the chart's schedulerName (default {DEFAULT_SCHEDULER_NAME})",
    )
    parser.add_argument(
        "--crds-external",
        action="store_true",
        help="the release was installed with crds.install=false: the chart's CRDs need only exist",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    parser.add_argument("--log-level", default="error", choices=["debug", "info", "warning", "error"])


def run(args: argparse.Namespace) -> int:
    install = Install(args.namespace, args.release, args.scheduler_name, args.crds_external)
    try:
        api = make_api_client(args.kubeconfig)
    except (config.ConfigException, OSError, ValueError, yaml.YAMLError) as error:
        return _unreachable(args, install, f"cannot load the credentials: {error}")
    try:
        observed = reading.read(api, install)
    except Unreachable as error:
        return _unreachable(args, install, str(error))
    finally:
        api.close()  # type: ignore[no-untyped-call]
    findings = run_checks(install, observed)
    code = EXIT_FAILED if any_failed(findings) else EXIT_PASSED
    if args.json:
        report = {**_identity(install), "exitCode": code, "findings": [f.as_json() for f in findings]}
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stdout.write("".join(f.line() + "\n" for f in findings) + summary(install, findings) + "\n")
    return code


def summary(install: Install, findings: list[Finding]) -> str:
    counts = {status: sum(f.status == status for f in findings) for status in (FAIL, WARN, OK)}
    return f"preflight of {install.namespace}/{install.release}: " + ", ".join(f"{n} {s}" for s, n in counts.items())


def _identity(install: Install) -> dict[str, str]:
    return {
        "namespace": install.namespace,
        "release": install.release,
        "fullname": install.fullname,
        "schedulerName": install.scheduler_name,
    }


def _unreachable(args: argparse.Namespace, install: Install, why: str) -> int:
    if args.json:
        report = {**_identity(install), "exitCode": EXIT_UNREACHABLE, "error": why, "findings": []}
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        sys.stderr.write(f"preflight: {why}\n")
    return EXIT_UNREACHABLE
