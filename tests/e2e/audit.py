"""What kube-apiserver's audit log says the chart's ServiceAccounts did, against what the chart grants them.

The API server writes one JSON event per request stage (`AUDIT_POLICY`: level Metadata for every request,
no `RequestReceived` stage): who asked, the verb, the object (API group, resource, subresource, namespace,
name) and the answer's status code. `requests_by` keeps, per request, its last event with a status.
`grants` unfolds the chart's own Roles and ClusterRoles, through the chart's bindings, into one `Grant`
per ServiceAccount, API group, resource (and subresource), verb, namespace and resource names; the built-in
roles the chart binds (kube-scheduler's) are not the chart's to trim and are left out. A request uses a
grant when it names the same account, group, resource, subresource and verb, inside the grant's namespace
and names, and was not refused.
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helm import Document, of_kind

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}
FORBIDDEN = 403


@dataclass(frozen=True, slots=True)
class Request:
    user: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    uri: str
    code: int

    def describe(self) -> str:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        where = f" in {self.namespace}" if self.namespace else ""
        what = f"{self.group or 'core'} {resource}" if self.resource else self.uri
        return f"{self.verb} {what}{where}" + (f" ({self.name})" if self.name else "")


def requests_by(audit_log: Path, users: set[str]) -> list[Request]:
    """Every request of `users`, once each, with its answer's status code."""
    latest: dict[str, dict[str, Any]] = {}
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if event["user"].get("username") in users and "responseStatus" in event:
            latest[event["auditID"]] = event
    found = []
    for event in latest.values():
        ref = event.get("objectRef") or {}
        found.append(
            Request(
                user=event["user"]["username"],
                verb=event["verb"],
                group=ref.get("apiGroup", ""),
                resource=ref.get("resource", ""),
                subresource=ref.get("subresource", ""),
                namespace=ref.get("namespace", ""),
                name=ref.get("name", ""),
                uri=event["requestURI"].partition("?")[0],
                code=int(event["responseStatus"].get("code", 0)),
            )
        )
    return found


def answered_after(audit_log: Path, users: set[str], moment: datetime.datetime) -> set[str]:
    """Which of `users` had a request answered with success that the API server received after `moment`."""
    answered = set()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        user = event["user"].get("username")
        code = (event.get("responseStatus") or {}).get("code", 0)
        received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if user in users and 200 <= code < 300 and received > moment:
            answered.add(user)
    return answered


def refused(requests: list[Request]) -> list[str]:
    """One line per kind of request answered 403, with how often."""
    counts = Counter(f"{r.user}: {r.describe()}" for r in requests if r.code == FORBIDDEN)
    return [f"{line} ×{count}" for line, count in sorted(counts.items())]


@dataclass(frozen=True, slots=True)
class Grant:
    user: str
    role: str
    """`Kind/name` of the chart's role that grants it."""
    group: str
    resource: str
    subresource: str
    verb: str
    namespace: str
    """Empty: every namespace (a ClusterRole through a ClusterRoleBinding)."""
    names: frozenset[str]
    """Empty: any name."""

    def key(self) -> tuple[str, str, str, str]:
        """(account, group, resource[/subresource], verb): how the allowlist names a grant."""
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return self.user.rpartition(":")[2], self.group, resource, self.verb

    def used_by(self, request: Request) -> bool:
        return (
            request.code != FORBIDDEN
            and (request.user, request.group, request.resource, request.subresource, request.verb)
            == (self.user, self.group, self.resource, self.subresource, self.verb)
            and (not self.namespace or request.namespace == self.namespace)
            and (not self.names or request.name in self.names)
        )


def grants(docs: list[Document]) -> list[Grant]:
    """What the chart's own roles grant ServiceAccounts, through the chart's bindings, one `Grant` each."""
    roles = {(r["kind"], r["metadata"]["name"]): r for kind in ("ClusterRole", "Role") for r in of_kind(docs, kind)}
    found = []
    for binding in [*of_kind(docs, "ClusterRoleBinding"), *of_kind(docs, "RoleBinding")]:
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], ref["name"]))
        if role is None:
            continue
        namespace = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        for subject in binding["subjects"]:
            assert subject["kind"] == "ServiceAccount", subject
            user = f"system:serviceaccount:{subject['namespace']}:{subject['name']}"
            for rule in role["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        base, _, subresource = resource.partition("/")
                        for verb in rule["verbs"]:
                            names = frozenset(rule.get("resourceNames") or ())
                            role_name = f"{ref['kind']}/{ref['name']}"
                            found.append(Grant(user, role_name, group, base, subresource, verb, namespace, names))
    return found
