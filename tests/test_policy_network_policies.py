"""network-policy-peers: an ingress rule without `from` or an egress rule without `to` (missing or empty)
admits every peer and is reported, and so is an ingress peer admitting everyone (`namespaceSelector: {}` with
no narrowing pod selector, an ipBlock holding the Internet); named peers, egress to every address written out,
deny-all policies and unknown peers pass, and objects inside a YAML component are read like resources of their
own."""

from __future__ import annotations

import pytest
import yaml
from policy_helpers import POLICY, check_resource
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
DNS = {
    "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
    "ports": [{"protocol": "UDP", "port": 53}],
}
APPS = {
    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "agents"}}}],
    "ports": [{"protocol": "TCP", "port": 4000}],
}


def network_policy(ingress: list | None = None, egress: list | None = None) -> dict:
    spec: dict = {"podSelector": {"matchLabels": {"app": "gateway"}}, "policyTypes": ["Ingress", "Egress"]}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "gateway", "namespace": "nemotron"},
        "spec": spec,
    }


def reported(ingress: list | None = None, egress: list | None = None) -> list[str]:
    return check_resource("network-policy-peers", NETWORK_POLICY, network_policy(ingress, egress))


def test_the_rule_is_mandatory():
    assert POLICY["network-policy-peers"].enforcement_level == EnforcementLevel.MANDATORY


def test_rules_naming_their_peers_pass():
    """Narrow ingress peers, every namespace narrowed to named pods (a Prometheus wherever it runs), and egress
    to every address written out."""
    anywhere_https = {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"protocol": "TCP", "port": 443}]}
    prometheus = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    vpc = {"ipBlock": {"cidr": "10.0.0.0/16"}}
    assert reported([APPS, {"from": [prometheus, vpc]}], [DNS, anywhere_https]) == []


@pytest.mark.parametrize(
    ("peer", "why"),
    [
        ({"namespaceSelector": {}}, "namespaceSelector {} selects every pod of every namespace"),
        ({"namespaceSelector": {}, "podSelector": {}}, "namespaceSelector {} selects every pod of every namespace"),
        ({"ipBlock": {"cidr": "0.0.0.0/0"}}, "ipBlock 0.0.0.0/0 holds every address"),
    ],
    ids=repr,
)
def test_ingress_peers_admitting_everyone_are_reported(peer, why):
    """Policies add up: one ingress peer admitting everyone voids every allow-list of the pods it selects."""
    assert reported([APPS, {"from": [peer], "ports": [{"port": 9090}]}], [DNS]) == [
        f"NetworkPolicy nemotron/gateway ingress rule 1 from[0] admits every source on port 9090/TCP: {why}; name "
        "the namespaces, pods or ranges that need it"
    ]


def test_deny_all_policies_pass():
    assert reported([], []) == []
    assert reported() == []


@pytest.mark.parametrize(
    ("ingress", "egress", "message"),
    [
        (
            [{"ports": [{"protocol": "TCP", "port": 4000}]}],
            [DNS],
            "NetworkPolicy nemotron/gateway ingress rule 0 has no `from` peers: it admits every source on port 4000/TCP",
        ),
        (
            [APPS, {"from": [], "ports": [{"port": 9090}]}],
            [DNS],
            "ingress rule 1 has no `from` peers: it admits every source on port 9090/TCP",
        ),
        ([APPS], [DNS, {"to": []}], "egress rule 1 has no `to` peers: it admits every destination on every port"),
    ],
)
def test_rules_without_peers_are_reported(ingress, egress, message):
    (found,) = reported(ingress, egress)
    assert message in found


def test_objects_inside_a_yaml_component_are_read():
    text = yaml.safe_dump(network_policy([{"ports": [{"port": 4000}]}], [DNS]))
    (found,) = check_resource("network-policy-peers", CONFIG_GROUP, {"yaml": [text]})
    assert found.startswith("NetworkPolicy nemotron/gateway (yaml[0] document 0) ingress rule 0 has no `from` peers")


def test_unknown_peers_at_preview_are_tolerated():
    assert reported([{"from": UNKNOWN_ARRAY_VALUE}], [{"to": [UNKNOWN_OBJECT_VALUE]}]) == []
