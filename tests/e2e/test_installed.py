"""End to end: the Helm chart's installed form on a control plane with RBAC on, every process under its own
ServiceAccount.

A control plane of its own for this module (`installed`): etcd, kube-apiserver serving Kubernetes' own gang
API and writing an audit log of every request (level Metadata), kwok and training-operator, started with
`--gang-scheduler-name` set to the chart's scheduler name; no extender and no kube-scheduler of the
control plane's own. The chart is rendered by the repository's Helm for the control plane's Kubernetes
version, with the values a user sets for this (`VALUES`): debug views behind TokenReview for one viewer
ServiceAccount, the loops acting, the policy the scenarios need, and kube-scheduler given the feature gate
the cluster's gang API needs. Every rendered object but the Deployments is applied with the
administrator's credentials; the Deployments' containers run as local processes exactly as rendered,
each with a TokenRequest token of its own ServiceAccount (`installed_form`, which lists the only changes).

The tests run in order and the last reads what the others did: the images are the programs run; every
probe answers within its budget; gangs in all three PodGroup dialects start whole, a wide job with its PS
beside its workers; a job-level preemption evicts its victims through the Eviction API under a
PodDisruptionBudget and the loops count it; a long runner is suspended for a fresh gang; an elastic job
grows into idle room; the debug views want the viewer's token; and the audit log shows that no request of
the chart's ServiceAccounts was refused and that every grant of the chart's own roles was used (or is on
`UNREACHED_GRANTS`, with the code path that needs it).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import re
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

import extender
from extender.devcluster import (
    SCHEDULER_NAME,
    UNVERIFIED_TLS,
    ApiError,
    LocalControlPlane,
    build_control_plane,
    wait_until,
)
from extender.devcluster.access import SERVICE_ACCOUNT_TOKEN_S, token_file_of
from extender.k8s import secrets
from extender.k8s.client import TOKEN_FILE_REREAD_S
from extender.state.convert import GANG_PLAN_ANNOTATION
from tests.e2e import installed_form
from tests.e2e.audit import AUDIT_POLICY, answered_after, grants, refused, requests_by
from tests.e2e.conftest import MIN_RUN_S, STARVATION_LIMIT_S, Scene, scene_on
from tests.e2e.installed_form import Container, Probe
from tests.e2e.scenarios import (
    BATCH_PODS,
    every_dialect_podgroup_paths,
    fill_with_a_low_priority_batch,
    gangs_of_every_dialect_start_whole,
    gangs_of_every_dialect_started_whole,
    grow_an_elastic_job_as_capacity_frees,
    preempt_the_batch_whole_for_a_higher_priority_gang,
    submit_gangs_of_every_dialect,
    suspend_a_long_runner_for_a_fresh_gang,
    wide_job_takes_the_fewest_nodes_with_its_ps_beside_its_workers,
)
from tests.e2e.workloads import disruption_budget_allowing, not_failed, ps_uid, tfjob_object
from tests.helm import RELEASE, Document, named, render

pytestmark = pytest.mark.e2e

NAMESPACE = "tfjob-system"
"""The release's namespace."""
VIEWER = "debug-viewer"
"""The ServiceAccount allowed to read the debug views (`observe.debug.allowedUsers`)."""
STRANGER = "not-a-viewer"
"""A ServiceAccount the API server authenticates but the debug views do not allow."""
VIEWER_USER = f"system:serviceaccount:{NAMESPACE}:{VIEWER}"
VALUES: dict[str, Any] = {
    "policy": {
        "starvation_limit_s": STARVATION_LIMIT_S,
        "suspension_min_history": 5,
        "suspension_newcomer_s": 0,
        "restart_cost_s": 0,
        "max_checkpoint_wait_s": 0,
        "scale_cooldown_s": 5,
        "min_run_before_preemption_s": MIN_RUN_S,
    },
    "loops": {"dryRun": False},
    "observe": {"debug": {"enabled": True, "auth": "tokenReview", "allowedUsers": [VIEWER_USER]}},
}
"""What a user sets for this install, but for kube-scheduler's feature gates (the cluster's, added when
rendering): the shared plane's starvation limit; the suspension scenario's history of five finished jobs, no
newcomer suspension, a restart that costs nothing and no wait for checkpoints; the scaler's short cooldown;
the loops acting; the debug views for the viewer."""
PROCESS_NAMES = {"kube-scheduler": "kube-scheduler", "tfjob-extender": "extender", "tfjob-extender-loops": "loops"}
"""Container → the name of its process in the control plane's group (and its log file); the shared helpers
read the extender's log as `extender`."""
UNREACHED_GRANTS: dict[tuple[str, str, str, str], str] = {
    (f"{RELEASE}-loops", "", "secrets", "update"): "k8s/verbs_tls.py: the verbs' certificates renewed, which is due "
    "only when a third of their 30 days is left (tests/unit/k8s/test_verbs_certificates.py)",
    **{
        (
            account,
            "kueue.x-k8s.io",
            "workloadpriorityclasses",
            verb,
        ): "k8s/informer.py: Kueue's WorkloadPriorityClasses, "
        "which this plane does not serve (no Kueue: the optional kind is skipped); watched in "
        "tests/e2e/test_kueue_priority_boost.py"
        for account in (RELEASE, f"{RELEASE}-loops")
        for verb in ("list", "watch")
    },
}
"""(account, API group, resource[/subresource], verb) the chart grants for a code path this module does not
reach → that code path. The scenarios reach every other grant, the patches of PodGroups of all three
dialects by both processes among them (each process alone plans a gang of every dialect while the other is
down, so neither's patch depends on which of them reserves a plan first)."""
CREDENTIALS = ("credentials-1", "credentials-2")
"""The Secrets the processes' first and rotated tokens are bound to."""
SCENARIOS = (
    "gangs placed by the extender",
    "gangs planned by the loops",
    "wide job",
    "preemption",
    "suspension",
    "scale-out",
    "debug views",
)
"""What the module must have run through before the audit log says which grants went unused."""


