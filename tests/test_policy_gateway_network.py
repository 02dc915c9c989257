"""gateway-network-policy and network-policy-types on the prod render: the gateway's NetworkPolicies removed,
moved, made not to select its pods, made ineffective by their policyTypes, or outweighed by another policy
admitting every source are each reported; the same policies in any served version or YAML component form,
and the committed stack, pass. network-policy-types has its own table of forms."""

from __future__ import annotations

import copy

import pytest
from policy_helpers import POLICY, check_resource, evaluate, object_forms, of_type, recording, retype
from pulumi_policy import EnforcementLevel

NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
POLICIES_UNDER_TEST = [POLICY["gateway-network-policy"], POLICY["network-policy-types"]]


def findings(resources) -> list[str]:
    return [v.message for v in evaluate(resources, stack="prod", policies=POLICIES_UNDER_TEST)]


def gateway_policies(resources):
    return [r for r in of_type(resources, NETWORK_POLICY) if r.name.startswith("gateway")]


def test_the_committed_gateway_passes():
    assert findings(recording("prod")) == []


def removed(resources):
    for policy in gateway_policies(resources):
        resources.remove(policy)


def only(types):
    def change(resources):
        for policy in gateway_policies(resources):
            policy.inputs["spec"]["policyTypes"] = types

    return change


def selector(labels):
    def change(resources):
        for policy in gateway_policies(resources):
            policy.inputs["spec"]["podSelector"] = {"matchLabels": labels}

    return change


def moved(resources):
    for policy in gateway_policies(resources):
        policy.inputs["metadata"]["namespace"] = "default"


def not_in(resources):
    for policy in gateway_policies(resources):
        policy.inputs["spec"]["podSelector"] = {
            "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["litellm"]}]
        }


def widened(peer):
    def change(resources):
        extra = copy.deepcopy(gateway_policies(resources)[0])
        extra.name, extra.urn = "allow-all", extra.urn.replace("gateway-network-policy", "allow-all")
        extra.inputs["metadata"]["name"] = "allow-all"
        extra.inputs["spec"] = {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [peer]}
        resources.append(extra)

    return change


EVASIONS = {
    "removed": removed,
    "policyTypes [Egress]": only(["Egress"]),
    "policyTypes [Ingress]": only(["Ingress"]),
    "policyTypes []": only([]),
    "selector on other labels": selector({"app": "gateway"}),
    "selector NotIn": not_in,
    "moved to another namespace": moved,
    "plus a rule without from": widened({}),
    "plus every namespace": widened({"from": [{"namespaceSelector": {}}]}),
    "plus 0.0.0.0/0": widened({"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}),
    "plus ::/0": widened({"from": [{"ipBlock": {"cidr": "::/0"}}]}),
}


@pytest.mark.parametrize("name", EVASIONS)
def test_a_gateway_left_open_is_reported(name):
    resources = recording("prod")
    EVASIONS[name](resources)
    assert findings(resources), name


@pytest.mark.parametrize(
    "token", ["kubernetes:networking.k8s.io/v1:NetworkPolicyPatch", "kubernetes:extensions/v1beta1:NetworkPolicy"]
)
def test_the_gateway_policies_in_another_served_form_still_count(token):
    resources = recording("prod")
    for policy in gateway_policies(resources):
        retype(policy, token)
    assert findings(resources) == []


def test_the_gateway_policies_inside_a_yaml_component_still_count():
    resources = recording("prod")
    for policy in gateway_policies(resources):
        policy.inputs = {"objs": [policy.inputs]}
        retype(policy, "kubernetes:yaml/v2:ConfigGroup")
    assert findings(resources) == []


def test_both_rules_are_mandatory():
    assert {p.enforcement_level for p in POLICIES_UNDER_TEST} == {EnforcementLevel.MANDATORY}


INGRESS = [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "agents"}}}]}]
EGRESS = [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]


def netpol(types, ingress=None, egress=None) -> dict:
    spec: dict = {"podSelector": {}}
    if types is not None:
        spec["policyTypes"] = types
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    return {"metadata": {"name": "np", "namespace": "ns"}, "spec": spec}


IGNORED_RULES = [
    (["Egress"], INGRESS, EGRESS),
    (["Egress"], INGRESS, None),
    (["Ingress"], INGRESS, EGRESS),
    (["Ingress"], None, EGRESS),
    ([], INGRESS, None),
    (["ingress", "Egress"], INGRESS, EGRESS),
]
CONSISTENT = [
    (None, INGRESS, None),
    (None, INGRESS, EGRESS),
    (None, None, EGRESS),
    (["Ingress", "Egress"], INGRESS, EGRESS),
    (["Ingress", "Egress"], [], []),
    (["Egress"], None, EGRESS),
]


def test_rules_left_out_of_policy_types_are_reported_in_every_form():
    forms = [
        form
        for types, ingress, egress in IGNORED_RULES
        for form in object_forms(
            ("networking.k8s.io/v1", "extensions/v1beta1"), "NetworkPolicy", netpol(types, ingress, egress)
        )
    ]
    missed = [label for label, token, props in forms if not check_resource("network-policy-types", token, props)]
    assert (len(forms), missed) == (6 * 12, [])


@pytest.mark.parametrize(("types", "ingress", "egress"), CONSISTENT)
def test_policy_types_covering_their_rules_pass(types, ingress, egress):
    assert check_resource("network-policy-types", NETWORK_POLICY, netpol(types, ingress, egress)) == []
