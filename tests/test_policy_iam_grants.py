"""least-privilege on IAM and RBAC: every way an Allow statement grants too much (service wildcards, NotAction,
NotResource, patterns or PassRole on every resource), administrator managed policies wherever they are
attached, trust and resource policies open to anyone, and blanket Kubernetes rights (bindings to the built-in
admin roles, in a namespace too)."""

from __future__ import annotations

import json

import pytest
from policy_helpers import check_resource

from policy.nemotron_policies.iam import ADMIN_MANAGED_POLICIES

ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
BUCKET = "arn:aws:s3:::models/*"


def statement(**fields: object) -> dict:
    return {"Effect": "Allow", **fields}


def granted(*statements: dict, as_object: bool = False) -> list[str]:
    document = {"Version": "2012-10-17", "Statement": list(statements) if len(statements) != 1 else statements[0]}
    return check_resource(
        "least-privilege", ROLE_POLICY, {"role": "r", "policy": document if as_object else json.dumps(document)}
    )


@pytest.mark.parametrize(
    ("grant", "problem"),
    [
        (statement(Action="s3:*", Resource=BUCKET), 'allows Action "s3:*" (every s3 action)'),
        (statement(Action=["s3:GetObject", "iam:*"], Resource=BUCKET), 'allows Action "iam:*" (every iam action)'),
        (statement(Action="*:*", Resource=BUCKET), 'allows Action "*:*" (every action of every service)'),
        (statement(NotAction="iam:*", Resource=BUCKET), "allows NotAction (every action except those listed)"),
        (
            statement(Action="s3:GetObject", NotResource=BUCKET),
            "allows NotResource (every resource except those listed)",
        ),
        (statement(Action="s3:Get*", Resource="*"), 'allows the action pattern "s3:Get*" on every resource'),
        (
            statement(Action="s3:Get*", Resource="arn:aws:s3:::*"),
            'allows the action pattern "s3:Get*" on every resource',
        ),
        (statement(Action="iam:PassRole", Resource="arn:aws:iam::*:role/*"), "allows iam:PassRole on every resource"),
        (statement(Action="sagemaker:Invoke*", Resource="*"), 'allows the action pattern "sagemaker:Invoke*" on every'),
        (
            statement(Action="sagemaker:InvokeEndpoint", Resource="*"),
            "allows sagemaker:InvokeEndpoint on every resource; name the endpoints",
        ),
        (
            statement(
                Action="sagemaker:invokeendpointwithresponsestream",
                Resource="arn:aws:sagemaker:us-east-1:123456789012:endpoint/*",
            ),
            "allows sagemaker:invokeendpointwithresponsestream on every resource",
        ),
    ],
)
@pytest.mark.parametrize("as_object", [False, True])
def test_broad_grants_are_reported_as_text_or_object(grant, problem, as_object):
    (found,) = granted(grant, as_object=as_object)
    assert found.startswith("policy statement ")
    assert problem in found


@pytest.mark.parametrize(
    "grant",
    [
        statement(Action=["s3:GetObject", "s3:ListBucket"], Resource=[BUCKET, "arn:aws:s3:::models"]),
        statement(Action="s3:Get*", Resource=BUCKET),
        statement(Action="ecr:GetAuthorizationToken", Resource="*"),
        statement(Action="iam:PassRole", Resource="arn:aws:iam::123456789012:role/sagemaker-exec"),
        statement(
            Action=["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
            Resource="arn:aws:sagemaker:us-east-1:123456789012:endpoint/nemotron-lightning",
        ),
        {"Effect": "Deny", "NotAction": "s3:*", "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"},
    ],
)
def test_scoped_grants_and_denies_pass(grant):
    assert granted(grant) == []


@pytest.mark.parametrize("name", [*sorted(ADMIN_MANAGED_POLICIES), "AmazonS3FullAccess", "AdministratorAccess-Amplify"])
@pytest.mark.parametrize(
    ("resource_type", "field"),
    [
        ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "policyArn"),
        ("aws:iam/userPolicyAttachment:UserPolicyAttachment", "policyArn"),
        ("aws:iam/groupPolicyAttachment:GroupPolicyAttachment", "policyArn"),
        ("aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive", "policyArns"),
        (ROLE, "managedPolicyArns"),
    ],
)
def test_administrator_managed_policies_are_reported_wherever_attached(name, resource_type, field):
    prefix = "arn:aws:eks::aws:cluster-access-policy/" if name.startswith("AmazonEKS") else "arn:aws:iam::aws:policy/"
    arn = prefix + name
    value = [arn] if field.endswith("s") else arn
    assert check_resource("least-privilege", resource_type, {field: value}) == [
        f"attaches {arn}; grant the specific actions the role needs instead"
    ]