@dataclass
class Installed:
    plane: LocalControlPlane
    docs: list[Document]
    audit_log: Path
    probe_times: dict[Probe, float | None]
    ports: dict[str, int]
    """Process name → its observe port (kube-scheduler's: its secure port)."""
    tokens: dict[str, str]
    """ServiceAccount of the viewer and the stranger → a token of it."""
    kubeconfigs: dict[str, Path]
    """The chart's ServiceAccounts → the kubeconfig their processes run with (its token in a file beside it,
    bound to the Secret `CREDENTIALS[0]`, as a pod's projected token is bound to the pod)."""
    passed: set[str] = field(default_factory=set)
    """The scenarios run through so far (`SCENARIOS`)."""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    with installed_release(tmp_path_factory.mktemp("installed"), VALUES) as release:
        yield release


@contextlib.contextmanager
def installed_release(run_dir: Path, values: dict[str, Any]) -> Iterator[Installed]:
    """A control plane of its own with the chart rendered with `values` (and the cluster's gates for
    kube-scheduler) applied, its Deployments' containers running as processes, every probe answered. The
    namespaces `managedNamespaces` lists are made first, as a cluster has them before such an install."""
    policy, audit_log = run_dir / "audit-policy.yaml", run_dir / "audit.log"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    audit = (f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}")
    with LocalControlPlane(
        build_control_plane(),
        run_dir=run_dir,
        with_extender=False,
        with_scheduler=False,
        with_operator=True,
        workload_api=True,
        apiserver_args=audit,
    ) as plane:
        values = {**values, "kubeScheduler": {"extraArgs": list(plane.feature_gate_args)}}
        docs = render(values, release=RELEASE, namespace=NAMESPACE, kube_version=plane.kubernetes_version())
        for namespace in values.get("managedNamespaces") or ():
            plane.create_namespace(namespace)
        apply_all_but_deployments(plane, docs)
        tokens = {}
        for account in (VIEWER, STRANGER):
            plane.post(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", {"metadata": {"name": account}})
            tokens[account] = plane.request_token(NAMESPACE, account, SERVICE_ACCOUNT_TOKEN_S)
        plane.post(f"/api/v1/namespaces/{NAMESPACE}/secrets", credentials_anchor(CREDENTIALS[0]))
        started, ports, kubeconfigs = start_containers(plane, docs, run_dir / "installed")
        found = installed_form.probes(installed_form.containers(docs))
        probe_times = installed_form.answer_within_budget(plane, started, found)
        yield Installed(plane, docs, audit_log, probe_times, ports, tokens, kubeconfigs)


def credentials_anchor(name: str) -> dict[str, Any]:
    """An empty Secret the processes' tokens are bound to: deleting it revokes them, as deleting a pod
    revokes the projected tokens its kubelet mounted (the Secret holds nothing itself)."""
    return {
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "installed-form-test"}},
        "type": "Opaque",
    }


