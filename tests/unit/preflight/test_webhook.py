"""The admission webhook's path, checked only when the release's MutatingWebhookConfiguration exists: its
Service selects a pod, it has a CA, and a NetworkPolicy selecting the loops pod lets the webhook's port in
from anywhere — on hand-written objects and on the chart's own, rendered with native gangs on."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from extender.preflight.checks import run_checks
from extender.preflight.install import FAIL, OK
from extender.preflight.webhook import WebhookObjects, check_webhook, selects
from tests.helm import named, render
from tests.unit.preflight.objects import INSTALL, LOOPS_LABELS, POD, SERVICE, configuration, healthy, loops

Obj = dict[str, Any]


def policy(ingress: list[Obj], selector: Obj | None = None, types: list[str] | None = None) -> Obj:
    spec: Obj = {"podSelector": {"matchLabels": LOOPS_LABELS} if selector is None else selector, "ingress": ingress}
    if types is not None:
        spec["policyTypes"] = types
    return {"metadata": {"namespace": "tfjob-system", "name": "tfjob-extender-loops"}, "spec": spec}


OBSERVE_ONLY = {"ports": [{"port": 8889, "protocol": "TCP"}], "from": [{"podSelector": {}}]}


def objects(**changes: Any) -> WebhookObjects:
    fields: dict[str, Any] = {
        "configuration": configuration(),
        "service": SERVICE,
        "pods": [POD],
        "network_policies": [],
        "loops": loops(),
    }
    return WebhookObjects(**{**fields, **changes})


def statuses(found: WebhookObjects) -> list[tuple[str, str]]:
    return [(f.status, f.check) for f in check_webhook(INSTALL, found)]


def test_a_reachable_webhook_passes_and_is_checked_only_when_configured() -> None:
    assert statuses(objects()) == [(OK, "webhook service"), (OK, "webhook caBundle"), (OK, "webhook network policy")]
    assert not [f for f in run_checks(INSTALL, healthy()) if f.check.startswith("webhook")]
    assert len([f for f in run_checks(INSTALL, healthy(webhook=objects())) if f.check.startswith("webhook")]) == 3


def test_a_missing_service_or_one_selecting_no_pod_fails() -> None:
    (missing, *_) = check_webhook(INSTALL, objects(service=None))
    assert (missing.status, missing.found) == (
        FAIL,
        "Service tfjob-system/tfjob-extender-webhook (its clientConfig) is missing",
    )
    (empty, *_) = check_webhook(INSTALL, objects(pods=[]))
    assert (empty.status, empty.found) == (FAIL, "Service tfjob-system/tfjob-extender-webhook selects no pod")
    assert empty.fix.endswith("kubectl -n tfjob-system rollout status deployment/tfjob-extender-loops")
    stranger = {"metadata": {"name": "other", "labels": {"app": "other"}}}
    assert check_webhook(INSTALL, objects(pods=[stranger]))[0].status == FAIL


def test_a_webhook_without_a_ca_fails_unless_cert_manager_injects_one() -> None:
    ca = check_webhook(INSTALL, objects(configuration=configuration(ca="")))[1]
    assert (ca.status, ca.found) == (FAIL, "no caBundle on webhook native-gangs.tfjob-extender.io")
    injected = configuration(
        ca="", annotations={"cert-manager.io/inject-ca-from": "tfjob-system/tfjob-extender-webhook"}
    )
    assert check_webhook(INSTALL, objects(configuration=injected))[1].status == OK


@pytest.mark.parametrize(
    "rule",
    [
        {"ports": [{"port": 9443, "protocol": "TCP"}]},
        {"ports": [{"port": "webhook"}]},
        {"ports": [{"port": 9000, "endPort": 9999}]},
        {},
        {"ports": [{"port": 9443}], "from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]},
    ],
    ids=["number", "name", "range", "everything", "every address"],
)
def test_a_policy_letting_the_webhook_port_in_from_anywhere_passes(rule: Obj) -> None:
    found = check_webhook(INSTALL, objects(network_policies=[policy([OBSERVE_ONLY]), policy([rule])]))[2]
    assert found.status == OK, found.line()


@pytest.mark.parametrize(
    "rule",
    [
        {"ports": [{"port": 9443}], "from": [{"namespaceSelector": {}}]},
        {"ports": [{"port": 9443}], "from": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}]},
        {"ports": [{"port": 9443, "protocol": "UDP"}]},
        {"ports": [{"port": "observe"}]},
    ],
    ids=["pods only", "with an exception", "udp", "another port"],
)
def test_policies_selecting_the_loops_pod_without_such_a_rule_fail(rule: Obj) -> None:
    found = check_webhook(INSTALL, objects(network_policies=[policy([OBSERVE_ONLY, rule])]))[2]
    assert found.status == FAIL, found.line()
    assert found.found == (
        "NetworkPolicy tfjob-extender-loops select(s) the loops pod and none lets port 9443 in from anywhere"
    )
    assert "ingress rule `{ports: [{port: 9443, protocol: TCP}]}` with no `from`" in found.fix


def test_policies_not_selecting_the_loops_pod_or_only_egress_leave_it_open() -> None:
    other = policy([], selector={"matchLabels": {"app": "other"}})
    egress = policy([], types=["Egress"])
    found = check_webhook(INSTALL, objects(network_policies=[other, egress]))[2]
    assert (found.status, found.found) == (OK, "no NetworkPolicy limits what reaches the loops pod")
    everything = policy([], selector={})
    assert check_webhook(INSTALL, objects(network_policies=[everything]))[2].status == FAIL


def test_label_selectors_resolve_as_kubernetes_resolves_them() -> None:
    labels = {"tier": "loops", "zone": "a"}
    assert selects(None, labels) and selects({}, labels)
    assert selects({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["loops", "x"]}]}, labels)
    assert not selects({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, labels)
    assert selects({"matchExpressions": [{"key": "gone", "operator": "DoesNotExist"}]}, labels)
    assert not selects({"matchExpressions": [{"key": "gone", "operator": "Exists"}]}, labels)
    assert not selects({"matchLabels": {"tier": "loops"}, "matchExpressions": [{"key": "x", "operator": "?"}]}, labels)


def test_the_charts_own_objects_with_native_gangs_pass_and_fail_without_the_webhook_rule() -> None:
    docs = render({"nativeGangs": "on", "networkPolicy": {"enabled": True}})
    chart = WebhookObjects(
        configuration=named(docs, "MutatingWebhookConfiguration", "tfjob-extender"),
        service=named(docs, "Service", "tfjob-extender-webhook"),
        pods=[named(docs, "Deployment", "tfjob-extender-loops")["spec"]["template"]],
        network_policies=[d for d in docs if d["kind"] == "NetworkPolicy"],
        loops=named(docs, "Deployment", "tfjob-extender-loops"),
    )
    service, ca, network = check_webhook(INSTALL, chart)
    assert (service.status, ca.status) == (OK, FAIL)  # the loops write the CA once they run
    assert (network.status, network.found) == (OK, "NetworkPolicy tfjob-extender-loops lets port 9443 in from anywhere")
    without = copy.deepcopy(chart.network_policies)
    for found in without:
        found["spec"]["ingress"] = found["spec"]["ingress"][:1]
    assert check_webhook(INSTALL, dataclasses.replace(chart, network_policies=without))[2].status == FAIL
