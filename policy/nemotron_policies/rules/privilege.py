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
  document (`RolePolicy`, `UserPolicy`, `GroupPolicy`, `Policy`, `Role.inlinePolicies`, the resource policies
  of `RESOURCE_POLICIES`); no trust or resource policy open to principal `*` unless a `Condition` scopes the
  caller (`iam.scoped_condition`); no Lambda permission for principal `*` without a source. An EKS admin access policy is
  allowed for the principals listed in `clusterAdminPrincipals` (default none): the role that deploys the
  stack needs one, and the pack's configuration is where an organisation names it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..iam import grant_problems, managed_policy_problem, trust_problems
from ..kinds import ancestor_types, kubernetes_objects
from ..names import DEVICE_PLUGINS_COMPONENT
from ..pods import pod_specs
from ..values import UNKNOWN, as_dict, as_list, dig, plain, text
from ..workloads import container_label, containers, volume_mounts

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
# Resources holding a resource policy (who may act on the resource), by the input that holds it.
RESOURCE_POLICIES = {
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
    "aws:s3/bucket:Bucket": "policy",
    "aws:s3/bucketV2:BucketV2": "policy",
    "aws:s3/accessPoint:AccessPoint": "policy",
    "aws:s3control/accessPointPolicy:AccessPointPolicy": "policy",
    "aws:s3control/bucketPolicy:BucketPolicy": "policy",
    "aws:s3control/multiRegionAccessPointPolicy:MultiRegionAccessPointPolicy": "details",
    "aws:kms/key:Key": "policy",
    "aws:kms/keyPolicy:KeyPolicy": "policy",
    "aws:ecr/repositoryPolicy:RepositoryPolicy": "policy",
    "aws:ecr/registryPolicy:RegistryPolicy": "policy",
    "aws:sqs/queuePolicy:QueuePolicy": "policy",
    "aws:sqs/queue:Queue": "policy",
    "aws:sns/topicPolicy:TopicPolicy": "policy",
    "aws:sns/topic:Topic": "policy",
    "aws:efs/fileSystemPolicy:FileSystemPolicy": "policy",
    "aws:secretsmanager/secretPolicy:SecretPolicy": "policy",
    "aws:secretsmanager/secret:Secret": "policy",
    "aws:backup/vaultPolicy:VaultPolicy": "policy",
    "aws:opensearch/domainPolicy:DomainPolicy": "accessPolicies",
    "aws:glacier/vault:Vault": "accessPolicy",
    "aws:apigateway/restApiPolicy:RestApiPolicy": "policy",
    "aws:cloudwatch/logResourcePolicy:LogResourcePolicy": "policyDocument",
    "aws:sagemaker/modelPackageGroupPolicy:ModelPackageGroupPolicy": "resourcePolicy",
}
LAMBDA_PERMISSION = "aws:lambda/permission:Permission"
LAMBDA_SCOPING_INPUTS = ("sourceArn", "sourceAccount", "principalOrgId")
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
# The only hostPath the stack's own pods mount: the node-local prewarm readiness directory (the prewarm
# DaemonSet writes it, workers read it; `serving_stack/plan/prewarm.py` STATE_DIR, held equal by a test).
DEFAULT_ALLOWED_HOST_PATHS = ["/var/lib/nemotron-prewarm"]
READ_ONLY_SUFFIX = ":ro"
ADMIN_ROLES = frozenset({"cluster-admin"})
CLUSTER_WIDE_ADMIN_ROLES = frozenset({"admin", "edit"})
ESCALATING_VERBS = frozenset({"escalate", "bind", "impersonate"})
# Every verb of a resource, spelled out: the same as `*` for what a rule grants.
EVERY_VERB = frozenset({"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"})
# Labels that select the built-in admin roles' rules (aggregated into admin/edit) or the default roles
# themselves (cluster-admin carries `kubernetes.io/bootstrapping: rbac-defaults`).
ADMIN_AGGREGATION_LABELS = frozenset(
    {
        "rbac.authorization.k8s.io/aggregate-to-admin",
        "rbac.authorization.k8s.io/aggregate-to-edit",
        "rbac.authorization.k8s.io/aggregate-to-cluster-admin",
        "kubernetes.io/bootstrapping",
    }
)
SYSTEM_MASTERS = "system:masters"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
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
            "description": "IAM principal ARNs an EKS access entry may give an admin access policy or the "
            "system:masters group (a deploy role).",
        },
        "allowedHostPaths": {
            "type": "array",
            "items": {"type": "string"},
            "default": DEFAULT_ALLOWED_HOST_PATHS,
            "description": "Node paths pods may mount as hostPath volumes (path prefixes; an entry ending "
            "':ro' admits only read-only mounts).",
        },
    }
)
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"