def apply_all_but_deployments(plane: LocalControlPlane, docs: list[Document]) -> None:
    """Apply the rendered objects but the Deployments and `helm test`'s Pod as the administrator (the CRDs,
    which the control plane installed from the same render, are applied over)."""
    try:
        plane.create_namespace(NAMESPACE)
    except ApiError as error:
        if error.status != 409:
            raise
    manifest = yaml.safe_dump_all([doc for doc in docs if doc["kind"] not in ("Deployment", "Pod")])
    command = [str(plane.bin / "kubectl"), "--kubeconfig", str(plane.kubeconfig), "apply", "--server-side", "-f", "-"]
    done = subprocess.run(command, input=manifest, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr


def start_containers(
    plane: LocalControlPlane, docs: list[Document], directory: Path
) -> tuple[dict[str, float], dict[str, int], dict[str, Path]]:
    """Every container of the rendered Deployments as a process of the control plane's group, under its own
    ServiceAccount, those that mount a Secret once it exists (the loops write the verbs' certificates, as the
    kubelet waits for a pod's Secrets); returns container → when it started (monotonic), process → its
    observe port, and ServiceAccount → its kubeconfig."""
    kubeconfigs: dict[str, Path] = {}
    started, ports = {}, {}
    (directory / "credentials").mkdir(parents=True)
    every = installed_form.containers(docs)
    for container in every:
        installed_form.refuse_taken_ports(container)
    for container in sorted(every, key=lambda c: bool(installed_form.mounted_secrets(c))):
        for secret in installed_form.mounted_secrets(container):
            wait_until(f"the Secret {secret}", functools.partial(secret_texts, plane, secret), 60)
        account = installed_form.service_account(docs, container)
        if account not in kubeconfigs:
            path = directory / "credentials" / f"{account}.kubeconfig"
            kubeconfigs[account] = plane.service_account_kubeconfig(NAMESPACE, account, path, CREDENTIALS[0])
        mounts = installed_form.mounted_files(docs, container, directory, lambda name: secret_texts(plane, name))
        command = installed_form.local_command(plane, docs, container, kubeconfigs[account], mounts)
        name = PROCESS_NAMES.get(container.name, container.name)
        started[container.name] = time.monotonic()
        plane.spawn(name, command, installed_form.environment(container))
        (ports[name],) = {probe.port for probe in installed_form.probes([container])}
        if "serve" in command:
            plane.extender_port, plane.observe_port = verb_port(container), ports[name]
    return started, ports, kubeconfigs


def secret_texts(plane: LocalControlPlane, name: str) -> dict[str, str]:
    """The keys of the Secret `name` of the release's namespace → their texts ({} while there is none)."""
    try:
        secret = plane.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}")
    except ApiError as error:
        if error.status == 404:
            return {}
        raise
    return secrets.texts(secret)


def verb_port(container: Container) -> int:
    """The port of `serve`'s verb listener (its `--port`), which kube-scheduler calls over mutual TLS; its
    `/debug` is on the observe port, behind the viewer's token."""
    args = container.spec["args"]
    return int(args[args.index("--port") + 1])


@contextlib.contextmanager
def stopped(installed: Installed, process: str) -> Iterator[None]:
    """The process stopped (SIGTERM, as a rollout would), then started again with its command and ready."""
    installed.plane.stop_process(process)
    try:
        yield
    finally:
        start_again(installed, process)


def start_again(installed: Installed, process: str) -> None:
    """A stopped process started again with the command it was first started with, once it is ready."""
    plane = installed.plane
    plane.restart(process)
    readyz = f"http://127.0.0.1:{installed.ports[process]}/readyz"
    wait_until(f"the restarted {process}'s /readyz", lambda: plane.probe(readyz), 60)


@pytest.fixture
def scene(installed: Installed, request: pytest.FixtureRequest) -> Iterator[Scene]:
    yield from scene_on(installed.plane, request)


def get(url: str, token: str | None = None) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET, with the bearer `token` if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def metric(port: int, name: str) -> float:
    """The value of the sample `name` on the `/metrics` of the listener at `port` (0 when absent)."""
    status, _, body = get(f"http://127.0.0.1:{port}/metrics")
    assert status == 200, status
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return 0.0


def version_of(command: list[str]) -> str:
    """The last word `COMMAND --version` prints (kube-scheduler: `Kubernetes v1.37.1`)."""
    return subprocess.run([*command, "--version"], check=True, capture_output=True, text=True).stdout.split()[-1]


