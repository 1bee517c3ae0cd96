"""What preflight reads from the API server, and nothing else: the objects `checks.run_checks` looks at.

One request at a time on the client `extender.k8s.client.make_api_client` makes, through `api_call`: the
server's version first (no answer at all, or credentials refused, is `Unreachable`, exit 3), then every
Deployment (paged), the four CRDs by name, one SubjectAccessReview per right of `rights.needs`, and, when
the release's MutatingWebhookConfiguration exists, the Service it names, that Service's pods, and the
release namespace's NetworkPolicies. A read the API server refuses (403, say) is recorded in
`Observed.unreadable` for the checks to report; a connection lost midway is `Unreachable`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client

from extender.k8s.client import ApiCallError, api_call
from extender.k8s.reads import CONNECTION_ERRORS, Unreachable, get_or_none, list_all, server_version
from extender.preflight import rights
from extender.preflight.checks import CHART_CRDS, TFJOB_CRD, Observed
from extender.preflight.install import Install, Object, find
from extender.preflight.webhook import WebhookObjects, service_reference

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBHOOKS_PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
REVIEWS_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

T = TypeVar("T")


def read(api: client.ApiClient, install: Install) -> Observed:
    try:
        version = server_version(api)
        unreadable: dict[str, str] = {}
        deployments: list[Object] = _recorded(
            unreadable, "deployments", lambda: list_all(api, "/apis/apps/v1/deployments"), []
        )
        crds: dict[str, Object | None] = _recorded(unreadable, "crds", lambda: read_crds(api), {})
        lease = rights.loops_lease(install, deployments)
        policy_path = f"/api/v1/namespaces/{install.namespace}/configmaps/{install.fullname}-policy"
        policy = _recorded(unreadable, "policy", lambda: get_or_none(api, policy_path), None)
        managed = rights.managed_namespaces(policy)
        access: rights.Answers = _recorded(unreadable, "access", lambda: ask_rights(api, install, lease, managed), {})
        webhook: WebhookObjects | None = _recorded(
            unreadable, "webhook", lambda: read_webhook(api, install, deployments), None
        )
    except CONNECTION_ERRORS as error:
        raise Unreachable(f"cannot reach the API server: {error}") from error
    return Observed(str(version.get("gitVersion") or ""), deployments, crds, access, webhook, unreadable, managed)


def _recorded(unreadable: dict[str, str], what: str, reading: Callable[[], T], otherwise: T) -> T:
    """`reading()`, or `otherwise` with the refusal recorded as `unreadable[what]`."""
    try:
        return reading()
    except ApiCallError as error:
        unreadable[what] = str(error)
        return otherwise


def read_crds(api: client.ApiClient) -> dict[str, Object | None]:
    return {name: get_or_none(api, f"{CRDS_PATH}/{name}") for name in (TFJOB_CRD, *CHART_CRDS)}


def ask_rights(api: client.ApiClient, install: Install, lease: str, managed: tuple[str, ...]) -> rights.Answers:
    answers: rights.Answers = {}
    for need in rights.needs(install, lease, managed):
        answer: dict[str, Any] = api_call(api, "POST", REVIEWS_PATH, rights.review(install, need)) or {}
        answers[(need.account, need.right)] = bool((answer.get("status") or {}).get("allowed"))
    return answers


def read_webhook(api: client.ApiClient, install: Install, deployments: list[Object]) -> WebhookObjects | None:
    configuration = get_or_none(api, f"{WEBHOOKS_PATH}/{install.fullname}")
    if configuration is None:
        return None
    reference = service_reference(configuration) or {}
    namespace, name = str(reference.get("namespace") or install.namespace), str(reference.get("name") or "")
    service = get_or_none(api, f"/api/v1/namespaces/{namespace}/services/{name}") if name else None
    selector = ((service or {}).get("spec") or {}).get("selector") or {}
    pods = []
    if selector:
        chosen = ",".join(f"{key}={value}" for key, value in sorted(selector.items()))
        pods = list_all(api, f"/api/v1/namespaces/{namespace}/pods", labelSelector=chosen)
    policies = list_all(api, f"/apis/networking.k8s.io/v1/namespaces/{install.namespace}/networkpolicies")
    loops = find(deployments, install.namespace, install.loops_account)
    return WebhookObjects(configuration, service, pods, policies, loops)