def _within(path: str, prefix: str) -> bool:
    """Is `path` the directory `prefix` or under it (whole path components, `..` never allowed)?"""
    if ".." in path.split("/"):
        return False
    path, prefix = posixpath.normpath(path), posixpath.normpath(prefix)
    return prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def host_path_allowed(path: str, read_only: bool, allowed: list[str]) -> bool:
    """Does an allow-list entry admit this hostPath mount? `<prefix>` admits any mount under it,
    `<prefix>:ro` only read-only ones."""
    for entry in allowed:
        ro = entry.endswith(READ_ONLY_SUFFIX)
        prefix = entry[: -len(READ_ONLY_SUFFIX)] if ro else entry
        if prefix.startswith("/") and _within(path, prefix) and (read_only or not ro):
            return True
    return False


def _host_path_problems(spec: Any, owner: str, allowed: list[str]) -> Iterator[str]:
    for volume in as_list(dig(spec, "volumes")):
        path = dig(volume, "hostPath", "path")
        if path is UNKNOWN or dig(volume, "hostPath") is None:
            continue
        name = text(dig(volume, "name")) or "?"
        mounts = volume_mounts(spec, name)
        read_only = all(m.get("readOnly") is True for m in mounts)
        shown = path if isinstance(path, str) else "(no path)"
        if isinstance(path, str) and any(m.get("readOnly") is UNKNOWN for m in mounts):
            read_only = True  # undecided: report only what no mount mode would make allowed
        if not isinstance(path, str) or not host_path_allowed(path, read_only, allowed):
            yield (
                f"{owner} mounts hostPath {shown} (volume {name}) {'read-only' if read_only else 'read-write'}; "
                f"hostPath volumes outside allowedHostPaths ({', '.join(allowed) or 'none'}) expose the node"
            )


def _windows_host_process(context: Any) -> bool:
    return dig(context, "windowsOptions", "hostProcess") is True


def _pod_privileges(resource_type: str, props: Any, allowed_host_paths: list[str]) -> Iterator[str]:
    for obj in kubernetes_objects(resource_type, props):
        if obj.group == "" and obj.kind == "PersistentVolume" and dig(obj.body, "spec", "hostPath") is not None:
            path = dig(obj.body, "spec", "hostPath", "path")
            if path is not UNKNOWN and not (
                isinstance(path, str) and host_path_allowed(path, False, allowed_host_paths)
            ):
                yield f"PersistentVolume {obj.name or '?'} is a hostPath volume ({path}) outside allowedHostPaths"
    for pod in pod_specs(resource_type, props):
        for field in HOST_NAMESPACES:
            if dig(pod.spec, field) is True:
                yield f"{pod.owner} sets {field}: true"
        if _windows_host_process(dig(pod.spec, "securityContext")):
            yield f"{pod.owner} sets securityContext.windowsOptions.hostProcess: true (a process on the node)"
        yield from _host_path_problems(pod.spec, pod.owner, allowed_host_paths)
        for container in containers(pod.spec):
            context = dig(container, "securityContext")
            if dig(context, "privileged") is True:
                yield f"{container_label(container, pod)} is privileged"
            if _windows_host_process(context):
                yield f"{container_label(container, pod)} sets windowsOptions.hostProcess: true (a process on the node)"
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
        if obj.kind == "ClusterRole":
            yield from _aggregation_problems(dig(obj.body, "aggregationRule"), where)
        if obj.kind in ("ClusterRole", "Role"):
            for index, rule in enumerate(as_list(dig(obj.body, "rules"))):
                verbs = {str(v).lower() for v in as_list(dig(rule, "verbs"))}
                if ("*" in verbs or verbs >= EVERY_VERB) and "*" in as_list(dig(rule, "resources")):
                    yield f"{where} rules[{index}] grants every verb on every resource"
                for verb in sorted(verbs & ESCALATING_VERBS):
                    yield f"{where} rules[{index}] grants {verb}"