def test_the_rendered_images_are_the_programs_run_here(installed: Installed) -> None:
    stand_ins = installed_form.stand_ins(installed.plane)
    images = {c.name: c.image for c in installed_form.containers(installed.docs)}
    assert images["kube-scheduler"] == ("registry.k8s.io/kube-scheduler", version_of(stand_ins["kube-scheduler"]))
    assert version_of(stand_ins["kube-scheduler"]) == installed.plane.kubernetes_version()
    for name in ("tfjob-extender", "tfjob-extender-loops"):
        assert images[name] == ("ghcr.io/tfjob-extender/tfjob-extender", extender.__version__)
    assert version_of(stand_ins["tfjob-extender"]) == extender.__version__


def test_helm_tests_pod_passes_when_its_command_runs_here(installed: Installed) -> None:
    """`helm test`'s pod (kwok would only pretend to run it): its rendered command, run as a process with the
    Services' addresses pointing at the processes behind them, passes; with the loops stopped it fails."""
    (probe,) = installed_form.hook_pods(installed.docs, "test")
    assert probe.pod["automountServiceAccountToken"] is False
    command = [installed_form.local_url(installed.docs, a) for a in installed_form.program(installed.plane, probe)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": ready") == 2, done.stdout
    with stopped(installed, "loops"):
        failed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert failed.returncode == 1 and "cannot ask" in failed.stdout, failed.stdout


def test_the_processes_run_under_the_accounts_whose_credentials_they_mount(installed: Installed) -> None:
    accounts = {
        c.name: installed_form.service_account(installed.docs, c) for c in installed_form.containers(installed.docs)
    }
    assert accounts == {
        "kube-scheduler": f"{RELEASE}-scheduler",
        "tfjob-extender": RELEASE,
        "tfjob-extender-loops": f"{RELEASE}-loops",
    }
    assert named(installed.docs, "ServiceAccount", RELEASE)["automountServiceAccountToken"] is False


def test_every_probe_the_chart_declares_answers_within_its_budget(installed: Installed) -> None:
    assert len(installed.probe_times) == 6, "readiness and liveness of each of the three containers"
    late = {
        f"{probe.container} {probe.kind} {probe.url}": (took, probe.budget_s)
        for probe, took in installed.probe_times.items()
        if took is None or took > probe.budget_s
    }
    assert not late, f"probes that did not answer 200 within their budget (took, budget in s): {late}"


def test_the_extender_alone_starts_gangs_of_every_dialect_whole(installed: Installed, scene: Scene) -> None:
    """With the loops down, the extender's `filter` is what reserves and publishes each gang's plan."""
    with stopped(installed, "loops"):
        gangs_of_every_dialect_start_whole(installed.plane, scene)
    installed.passed.add("gangs placed by the extender")


def test_the_loops_plan_gangs_of_every_dialect_ahead_of_their_pods_and_the_extender_places_them_so(
    installed: Installed, scene: Scene
) -> None:
    """With the extender down, kube-scheduler's attempts fail and the loops reserve each gang's plan ahead
    of its pods, on its PodGroup; the extender, back, reads the plans from the API server and steers every
    member to its planned node."""
    plane = installed.plane
    paths = every_dialect_podgroup_paths(plane, scene.namespace)

    def published() -> dict[str, dict[str, str]] | None:
        annotations = {gang: plane.get(path)["metadata"].get("annotations") or {} for gang, path in paths.items()}
        plans = {
            gang: json.loads(a[GANG_PLAN_ANNOTATION])["pods"]
            for gang, a in annotations.items()
            if GANG_PLAN_ANNOTATION in a
        }
        return plans if len(plans) == len(paths) else None

    with stopped(installed, "extender"):
        submit_gangs_of_every_dialect(plane, scene)
        plans = wait_until("the loops' plans on the PodGroups of every dialect", published, 60)
    assert gangs_of_every_dialect_started_whole(plane, scene) == plans
    installed.passed.add("gangs planned by the loops")


def test_a_wide_job_takes_the_fewest_nodes_with_its_ps_beside_its_workers(installed: Installed, scene: Scene) -> None:
    wide_job_takes_the_fewest_nodes_with_its_ps_beside_its_workers(installed.plane, scene)
    installed.passed.add("wide job")


