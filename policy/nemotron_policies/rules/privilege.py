"""least-privilege: pods get no host or kernel privileges, Kubernetes roles no blanket rights, and AWS
principals no blanket permissions.

- Pods (`pod_privileges.py`; every pod a resource declares, `pods.pod_specs`): no `privileged` container, no
  `allowPrivilegeEscalation: true`, no escape-prone capability (`SYS_ADMIN`, `ALL`, `SYS_MODULE`,
  `SYS_PTRACE`, `NET_ADMIN`, `BPF`, ...), no `hostPID` / `hostNetwork` / `hostIPC`. DGD workers keep their
  upstream `IPC_LOCK` and `SYS_RESOURCE` (RDMA memory registration), which are not counted.
- RBAC (`rbac.py`, the escalation paths as data in `data/rbac_escalation.yaml`): no binding to a built-in role
  that creates pods or reads Secrets, or to a subject every caller is; no `*` in a rule; no `escalate` / `bind`
  / `impersonate`; no pod creation where pods may run privileged (outside `restrictedNamespaces`), token
  requests, Secret reads, PersistentVolume creation, `nodes/proxy`...; no aggregation of the admin roles; no
  aws-auth ConfigMap entry in `system:masters`.
- Exempt from the pod and RBAC checks: children of the stack components named in `privilegedComponents`
  (default: the device plugins), judged by the type tokens in the resource's URN, which a workload cannot set.
  Helm releases are opaque to the pack.
- IAM (`iam.py`): no administrator / full-access managed policy (`RolePolicyAttachment`, `PolicyAttachment`,
  user and group attachments, `Role.managedPolicyArns`, `RolePolicyAttachmentsExclusive`, EKS access policy
  associations); no service-wide, `NotAction`, `NotResource` or every-resource pattern grant in a policy
  document (`RolePolicy`, `UserPolicy`, `GroupPolicy`, `Policy`, `Role.inlinePolicies`, the resource policies
  of `RESOURCE_POLICIES`); no trust or resource policy open to principal `*` unless a `Condition` scopes the
  caller (`iam.scoped_condition`: a value that narrows who calls, not `o-*` or `0.0.0.0/0`); no web-identity
  trust without StringEquals/StringLike on the provider's `aud` and `sub` (`iam.web_identity_problems`); no Lambda permission for principal `*` without a source. An EKS admin access policy is
  allowed for the principals listed in `clusterAdminPrincipals` (default none): the role that deploys the
  stack needs one, and the pack's configuration is where an organisation names it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import PolicyConfigSchema, ReportViolation, ResourceValidationArgs

from ..config import settings
from ..iam import grant_problems, managed_policy_problem, service_trust_problems, trust_problems, web_identity_problems
from ..kinds import ancestor_types
from ..names import DEVICE_PLUGINS_COMPONENT
from ..pod_privileges import DEFAULT_ALLOWED_HOST_PATHS, pod_privileges
from ..rbac import access_entry_problems, aws_auth_problems, rbac_privileges
from ..values import UNKNOWN, as_list, dig, plain, text

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
    "aws:kms/replicaKey:ReplicaKey": "policy",
    "aws:kms/replicaExternalKey:ReplicaExternalKey": "policy",
    "aws:kms/externalKey:ExternalKey": "policy",
    "aws:cloudwatch/eventBusPolicy:EventBusPolicy": "policy",
    "aws:codeartifact/repositoryPermissionsPolicy:RepositoryPermissionsPolicy": "policyDocument",
    "aws:codeartifact/domainPermissions:DomainPermissions": "policyDocument",
    "aws:dynamodb/resourcePolicy:ResourcePolicy": "policy",
    "aws:glue/resourcePolicy:ResourcePolicy": "policy",
    "aws:kinesis/resourcePolicy:ResourcePolicy": "policy",
    "aws:ecrpublic/repositoryPolicy:RepositoryPolicy": "policy",
    "aws:lambda/resourcePolicy:ResourcePolicy": "policy",
    "aws:apigateway/restApi:RestApi": "policy",
    "aws:opensearch/domain:Domain": "accessPolicies",
    "aws:elasticsearch/domain:Domain": "accessPolicies",
    "aws:elasticsearch/domainPolicy:DomainPolicy": "accessPolicies",
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
        "restrictedNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Namespaces whose Pod Security admission the cluster holds at baseline or restricted: a Role "
            "there may create pods and pod controllers (elsewhere a pod it creates may run privileged).",
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
        yield from web_identity_problems(dig(props, "assumeRolePolicy"), "assumeRolePolicy")
        yield from service_trust_problems(dig(props, "assumeRolePolicy"), "assumeRolePolicy")
    for where, document in documents:
        yield from grant_problems(document, where, identity=resource_type not in RESOURCE_POLICIES)
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
    restricted_namespaces = frozenset(str(n) for n in as_list(config["restrictedNamespaces"]))
    problems = list(_iam_privileges(args.resource_type, props, cluster_admins))
    problems += list(access_entry_problems(args.resource_type, props, cluster_admins))
    problems += list(aws_auth_problems(args.resource_type, props, cluster_admins))
    if not exempt_components.intersection(ancestor_types(args.urn)):
        problems += list(pod_privileges(args.resource_type, props, allowed_host_paths))
        problems += list(rbac_privileges(args.resource_type, props, restricted_namespaces))
    for problem in dict.fromkeys(problems):
        report_violation(problem, None)
