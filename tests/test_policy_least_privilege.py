"""least-privilege: no privileged pods outside the stack's device-plugin component, no administrator or
full-access managed policies and no Action "*" in IAM policy documents (wider IAM, trust and RBAC cases:
test_policy_iam_grants.py)."""

from __future__ import annotations

import json

import pytest
from catalog_picks import pick
from policy_helpers import DAEMON_SET, DGD, JOB, check_resource, component, main_container, recipe
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE

from serving_stack.facts.catalog import load_catalog

pytestmark = pytest.mark.catalog_driven

ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
POLICY = "aws:iam/policy:Policy"


def workload(
    security_context: dict | None = None, name: str = "app", labels: dict | None = None, **pod: object
) -> dict:
    container = {"name": "main", "image": "docker.io/library/python:3.12-slim"}
    if security_context is not None:
        container["securityContext"] = security_context
    template = {"metadata": {"labels": labels or {}}, "spec": {"containers": [container], **pod}}
    return {"metadata": {"name": name}, "spec": {"template": template}}


def document(*statements: dict) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def test_upstream_workers_with_ipc_lock_and_sys_resource_pass():
    for target in load_catalog().recipes.values():
        assert check_resource("least-privilege", DGD, recipe(target.id)[1]) == [], target.id


@pytest.mark.parametrize(
    ("context", "pod", "problem"),
    [
        ({"privileged": True}, {}, "container main of pod template is privileged"),
        ({"allowPrivilegeEscalation": True}, {}, "container main of pod template sets allowPrivilegeEscalation: true"),
        ({"capabilities": {"add": ["SYS_ADMIN"]}}, {}, "container main of pod template adds capability SYS_ADMIN"),
        (None, {"hostNetwork": True}, "pod template sets hostNetwork: true"),
        (None, {"hostPID": True}, "pod template sets hostPID: true"),
    ],
)
def test_privileged_pods_are_reported(context, pod, problem):
    assert check_resource("least-privilege", JOB, workload(context, **pod)) == [problem]


def test_a_hardened_job_passes():
    context = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True}
    assert check_resource("least-privilege", JOB, workload(context)) == []


def test_privileged_dgd_worker_is_reported():
    _, dgd = recipe(pick(disaggregated=False).id)
    component(dgd, "worker")["podTemplate"]["spec"]["hostNetwork"] = True
    main_container(component(dgd, "worker"))["securityContext"]["privileged"] = True
    name = component(dgd, "worker")["name"]
    assert check_resource("least-privilege", DGD, dgd) == [
        f"component {name} sets hostNetwork: true",
        f"container main of component {name} is privileged",
    ]


def test_children_of_the_device_plugin_component_may_run_privileged():
    privileged = workload({"privileged": True}, name="rdma-shared-dp-ds", hostNetwork=True)
    assert (
        check_resource("least-privilege", DAEMON_SET, privileged, parent_type="nemotron:kubernetes:DevicePlugins") == []
    )
    config = {"privilegedComponents": ["nemotron:ops:GpuTools"]}
    assert (
        check_resource(
            "least-privilege", DAEMON_SET, privileged, config, parent_type="nemotron:kubernetes:DevicePlugins"
        )
        != []
    )
    assert check_resource("least-privilege", DAEMON_SET, privileged, config, parent_type="nemotron:ops:GpuTools") == []


def test_names_and_labels_a_workload_sets_exempt_nothing():
    privileged = {"privileged": True}
    named = workload(
        privileged,
        name="nvidia-device-plugin-daemonset",
        labels={"app.kubernetes.io/name": "aws-efa-k8s-device-plugin"},
    )
    assert check_resource("least-privilege", DAEMON_SET, named) == ["container main of pod template is privileged"]


def test_full_access_managed_policies_are_reported():
    found = check_resource(
        "least-privilege", ATTACHMENT, {"role": "r", "policyArn": "arn:aws:iam::aws:policy/AmazonSageMakerFullAccess"}
    )
    assert found == [
        "attaches arn:aws:iam::aws:policy/AmazonSageMakerFullAccess; grant the specific actions the role needs instead"
    ]
    arns = ["arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy", "arn:aws:iam::aws:policy/AdministratorAccess"]
    assert len(check_resource("least-privilege", ROLE, {"assumeRolePolicy": "{}", "managedPolicyArns": arns})) == 1
    assert (
        check_resource(
            "least-privilege", ATTACHMENT, {"policyArn": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly"}
        )
        == []
    )


def test_wildcard_actions_in_policy_documents_are_reported():
    wildcard = document({"Effect": "Allow", "Action": ["s3:GetObject", "*"], "Resource": "*"})
    # The action listed beside "*" is judged too: reading objects on every resource reads every bucket.
    assert check_resource("least-privilege", POLICY, {"policy": wildcard}) == [
        'policy statement 0 allows Action "*" (every action of every service); list the actions the role needs',
        'policy statement 0 allows s3:GetObject (data access) on every resource (Resource "*"); name the resources',
    ]
    scoped = document(
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"},
    )
    assert check_resource("least-privilege", ROLE_POLICY, {"role": "r", "policy": scoped}) == []
    inline = {
        "inlinePolicies": [
            {"name": "everything", "policy": document({"Effect": "Allow", "Action": "*", "Resource": "*"})}
        ]
    }
    assert check_resource("least-privilege", ROLE, inline) == [
        'inlinePolicies[everything] statement 0 allows Action "*" (every action of every service); list the actions '
        "the role needs"
    ]


def test_unknown_values_at_preview_are_tolerated():
    assert check_resource("least-privilege", POLICY, {"policy": UNKNOWN_STRING_VALUE}) == []
    assert check_resource("least-privilege", POLICY, {"policy": "not json"}) == []
    assert (
        check_resource("least-privilege", ROLE, {"managedPolicyArns": UNKNOWN_ARRAY_VALUE, "inlinePolicies": [None]})
        == []
    )
    assert check_resource("least-privilege", ATTACHMENT, {"policyArn": UNKNOWN_STRING_VALUE}) == []
    assert (
        check_resource("least-privilege", JOB, workload(UNKNOWN_OBJECT_VALUE, hostNetwork=UNKNOWN_STRING_VALUE)) == []
    )
    assert check_resource("least-privilege", JOB, workload({"capabilities": {"add": UNKNOWN_ARRAY_VALUE}})) == []
