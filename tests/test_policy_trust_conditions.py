"""least-privilege on who a trust or resource policy lets in: web-identity trust must pin the token's audience
and subject, and a Condition that "scopes" principal "*" must name an account, organization, ARN or network
narrower than everyone. Tables of the violating and passing forms, then generated variants: every spelling of
the action, the principal, the operator and the key case, and (hypothesis) wildcards anywhere in the scoping
value's account field."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_helpers import check_resource

ROLE = "aws:iam/role:Role"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
PROVIDER = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
PROVIDER_ARN = f"arn:aws:iam::123456789012:oidc-provider/{PROVIDER}"
PINNED = {"StringEquals": {f"{PROVIDER}:aud": "sts.amazonaws.com", f"{PROVIDER}:sub": "system:serviceaccount:ns:gw"}}


def trust(
    condition: object = None, *, action: object = "sts:AssumeRoleWithWebIdentity", federated: object = PROVIDER_ARN
):
    statement: dict = {"Effect": "Allow", "Principal": {"Federated": federated}, "Action": action}
    if condition is not None:
        statement["Condition"] = condition
    return {"assumeRolePolicy": json.dumps({"Version": "2012-10-17", "Statement": [statement]})}


def web_identity_findings(props: dict) -> list[str]:
    return [m for m in check_resource("least-privilege", ROLE, props) if "web identity" in m]


UNPINNED = {
    "no condition": None,
    "aud only": {"StringEquals": {f"{PROVIDER}:aud": "sts.amazonaws.com"}},
    "sub only": {"StringEquals": {f"{PROVIDER}:sub": "system:serviceaccount:ns:gw"}},
    "sub every service account": {
        "StringEquals": {f"{PROVIDER}:aud": "sts.amazonaws.com"},
        "StringLike": {f"{PROVIDER}:sub": "system:serviceaccount:*"},
    },
    "sub every namespace": {
        "StringEquals": {f"{PROVIDER}:aud": "sts.amazonaws.com"},
        "StringLike": {f"{PROVIDER}:sub": "system:serviceaccount:*:gw"},
    },
    "sub wildcard": {"StringLike": {f"{PROVIDER}:aud": "sts.amazonaws.com", f"{PROVIDER}:sub": "*"}},
    "IfExists": {"StringEqualsIfExists": PINNED["StringEquals"]},
    "ForAllValues": {"ForAllValues:StringEquals": PINNED["StringEquals"]},
    "negated": {"StringNotEquals": PINNED["StringEquals"]},
    "another provider's keys": {
        "StringEquals": {
            "oidc.eks.us-east-1.amazonaws.com/id/OTHER:aud": "sts.amazonaws.com",
            "oidc.eks.us-east-1.amazonaws.com/id/OTHER:sub": "system:serviceaccount:ns:gw",
        }
    },
    "Null check": {"Null": {f"{PROVIDER}:sub": "false", f"{PROVIDER}:aud": "false"}},
}
PINNED_FORMS = {
    "StringEquals": PINNED,
    "StringLike in one namespace": {
        "StringEquals": {f"{PROVIDER}:aud": "sts.amazonaws.com"},
        "StringLike": {f"{PROVIDER}:sub": "system:serviceaccount:ns:*"},
    },
    "key case": {
        "StringEquals": {f"{PROVIDER}:AUD": "sts.amazonaws.com", f"{PROVIDER}:Sub": "system:serviceaccount:ns:gw"}
    },
    "github repository": {
        "StringEquals": {"token.actions.githubusercontent.com:aud": "sts.amazonaws.com"},
        "StringLike": {"token.actions.githubusercontent.com:sub": "repo:nvidia/nemotron:ref:refs/heads/main"},
    },
}
ACTIONS = [
    "sts:AssumeRoleWithWebIdentity",
    ["sts:TagSession", "sts:AssumeRoleWithWebIdentity"],
    "sts:*",
    "*",
    "STS:assumerolewithwebidentity",
    "sts:AssumeRoleWith*",
    "sts:AssumeRoleWith?ebIdentity",
]
FEDERATED = [PROVIDER_ARN, [PROVIDER_ARN]]


@pytest.mark.parametrize("name", UNPINNED)
def test_web_identity_trust_without_aud_and_sub_is_reported(name):
    assert len(web_identity_findings(trust(UNPINNED[name]))) == 1


@pytest.mark.parametrize("name", PINNED_FORMS)
def test_web_identity_trust_pinning_aud_and_sub_passes(name):
    federated = (
        "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com"
        if "github" in name
        else PROVIDER_ARN
    )
    assert check_resource("least-privilege", ROLE, trust(PINNED_FORMS[name], federated=federated)) == []


def test_every_spelling_of_the_action_and_principal_is_read():
    cases = list(itertools.product(UNPINNED.values(), ACTIONS, FEDERATED))
    missed = [
        case for case in cases if len(web_identity_findings(trust(case[0], action=case[1], federated=case[2]))) != 1
    ]
    assert (len(cases), missed) == (11 * 7 * 2, [])
    passing = list(itertools.product(ACTIONS, FEDERATED))
    assert [c for c in passing if web_identity_findings(trust(PINNED, action=c[0], federated=c[1]))] == []


def test_other_trust_is_not_read_as_web_identity():
    service = {
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }
    saml = {
        "Effect": "Allow",
        "Principal": {"Federated": "arn:aws:iam::123456789012:saml-provider/corp"},
        "Action": "sts:AssumeRoleWithSAML",
    }
    for statement in (service, saml):
        assert web_identity_findings({"assumeRolePolicy": json.dumps({"Statement": [statement]})}) == []


def bucket_policy(condition: dict) -> dict:
    statement = {
        "Effect": "Allow",
        "Principal": "*",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::capture/*",
        "Condition": condition,
    }
    return {"bucket": "capture", "policy": json.dumps({"Version": "2012-10-17", "Statement": [statement]})}


def opens(condition: dict) -> bool:
    return any('principal "*"' in m for m in check_resource("least-privilege", BUCKET_POLICY, bucket_policy(condition)))


WIDE_CONDITIONS = [
    {"StringLike": {"aws:SourceAccount": "*"}},
    {"StringLike": {"aws:SourceAccount": "12345678901?"}},
    {"StringLike": {"aws:PrincipalAccount": "1234*"}},
    {"StringLike": {"aws:PrincipalOrgID": "o-*"}},
    {"StringLike": {"aws:PrincipalOrgPaths": "o-*/r-ab12/*"}},
    {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/deployer"}},
    {"ArnLike": {"aws:SourceArn": "arn:aws:*"}},
    {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::*"}},
    {"ArnLike": {"aws:SourceArn": "arn:*:sagemaker:us-east-1:123456789012:*"}},
    {"StringLike": {"aws:SourceVpce": "vpce-*"}},
    {"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}},
    {"IpAddress": {"aws:SourceIp": "::/0"}},
    {"IpAddress": {"aws:SourceIp": ["0.0.0.0/1", "128.0.0.0/1"]}},
    {"IpAddress": {"aws:SourceIp": "::ffff:0:0/96"}},
    {"StringLike": {"aws:userid": "*:alice"}},
]
NARROW_CONDITIONS = [
    {"StringEquals": {"aws:SourceAccount": "123456789012"}},
    {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}},
    {"ForAnyValue:StringLike": {"aws:PrincipalOrgPaths": "o-a1b2c3d4e5/r-ab12/*"}},
    {"ArnLike": {"aws:SourceArn": "arn:aws:sagemaker:us-east-1:123456789012:*"}},
    {"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::123456789012:role/*"}},
    {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::nemotron-logs"}},
    {"StringEquals": {"aws:SourceVpce": "vpce-0123456789abcdef0"}},
    {"IpAddress": {"aws:SourceIp": "203.0.113.0/24"}},
    {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}},
    {"StringLike": {"aws:userid": "AROAEXAMPLE:*"}},
]


@pytest.mark.parametrize("condition", WIDE_CONDITIONS, ids=json.dumps)
def test_wildcard_conditions_that_admit_anyone_do_not_scope_principal_star(condition):
    assert opens(condition)


@pytest.mark.parametrize("condition", NARROW_CONDITIONS, ids=json.dumps)
def test_conditions_naming_an_account_organization_arn_or_network_scope_principal_star(condition):
    assert not opens(condition)


@settings(max_examples=60, deadline=None)
@given(
    position=st.integers(0, 11),
    wildcard=st.sampled_from("*?"),
    key=st.sampled_from(["aws:SourceAccount", "aws:PrincipalAccount", "kms:CallerAccount"]),
)
def test_a_wildcard_anywhere_in_an_account_id_admits_every_account(position, wildcard, key):
    account = "123456789012"
    value = account[:position] + wildcard + account[position + 1 :]
    assert opens({"StringLike": {key: value}})
    arn = f"arn:aws:iam::{value}:role/deployer"
    assert opens({"ArnLike": {"aws:PrincipalArn": arn}})