def test_a_preemption_evicts_its_victims_through_the_eviction_api_under_their_disruption_budget(
    installed: Installed, scene: Scene
) -> None:
    plane, ns = installed.plane, scene.namespace
    fill_with_a_low_priority_batch(plane, scene)
    disruption_budget_allowing(plane, ns, "batch", BATCH_PODS)
    evictions = "tfjob_extender_preemption_evictions_total"
    before = metric(installed.ports["loops"], evictions)
    preempt_the_batch_whole_for_a_higher_priority_gang(plane, scene)
    budget = plane.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/batch")["status"]
    victims = {"batch-ps-0", *(f"batch-worker-{index}" for index in range(BATCH_PODS - 1))}
    assert set(budget.get("disruptedPods") or {}) == victims, "every victim went through the Eviction API"
    assert budget["disruptionsAllowed"] == 0, budget
    assert metric(installed.ports["loops"], evictions) - before == BATCH_PODS
    installed.passed.add("preemption")


def test_a_long_runner_is_suspended_for_a_fresh_gang(installed: Installed, scene: Scene) -> None:
    plane = installed.plane

    def restart_loops() -> None:
        plane.stop_process("loops")
        start_again(installed, "loops")

    suspend_a_long_runner_for_a_fresh_gang(plane, scene, restart_loops)
    installed.passed.add("suspension")


def test_an_elastic_job_grows_into_idle_room(installed: Installed, scene: Scene) -> None:
    plane, ns = installed.plane, scene.namespace
    ps, grown = grow_an_elastic_job_as_capacity_frees(plane, scene)
    status, _, body = get(f"http://127.0.0.1:{installed.ports['loops']}/debug/scaler", installed.tokens[VIEWER])
    assert status == 200, body
    scaler = json.loads(body)
    assert scaler["leading"] and [a["kind"] for a in scaler["actions"]].count("scale-out") >= len(grown)
    assert ps_uid(plane, ns, "elastic") == ps, "the PS is never touched"
    assert not_failed(tfjob_object(plane, ns, "elastic"))
    installed.passed.add("scale-out")


def test_the_debug_views_want_the_viewers_token_and_the_metrics_are_open(installed: Installed) -> None:
    for process, path in (("extender", "/debug/state"), ("loops", "/debug/scaler")):
        url = f"http://127.0.0.1:{installed.ports[process]}{path}"
        for token in (None, installed.tokens[STRANGER]):
            status, content_type, body = get(url, token)
            assert (status, content_type) == (401, "application/json"), (url, status, body)
            assert "error" in json.loads(body)
        status, content_type, body = get(url, installed.tokens[VIEWER])
        assert status == 200, (url, status, body[:300])
        assert content_type.startswith("application/json"), content_type
        status, _, _ = get(f"http://127.0.0.1:{installed.ports[process]}/metrics")
        assert status == 200
    installed.passed.add("debug views")


def test_every_metric_the_alerts_and_the_dashboard_read_is_exposed(installed: Installed) -> None:
    """The PrometheusRule and the dashboard the chart renders name only metrics the three processes' scraped
    `/metrics` expose (kube-scheduler's through its secure port, as the ServiceMonitor scrapes it)."""
    monitored = render(
        {"monitoring": {"prometheusRule": {"enabled": True}, "dashboard": {"enabled": True}}},
        release=RELEASE,
        namespace=NAMESPACE,
        kube_version=installed.plane.kubernetes_version(),
    )
    rule = named(monitored, "PrometheusRule", RELEASE)
    dashboard = named(monitored, "ConfigMap", f"{RELEASE}-dashboard")["data"]["tfjob-extender.json"]
    expressions = [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]
    expressions += [target["expr"] for panel in json.loads(dashboard)["panels"] for target in panel["targets"]]
    named_metrics = {name for text in expressions for name in MONITORED_METRIC.findall(text)}
    scraped = exposition(f"http://127.0.0.1:{installed.ports['extender']}/metrics")
    scraped |= exposition(f"http://127.0.0.1:{installed.ports['loops']}/metrics")
    scraped |= exposition(f"https://127.0.0.1:{installed.ports['kube-scheduler']}/metrics", installed.plane.token)
    missing = {name for name in named_metrics if name not in scraped}
    assert named_metrics and not missing, f"named by the alerts or the dashboard, exposed by no process: {missing}"


MONITORED_METRIC = re.compile(r"\b((?:tfjob_extender|scheduler)_[a-z_]+)\b")
"""The metrics of ours and of kube-scheduler an expression names (`up` is Prometheus's own)."""


