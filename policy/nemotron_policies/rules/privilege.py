"""least-privilege: pods get no host or kernel privileges, Kubernetes roles no blanket rights, and AWS
principals no blanket permissions.

- Pods (every pod a resource declares, `pods.pod_specs`): no `privileged` container, no
  `allowPrivilegeEscalation: true`, no escape-prone capability (`SYS_ADMIN`, `ALL`, `SYS_MODULE`,
  `SYS_PTRACE`, `NET_ADMIN`, `BPF`, ...), no `hostPID` / `hostNetwork` / `hostIPC`. DGD workers keep their
  upstream `IPC_LOCK` and `SYS_RESOURCE` (RDMA memory registration), which are not counted.
- RBAC: no binding to `cluster-admin` (or `admin`/`edit` cluster-wide), no rule granting every verb on every
  resource, no `escalate` / `bind` / `impersonate`.
- Exempt from the pod and RBAC checks: children of the stack components named in `privilegedComponents`
  (default: the device plugins), judged by the type tokens in the resource's URN, which a workload cannot set.
  Helm releases are opaque to the pack.
- IAM (`iam.py`): no administrator / full-access managed policy (`RolePolicyAttachment`, `PolicyAttachment`,
  user and group attachments, `Role.managedPolicyArns`, `RolePolicyAttachmentsExclusive`, EKS access policy
  associations); no service-wide, `NotAction`, `NotResource` or every-resource pattern grant in a policy
  document (`RolePolicy`, `UserPolicy`, `GroupPolicy`, `Policy`, `Role.inlinePolicies`, resource policies);
  no trust or resource policy open to principal `*` without a `Condition`. An EKS admin access policy is
  allowed for the principals listed in `clusterAdminPrincipals` (default none): the role that deploys the
  stack needs one, and the pack's configuration is where an organisation names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..iam import grant_problems, managed_policy_problem, trust_problems
from ..kinds import ancestor_types, kubernetes_objects
from ..names import DEVICE_PLUGINS_COMPONENT
from ..pods import pod_specs
from ..values import UNKNOWN, as_list, dig, plain, text
from ..workloads import container_label, containers

ROLE = "aws:iam/role:Role"
ATTACHMENTS = frozenset(
    {
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        "aws:iam/policyAttachment:PolicyAttachment",
        "aws:iam/userPolicyAttachment:UserPolicyAttachment",
        "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
    }
)
EXCLUSIVE_ATTACHMENTS = "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive"
POLICY_DOCUMENTS = frozenset(
    {
        "aws:iam/rolePolicy:RolePolicy",
        "aws:iam/userPolicy:UserPolicy",
        "aws:iam/groupPolicy:GroupPolicy",
        "aws:iam/policy:Policy",
    }
)
RESOURCE_POLICIES = frozenset(
    {
        "aws:s3/bucketPolicy:BucketPolicy",
        "aws:kms/key:Key",
        "aws:kms/keyPolicy:KeyPolicy",
        "aws:ecr/repositoryPolicy:RepositoryPolicy",
        "aws:sqs/queuePolicy:QueuePolicy",
        "aws:sns/topicPolicy:TopicPolicy",
    }
)
HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")
PRIVILEGED_CAPABILITIES = frozenset(
    {
        "SYS_ADMIN",
        "ALL",
        "SYS_MODULE",
        "SYS_PTRACE",
        "SYS_RAWIO",
        "SYS_BOOT",
        "NET_ADMIN",
        "BPF",
        "PERFMON",
        "DAC_READ_SEARCH",
        "MAC_ADMIN",
        "SYSLOG",
    }
)
ADMIN_ROLES = frozenset({"cluster-admin"})
CLUSTER_WIDE_ADMIN_ROLES = frozenset({"admin", "edit"})
ESCALATING_VERBS = frozenset({"escalate", "bind", "impersonate"})
SCHEMA = PolicyConfigSchema(
    {
        "privilegedComponents": {
            "type": "array",
            "items": {"type": "string"},
            "default": [DEVICE_PLUGINS_COMPONENT],
            "description": "Type tokens of components whose child resources may run privileged pods and RBAC.",
        },
        "clusterAdminPrincipals": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "IAM principal ARNs an EKS access entry may give an admin access policy (a deploy role).",
        },
    }
)
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"


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
            added = {
                str(c).upper().removeprefix("CAP_")
                for c in as_list(dig(context, "capabilities", "add"))
                if c is not UNKNOWN
            }
            for capability in sorted(added & PRIVILEGED_CAPABILITIES):
                yield f"{container_label(container, pod)} adds capability {capability}"


def _rbac_privileges(resource_type: str, props: Any) -> Iterator[str]:
    for obj in kubernetes_objects(resource_type, props):
        if obj.group != "rbac.authorization.k8s.io":
            continue
        where = f"{obj.kind} {obj.name or '?'}"
        if obj.kind in ("ClusterRoleBinding", "RoleBinding"):
            role = dig(obj.body, "roleRef", "name")
            if role in ADMIN_ROLES or (obj.kind == "ClusterRoleBinding" and role in CLUSTER_WIDE_ADMIN_ROLES):
                yield f"{where} grants {role}; bind a role with the rules the subjects need"
        if obj.kind in ("ClusterRole", "Role"):
            for index, rule in enumerate(as_list(dig(obj.body, "rules"))):
                verbs = {str(v).lower() for v in as_list(dig(rule, "verbs"))}
                if "*" in verbs and "*" in as_list(dig(rule, "resources")):
                    yield f"{where} rules[{index}] grants every verb on every resource"
                for verb in sorted(verbs & ESCALATING_VERBS):
                    yield f"{where} rules[{index}] grants {verb}"


def _iam_privileges(resource_type: str, props: Any, cluster_admins: frozenset[str]) -> Iterator[str]:
    arns: list[Any] = []
    named_admin = resource_type == ACCESS_POLICY_ASSOCIATION and dig(props, "principalArn") in cluster_admins
    if resource_type in ATTACHMENTS and not named_admin:
        arns = [dig(props, "policyArn")]
    elif resource_type == EXCLUSIVE_ATTACHMENTS:
        arns = as_list(dig(props, "policyArns"))
    elif resource_type == ROLE:
        arns = as_list(dig(props, "managedPolicyArns"))
    for arn in arns:
        problem = managed_policy_problem(arn)
        if problem:
            yield problem
    documents = []
    if resource_type in POLICY_DOCUMENTS | RESOURCE_POLICIES:
        documents = [("policy", dig(props, "policy"))]
    elif resource_type == ROLE:
        documents = [
            (f"inlinePolicies[{text(dig(p, 'name')) or i}]", dig(p, "policy"))
            for i, p in enumerate(as_list(dig(props, "inlinePolicies")))
        ]
        yield from trust_problems(dig(props, "assumeRolePolicy"), "assumeRolePolicy")
    for where, document in documents:
        yield from grant_problems(document, where)
    if resource_type in RESOURCE_POLICIES:
        yield from trust_problems(dig(props, "policy"), "policy")


def validate_least_privilege(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    props = plain(args.props)
    config = settings(args, SCHEMA)
    exempt_components = {str(c) for c in as_list(config["privilegedComponents"])}
    cluster_admins = frozenset(str(p) for p in as_list(config["clusterAdminPrincipals"]))
    problems = list(_iam_privileges(args.resource_type, props, cluster_admins))
    if not exempt_components.intersection(ancestor_types(args.urn)):
        problems += list(_pod_privileges(args.resource_type, props)) + list(_rbac_privileges(args.resource_type, props))
    for problem in dict.fromkeys(problems):
        report_violation(problem, None)
