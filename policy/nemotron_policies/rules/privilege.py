"""least-privilege: pods get no host or kernel privileges and IAM roles get no blanket permissions.

- Pods (DGD components and built-in workloads): no `privileged` container, no `allowPrivilegeEscalation:
  true`, no `SYS_ADMIN`/`ALL` capability, no `hostPID` / `hostNetwork` / `hostIPC`. Device plugins need some
  of this; Helm releases are opaque to the pack, and a built-in workload is exempt when its name, or one of
  its labels as `key=value`, is in `privilegedAllowList`. DGD workers keep their upstream `IPC_LOCK` and
  `SYS_RESOURCE` capabilities (RDMA memory registration), which this rule does not count as privileged.
- IAM: no `*FullAccess` or `AdministratorAccess` managed policy on a role (`RolePolicyAttachment`,
  `PolicyAttachment`, `Role.managedPolicyArns`) and no policy document allowing `Action: "*"` (`RolePolicy`,
  `Policy`, `Role.inlinePolicies`).
"""
from __future__ import annotations

from typing import Any, Iterator

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..values import UNKNOWN, as_dict, as_list, dig, parse_json, plain, text
from ..workloads import BUILT_IN_WORKLOADS, container_label, containers, pod_specs

ROLE = "aws:iam/role:Role"
ATTACHMENTS = frozenset({"aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/policyAttachment:PolicyAttachment"})
POLICY_DOCUMENTS = frozenset({"aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy"})
HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")
PRIVILEGED_CAPABILITIES = frozenset({"SYS_ADMIN", "ALL", "CAP_SYS_ADMIN"})
DEFAULT_PRIVILEGED_ALLOW_LIST = [
    "nvidia-device-plugin-daemonset",
    "aws-efa-k8s-device-plugin-daemonset",
    "rdma-shared-dp-ds",
    "app.kubernetes.io/name=nvidia-device-plugin",
    "app.kubernetes.io/name=aws-efa-k8s-device-plugin",
]
SCHEMA = PolicyConfigSchema({
    "privilegedAllowList": {
        "type": "array",
        "items": {"type": "string"},
        "default": DEFAULT_PRIVILEGED_ALLOW_LIST,
        "description": "Built-in workloads (by metadata.name, or a label as key=value) that may run privileged.",
    },
})


def _allow_listed(props: Any, allow_list: list[str]) -> bool:
    labels = {**as_dict(dig(props, "metadata", "labels")), **as_dict(dig(props, "spec", "template", "metadata", "labels"))}
    identities = {text(dig(props, "metadata", "name"))} | {f"{k}={v}" for k, v in labels.items() if isinstance(v, str)}
    return bool(identities.intersection(allow_list))


def _pod_privileges(resource_type: str, props: Any) -> Iterator[str]:
    for pod in pod_specs(resource_type, props):
        for field in HOST_NAMESPACES:
            if dig(pod.spec, field) is True:
                yield f"{pod.owner} sets {field}: true"
        for container in containers(pod.spec):
            context = dig(container, "securityContext")
            if dig(context, "privileged") is True:
                yield f"{container_label(container, pod)} is privileged"
            if dig(context, "allowPrivilegeEscalation") is True:
                yield f"{container_label(container, pod)} sets allowPrivilegeEscalation: true"
            added = {str(c).upper() for c in as_list(dig(context, "capabilities", "add")) if c is not UNKNOWN}
            for capability in sorted(added & PRIVILEGED_CAPABILITIES):
                yield f"{container_label(container, pod)} adds capability {capability}"


def _blanket_managed_policy(arn: Any) -> bool:
    name = arn.rsplit("/", 1)[-1] if isinstance(arn, str) and arn.startswith("arn:") else ""
    return name.endswith("FullAccess") or name == "AdministratorAccess"


def _wildcard_statements(document: Any) -> Iterator[int]:
    """Indices of statements that allow every action."""
    statements = dig(parse_json(document), "Statement")
    for index, statement in enumerate(statements if isinstance(statements, list) else [statements]):
        if dig(statement, "Effect") != "Allow":
            continue
        actions = dig(statement, "Action")
        if any(a in ("*", "*:*") for a in (actions if isinstance(actions, list) else [actions])):
            yield index


def _iam_privileges(resource_type: str, props: Any) -> Iterator[str]:
    arns = []
    if resource_type in ATTACHMENTS:
        arns = [dig(props, "policyArn")]
    elif resource_type == ROLE:
        arns = as_list(dig(props, "managedPolicyArns"))
    for arn in arns:
        if _blanket_managed_policy(arn):
            yield f"attaches {arn}; grant the specific actions the role needs instead"
    documents = []
    if resource_type in POLICY_DOCUMENTS:
        documents = [("policy", dig(props, "policy"))]
    elif resource_type == ROLE:
        documents = [(f"inlinePolicies[{text(dig(p, 'name')) or i}]", dig(p, "policy"))
                     for i, p in enumerate(as_list(dig(props, "inlinePolicies")))]
    for where, document in documents:
        for index in _wildcard_statements(document):
            yield f"{where} statement {index} allows Action \"*\"; list the actions the role needs"


def validate_least_privilege(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    props = plain(args.props)
    allow_list = [str(e) for e in as_list(settings(args, SCHEMA)["privilegedAllowList"])]
    exempt = args.resource_type in BUILT_IN_WORKLOADS and _allow_listed(props, allow_list)
    problems = [] if exempt else list(_pod_privileges(args.resource_type, props))
    for problem in problems + list(_iam_privileges(args.resource_type, props)):
        report_violation(problem)