def exposition(url: str, token: str | None = None) -> set[str]:
    """Every family and sample name a `/metrics` exposes (a histogram's `_bucket`, `_count` and `_sum` too)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    context = UNVERIFIED_TLS if url.startswith("https") else None
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context) as answer:
        text = answer.read().decode()
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        if family.type == "histogram":
            names.update(f"{family.name}{suffix}" for suffix in ("_bucket", "_count", "_sum"))
    return names


def test_every_process_keeps_working_as_its_token_rotates(installed: Installed, scene: Scene) -> None:
    """Each process's token file gets a new token (as a kubelet rotates a projected token); once every client
    had time to read it again (`TOKEN_FILE_REREAD_S`, client-go's period too) the old tokens are revoked.
    Then kube-scheduler and the loops go on renewing their Leases, and a new gang starts whole, its plan
    written by the extender: each with its new token, the old one refused."""
    plane = installed.plane
    plane.post(f"/api/v1/namespaces/{NAMESPACE}/secrets", credentials_anchor(CREDENTIALS[1]))
    old_tokens = {account: token_file_of(path).read_text() for account, path in installed.kubeconfigs.items()}
    for account, path in installed.kubeconfigs.items():
        token_file_of(path).write_text(plane.request_token(NAMESPACE, account, SERVICE_ACCOUNT_TOKEN_S, CREDENTIALS[1]))
    time.sleep(TOKEN_FILE_REREAD_S + 5)
    plane.delete(f"/api/v1/namespaces/{NAMESPACE}/secrets/{CREDENTIALS[0]}")
    revoked = datetime.datetime.now(datetime.UTC)
    for account, token in old_tokens.items():
        assert_token_refused(plane, token, account)
    gangs_of_every_dialect_start_whole(plane, scene)
    leases = {
        "kube-scheduler": f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{SCHEDULER_NAME}",
        "loops": f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{RELEASE}-loops",
    }
    for process, lease in leases.items():
        renewed = functools.partial(lease_renewed_after, plane, lease, revoked)
        wait_until(f"{process}'s Lease renewed with its new token", renewed, 30)
    answered_since = answered_after(installed.audit_log, accounts_of(installed), revoked)
    assert answered_since == accounts_of(installed), "every process was served with its new token"


def accounts_of(installed: Installed) -> set[str]:
    return {f"system:serviceaccount:{NAMESPACE}:{account}" for account in installed.kubeconfigs}


def assert_token_refused(plane: LocalControlPlane, token: str, account: str) -> None:
    request = urllib.request.Request(
        f"https://127.0.0.1:{plane.api_port}/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
        headers={"Authorization": f"Bearer {token}"},
    )
    context = ssl.create_default_context(cafile=str(plane.certificate_authority))
    try:
        with urllib.request.urlopen(request, timeout=10, context=context):
            pytest.fail(f"{account}'s revoked token still authenticates")
    except urllib.error.HTTPError as error:
        assert error.code == 401, (account, error.code)


def lease_renewed_after(plane: LocalControlPlane, path: str, moment: datetime.datetime) -> bool:
    renewed = str((plane.get(path).get("spec") or {}).get("renewTime") or "")
    return bool(renewed) and datetime.datetime.fromisoformat(renewed.replace("Z", "+00:00")) > moment


def test_the_chart_grants_what_its_processes_use_and_nothing_more(installed: Installed) -> None:
    """RBAC both ways, from the audit log: no request of the chart's ServiceAccounts was refused (a permission
    the code needs and the chart lacks), and every grant of the chart's own roles was used by the scenarios
    above (a permission granted and never used), or is on `UNREACHED_GRANTS`."""
    accounts = {
        f"system:serviceaccount:{NAMESPACE}:{doc['metadata']['name']}"
        for doc in installed.docs
        if doc["kind"] == "ServiceAccount"
    }
    assert len(accounts) == 3, accounts
    requests = requests_by(installed.audit_log, accounts)
    assert {r.user for r in requests} == accounts, "every process talked to the API server"
    denied = refused(requests)
    assert not denied, "requests the chart's RBAC refused (verb, API group, resource/subresource):\n" + "\n".join(
        denied
    )
    missing = [name for name in SCENARIOS if name not in installed.passed]
    if missing:
        pytest.skip(f"which grants went unused is known only after every scenario ran; not run: {missing}")
    granted = grants(installed.docs)
    unused = sorted(
        {g.key() for g in granted if g.key() not in UNREACHED_GRANTS and not any(g.used_by(r) for r in requests)}
    )
    assert not unused, "grants no request used (account, API group, resource, verb):\n" + "\n".join(map(str, unused))
    stale = set(UNREACHED_GRANTS) - {g.key() for g in granted}
    assert not stale, f"UNREACHED_GRANTS names grants the chart no longer makes: {stale}"