def test_scoped_managed_policies_pass():
    arns = [
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy",
        "arn:aws:iam::123456789012:policy/AdministratorAccess",
    ]
    assert check_resource("least-privilege", ROLE, {"managedPolicyArns": arns}) == []


@pytest.mark.parametrize(
    ("trust", "open_"),
    [
        (statement(Principal="*", Action="sts:AssumeRole"), True),
        (statement(Principal={"AWS": ["arn:aws:iam::123456789012:root", "*"]}, Action="sts:AssumeRole"), True),
        (statement(NotPrincipal={"AWS": "arn:aws:iam::123456789012:root"}, Action="sts:AssumeRole"), True),
        (
            statement(
                Principal={"AWS": "*"},
                Action="sts:AssumeRole",
                Condition={"StringEquals": {"aws:PrincipalOrgID": "o-1"}},
            ),
            False,
        ),
        (statement(Principal={"Service": "ec2.amazonaws.com"}, Action="sts:AssumeRole"), False),
        (statement(Principal={"Service": "sagemaker.amazonaws.com"}, Action="sts:AssumeRole"), True),  # confused deputy
        (
            statement(
                Principal={"Service": "sagemaker.amazonaws.com"},
                Action="sts:AssumeRole",
                Condition={"StringEquals": {"aws:SourceAccount": "123456789012"}},
            ),
            False,
        ),
    ],
)
def test_trust_policies_open_to_anyone_without_a_condition_are_reported(trust, open_):
    found = check_resource("least-privilege", ROLE, {"assumeRolePolicy": json.dumps({"Statement": [trust]})})
    assert bool(found) == open_
    assert all(m.startswith("assumeRolePolicy statement 0 allows") for m in found)


def test_resource_policies_are_judged_for_grants_and_principals():
    document = json.dumps({"Statement": [statement(Principal="*", Action="s3:*", Resource=BUCKET)]})
    found = check_resource("least-privilege", "aws:s3/bucketPolicy:BucketPolicy", {"bucket": "b", "policy": document})
    assert len(found) == 2
    assert any("every s3 action" in m for m in found)
    assert any('principal "*"' in m for m in found)


@pytest.mark.parametrize(
    ("kind", "body", "problem"),
    [
        ("ClusterRoleBinding", {"roleRef": {"name": "cluster-admin"}}, "grants cluster-admin"),
        ("RoleBinding", {"roleRef": {"name": "cluster-admin"}}, "grants cluster-admin"),
        ("ClusterRoleBinding", {"roleRef": {"name": "edit"}}, "grants edit"),
        ("RoleBinding", {"roleRef": {"name": "edit"}}, "grants edit"),
        (
            "ClusterRole",
            {"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
            "grants every verb on every resource",
        ),
        (
            "Role",
            {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["impersonate"]}]},
            "grants impersonate",
        ),
    ],
)
def test_blanket_kubernetes_rights_are_reported(kind, body, problem):
    found = check_resource(
        "least-privilege", f"kubernetes:rbac.authorization.k8s.io/v1:{kind}", {"metadata": {"name": "x"}, **body}
    )
    assert found == [
        f"{kind} x {'rules[0] ' if 'rules' in body else ''}{problem}"
        + ("; bind a role with the rules the subjects need" if "roleRef" in body else "")
    ]


def test_namespaced_read_rules_and_bindings_to_narrow_roles_pass():
    """A RoleBinding to `edit` is a blanket right (above: it creates pods and reads Secrets in its namespace);
    one to a Role of the namespace (whatever its name) or to the read-only `view` is not."""
    rbac = "kubernetes:rbac.authorization.k8s.io/v1:"
    rules = {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}
    assert check_resource("least-privilege", f"{rbac}Role", rules) == []
    narrow = (
        {"kind": "Role", "name": "config-reader"},
        {"kind": "Role", "name": "edit"},
        {"kind": "ClusterRole", "name": "view"},
    )
    for role_ref in narrow:
        binding = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", **role_ref}}
        assert check_resource("least-privilege", f"{rbac}RoleBinding", binding) == [], role_ref