def _aggregation_problems(rule: Any, where: str) -> Iterator[str]:
    """A ClusterRole whose aggregationRule collects the built-in admin roles' rules (or every role's)."""
    for index, selector in enumerate(as_list(dig(rule, "clusterRoleSelectors"))):
        if selector is UNKNOWN:
            continue
        labels = set(as_dict(dig(selector, "matchLabels")))
        labels |= {
            dig(e, "key") for e in as_list(dig(selector, "matchExpressions")) if dig(e, "operator") != "DoesNotExist"
        }
        picked = sorted(str(label) for label in labels & ADMIN_AGGREGATION_LABELS)
        if picked:
            yield f"{where} aggregationRule selector {index} selects {', '.join(picked)}: it collects admin rights"
        elif isinstance(selector, dict) and not dig(selector, "matchLabels") and not dig(selector, "matchExpressions"):
            yield f"{where} aggregationRule selector {index} is empty: it collects every ClusterRole's rules"


def _access_entry_problems(resource_type: str, props: Any, cluster_admins: frozenset[str]) -> Iterator[str]:
    if resource_type != ACCESS_ENTRY or dig(props, "principalArn") in cluster_admins:
        return
    groups = {str(g).strip().lower() for g in as_list(dig(props, "kubernetesGroups")) if g is not UNKNOWN}
    if SYSTEM_MASTERS in groups:
        yield (
            f"access entry puts {text(dig(props, 'principalArn')) or 'its principal'} in {SYSTEM_MASTERS} "
            "(cluster-admin that no RBAC rule can take away); associate a scoped access policy instead"
        )


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
    if resource_type in POLICY_DOCUMENTS:
        documents = [("policy", dig(props, "policy"))]
    elif resource_type in RESOURCE_POLICIES:
        field = RESOURCE_POLICIES[resource_type]
        policy = dig(props, field, "policy") if field == "details" else dig(props, field)
        documents = [(field, policy)]
    elif resource_type == ROLE:
        documents = [
            (f"inlinePolicies[{text(dig(p, 'name')) or i}]", dig(p, "policy"))
            for i, p in enumerate(as_list(dig(props, "inlinePolicies")))
        ]
        yield from trust_problems(dig(props, "assumeRolePolicy"), "assumeRolePolicy")
    for where, document in documents:
        yield from grant_problems(document, where)
    if resource_type in RESOURCE_POLICIES:
        for where, document in documents:
            yield from trust_problems(document, where)
    if resource_type == LAMBDA_PERMISSION:
        yield from _lambda_permission_problems(props)


def _lambda_permission_problems(props: Any) -> Iterator[str]:
    """A Lambda permission for principal `*` lets any account invoke the function unless it names the source."""
    principal = dig(props, "principal")
    scoping = [dig(props, field) for field in LAMBDA_SCOPING_INPUTS]
    if principal != "*" or any(value is UNKNOWN or text(value) for value in scoping):
        return
    yield (
        'permission allows principal "*" without sourceArn, sourceAccount or principalOrgId; '
        "name the calling service's resource or account"
    )


def validate_least_privilege(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    props = plain(args.props)
    config = settings(args, SCHEMA)
    exempt_components = {str(c) for c in as_list(config["privilegedComponents"])}
    cluster_admins = frozenset(str(p) for p in as_list(config["clusterAdminPrincipals"]))
    allowed_host_paths = [str(p) for p in as_list(config["allowedHostPaths"])]
    problems = list(_iam_privileges(args.resource_type, props, cluster_admins))
    problems += list(_access_entry_problems(args.resource_type, props, cluster_admins))
    if not exempt_components.intersection(ancestor_types(args.urn)):
        problems += list(_pod_privileges(args.resource_type, props, allowed_host_paths))
        problems += list(_rbac_privileges(args.resource_type, props))
    for problem in dict.fromkeys(problems):
        report_violation(problem, None)
