"""iam-policy-lint: Parliament's findings on the stack's IAM documents. A table of documents it fails (an
unknown action, an unknown condition operator, an action on a resource it cannot act on, a malformed
statement, a mismatched condition type) and the near documents it passes, each generated into every resource
kind and input that holds a policy (JSON text and object alike); the severity threshold comes from the pack
config; unknown documents pass."""

from __future__ import annotations

import itertools
import json

import pytest
from policy_helpers import POLICY, check_resource
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

ACCOUNT = "123456789012"


def document(**statement: object) -> dict:
    return {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", **statement}]}


FAILING = {
    "unknown action": document(Action="s3:GetObjectt", Resource="arn:aws:s3:::capture/*"),
    "unknown operator": document(
        Action="s3:GetObject", Resource="arn:aws:s3:::capture/*", Condition={"StringEqualz": {"aws:SourceVpce": "v"}}
    ),
    "resource mismatch": document(
        Action="cloudwatch:DescribeAlarms", Resource=f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:metricalarm/x"
    ),
    "no resource": document(Action="s3:GetObject"),
    "mismatched type": document(
        Action="s3:GetObject", Resource="arn:aws:s3:::capture/*", Condition={"DateGreaterThan": {"aws:SourceIp": "x"}}
    ),
}
PASSING = {
    "known action": document(Action="s3:GetObject", Resource="arn:aws:s3:::capture/*"),
    "known operator": document(
        Action="s3:GetObject", Resource="arn:aws:s3:::capture/*", Condition={"StringEquals": {"aws:SourceVpce": "v"}}
    ),
    "alarm ARN": document(
        Action="cloudwatch:DescribeAlarms", Resource=f"arn:aws:cloudwatch:us-east-1:{ACCOUNT}:alarm:x"
    ),
}


def holders(policy: dict) -> list[tuple[str, dict]]:
    """(type token, props) of every resource that holds an identity policy, as JSON text and as an object."""
    forms = []
    for encoded in (json.dumps(policy), policy):
        forms += [
            ("aws:iam/rolePolicy:RolePolicy", {"role": "r", "policy": encoded}),
            ("aws:iam/userPolicy:UserPolicy", {"user": "u", "policy": encoded}),
            ("aws:iam/groupPolicy:GroupPolicy", {"group": "g", "policy": encoded}),
            ("aws:iam/policy:Policy", {"policy": encoded}),
            ("aws:iam/role:Role", {"assumeRolePolicy": "{}", "inlinePolicies": [{"name": "p", "policy": encoded}]}),
        ]
    return forms


def linted(token: str, props: dict, config: dict | None = None) -> list[str]:
    return [m for m in check_resource("iam-policy-lint", token, props, config) if "Parliament" in m]


def test_the_rule_is_mandatory():
    assert POLICY["iam-policy-lint"].enforcement_level == EnforcementLevel.MANDATORY


def test_every_failing_document_is_reported_in_every_holder():
    cases = list(itertools.product(FAILING, range(10)))
    missed = [(name, i) for name, i in cases if not linted(*holders(FAILING[name])[i])]
    assert (len(cases), missed) == (5 * 10, [])


@pytest.mark.parametrize("name", PASSING)
def test_near_documents_pass_in_every_holder(name):
    for token, props in holders(PASSING[name]):
        assert linted(token, props) == [], token


def test_resource_policies_are_linted_too():
    bad = document(
        Principal={"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, Action="s3:GetObjectt", Resource="arn:aws:s3:::capture/*"
    )
    assert linted("aws:s3/bucketPolicy:BucketPolicy", {"bucket": "capture", "policy": json.dumps(bad)})
    good = {**bad, "Statement": [{**bad["Statement"][0], "Action": "s3:GetObject"}]}
    assert linted("aws:s3/bucketPolicy:BucketPolicy", {"bucket": "capture", "policy": json.dumps(good)}) == []


def test_trust_policies_are_not_linted():
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    assert linted("aws:iam/role:Role", {"assumeRolePolicy": json.dumps(trust)}) == []


def test_the_severity_threshold_comes_from_the_pack_config():
    high_only = {"failOnSeverities": ["CRITICAL", "HIGH"]}
    assert linted(*holders(FAILING["resource mismatch"])[0], high_only) == []
    assert linted(*holders(FAILING["no resource"])[0], high_only)


def test_unknown_documents_pass():
    assert linted("aws:iam/rolePolicy:RolePolicy", {"role": "r", "policy": UNKNOWN_STRING_VALUE}) == []
