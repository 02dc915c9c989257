"""data-protection: the model cache survives a `pulumi destroy` in protected stacks, inference data is
encrypted with KMS, and nodes only serve IMDSv2.

- In a stack of `protectedStacks` (default `["prod"]`), the `shared-model-cache` PVC and the EFS / FSx for
  Lustre file systems are `protect`ed or retained on delete. The analyzer protocol does not carry
  `retainOnDelete` (`PolicyResourceOptions` has no such field), so under `pulumi preview --policy-pack`
  only `protect` counts; the offline runner sets `opts.retain_on_delete` from the recording, and the rule
  reads it when present. A file system the CSI driver provisions for the claim outlives it only if the
  claim's StorageClass (when this stack defines it) has `reclaimPolicy: Retain`.
- SageMaker endpoint configurations set `kmsKeyArn` where AWS allows one: on instance types whose ML storage
  is EBS. Types with local NVMe storage only (`localStorageInstanceFamilies`: g5, g6, g6e, p4d, p5*,
  p6-b200, trn1...) keep data on hardware-encrypted instance storage, and SageMaker fails
  CreateEndpointConfig when a KmsKeyId (or a VolumeSizeInGB) is given for them: both are reported there.
  Data capture goes to a bucket of this stack that has
  SSE-KMS default encryption (inline or by a `BucketServerSideEncryptionConfiguration`): the buckets the
  endpoint configuration depends on (an auto-named bucket's name is only known after the update) or the one
  named in `dataCaptureConfig.destinationS3Uri`. A capture URI naming a bucket outside the stack is
  reported whatever its `kmsKeyId`: the payloads (prompts and completions) would land where this stack
  checks no access policy, public access block or encryption.
- Data stays in the endpoint's region and account: a KMS key named by ARN (`kmsKeyArn`,
  `dataCaptureConfig.kmsKeyId`) of another region, or of an account that is not the stack's (the accounts of
  its SageMaker models' execution roles and of its providers' `allowedAccountIds`), is reported, and so is a
  capture bucket of the stack created in another region (`region`). Replication of a stack bucket
  (`BucketReplicationConfig`, a bucket's `replicationConfiguration`) to a bucket outside the stack or to
  another account is reported: the copies land where the stack checks nothing.
- Launch templates require IMDSv2 (`metadataOptions.httpTokens: required`, or IMDS disabled).
- Every other storage service the stack can create is encrypted and not publicly exposable (`storage.py`:
  S3 default encryption, public access blocks and ACLs, EFS, EBS, EKS Secrets, KMS key rotation).

The pack keeps one module per rule (`rules/__init__.py`); this rule's four checks report under one policy
name.
"""

from __future__ import annotations

from typing import Any, Optional

from pulumi_policy import PolicyConfigSchema, PolicyResource, ReportViolation, StackValidationArgs

from ..config import current_stack, settings
from ..names import MODEL_CACHE_CLAIM
from ..storage import BUCKET_ENCRYPTION, BUCKETS, related, storage_problems
from ..values import UNKNOWN, as_list, dig, plain, text

PVC = "kubernetes:core/v1:PersistentVolumeClaim"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
PERSISTENT_VOLUME = "kubernetes:core/v1:PersistentVolume"
FILE_SYSTEMS = frozenset({"aws:efs/fileSystem:FileSystem", "aws:fsx/lustreFileSystem:LustreFileSystem"})
ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SAGEMAKER_MODEL = "aws:sagemaker/model:Model"
AWS_PROVIDER = "pulumi:providers:aws"
REPLICATION = "aws:s3/bucketReplicationConfig:BucketReplicationConfig"
KMS_ALGORITHMS = frozenset({"aws:kms", "aws:kms:dsse"})
# SageMaker Python SDK `volume_size_supported` / `instance_supports_kms` (v2 since mid-2024, v3 sagemaker-core)
# and the EC2 specifications of local instance storage ("d" families).
LOCAL_STORAGE_FAMILIES = [
    "g4dn",
    "g5",
    "g6",
    "g6e",
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
    "p6e-gb200",
    "trn1",
    "trn1n",
    "m5d",
    "c5d",
    "r5d",
]
SCHEMA = PolicyConfigSchema(
    {
        "protectedStacks": {
            "type": "array",
            "items": {"type": "string"},
            "default": ["prod"],
            "description": "Stacks whose model cache must be protected or retained on delete.",
        },
        "localStorageInstanceFamilies": {
            "type": "array",
            "items": {"type": "string"},
            "default": LOCAL_STORAGE_FAMILIES,
            "description": "SageMaker instance families (ml.<family>.<size>) whose ML storage is local NVMe only.",
        },
    }
)


def _retained(resource: PolicyResource) -> bool:
    return bool(resource.opts.protect) or bool(getattr(resource.opts, "retain_on_delete", False))


def _is_model_cache_storage(resource: PolicyResource, props: Any) -> bool:
    if resource.resource_type == PVC:
        return bool(dig(props, "metadata", "name") == MODEL_CACHE_CLAIM)
    return resource.resource_type in FILE_SYSTEMS


def _held_by_a_retained_volume(claim: Any, resources: list[tuple[PolicyResource, Any]]) -> bool:
    """The claim is bound to a volume of this stack that is reserved for it and kept (`Retain`): the data lives
    in that volume's file system (checked on its own), not in the claim."""
    wanted = (dig(claim, "metadata", "namespace"), dig(claim, "metadata", "name"))
    return any(
        r.resource_type == PERSISTENT_VOLUME
        and dig(p, "spec", "persistentVolumeReclaimPolicy") == "Retain"
        and (dig(p, "spec", "claimRef", "namespace"), dig(p, "spec", "claimRef", "name")) == wanted
        for r, p in resources
    )


def _storage_class_problems(resources: list[tuple[PolicyResource, Any]]) -> list[tuple[str, str]]:
    """(message, urn) for StorageClasses of this stack that would delete the model cache's volume."""
    claimed = {
        text(dig(p, "spec", "storageClassName"))
        for r, p in resources
        if r.resource_type == PVC and dig(p, "metadata", "name") == MODEL_CACHE_CLAIM
    }
    problems = []
    for resource, props in resources:
        policy = dig(props, "reclaimPolicy")
        if (
            resource.resource_type == STORAGE_CLASS
            and text(dig(props, "metadata", "name")) in claimed - {None}
            and policy is not UNKNOWN
            and policy != "Retain"
        ):
            problems.append(
                (
                    f"StorageClass {resource.name} provisions the model cache with reclaimPolicy "
                    f"{policy or 'Delete (default)'}; set reclaimPolicy: Retain",
                    resource.urn,
                )
            )
    return problems


def _kms_encrypted(rules: Any) -> Any:
    """Do SSE rules (a rule, or a list of them) default to KMS? `UNKNOWN` if that is not known."""
    algorithms = [
        dig(rule, "applyServerSideEncryptionByDefault", "sseAlgorithm")
        for rule in (rules if isinstance(rules, list) else [rules])
    ]
    if rules is UNKNOWN or UNKNOWN in algorithms:
        return UNKNOWN
    return any(isinstance(a, str) and a in KMS_ALGORITHMS for a in algorithms)


def _bucket_name_of(uri: Any) -> Any:
    if uri is UNKNOWN:
        return UNKNOWN
    if isinstance(uri, str) and uri.startswith("s3://"):
        return uri[len("s3://") :].split("/", 1)[0] or None
    return None


def _names_stack_bucket(bucket_name: str, bucket: PolicyResource, props: Any, config: PolicyResource) -> bool:
    """Is `bucket_name` this stack bucket's name: its `bucket` input, or (auto-named, and the configuration
    depends on it) a name Pulumi derives from it (`<resource name>-<suffix>`, `<bucketPrefix><suffix>`)."""
    given = dig(props, "bucket")
    if isinstance(given, str) and given:
        return bucket_name == given
    if bucket.urn not in {d.urn for d in config.dependencies}:
        return False
    prefix = text(dig(props, "bucketPrefix")) or f"{bucket.name}-"
    return given is UNKNOWN or bucket_name.startswith(prefix)


def _capture_problems(
    config: PolicyResource, props: Any, resources: list[tuple[PolicyResource, Any]]
) -> list[tuple[str, str]]:
    """(message, urn) for data capture that leaves the stack or is not KMS-encrypted."""
    capture = dig(props, "dataCaptureConfig")
    if not isinstance(capture, dict) or dig(capture, "enableCapture") is False:
        return []
    bucket_name = _bucket_name_of(dig(capture, "destinationS3Uri"))
    dependencies = {d.urn for d in config.dependencies}
    if isinstance(bucket_name, str):
        buckets = [
            (r, p)
            for r, p in resources
            if r.resource_type in BUCKETS and _names_stack_bucket(bucket_name, r, p, config)
        ]
        if not buckets:
            return [
                (
                    f"endpoint configuration {config.name} captures request and response payloads to bucket "
                    f"{bucket_name}, which is not in this stack (its access policy, public access block and "
                    "retention are not checked); capture into a bucket the stack creates",
                    config.urn,
                )
            ]
    else:
        buckets = [(r, p) for r, p in resources if r.resource_type in BUCKETS and r.urn in dependencies]
    problems = []
    for bucket, bucket_props in buckets:
        verdicts = [_kms_encrypted(dig(bucket_props, "serverSideEncryptionConfiguration", "rule"))] + [
            _kms_encrypted(dig(p, "rules"))
            for _, p in related(bucket, dig(bucket_props, "bucket"), resources, BUCKET_ENCRYPTION, strict=True)
        ]
        if True not in verdicts and UNKNOWN not in verdicts:
            problems.append(
                (
                    f"bucket {bucket.name} receives SageMaker data capture from {config.name} but has no "
                    "SSE-KMS default encryption (sseAlgorithm aws:kms)",
                    bucket.urn,
                )
            )
    return problems


def _arn_parts(arn: Any) -> Optional[list[str]]:
    parts = arn.split(":", 5) if isinstance(arn, str) else []
    return parts if len(parts) == 6 and parts[0] == "arn" else None


def home_accounts(resources: list[tuple[PolicyResource, Any]]) -> set[str]:
    """The accounts the stack deploys to, where it says so: its SageMaker models' execution roles and its AWS
    providers' `allowedAccountIds`."""
    accounts: set[str] = set()
    for resource, props in resources:
        if resource.resource_type == SAGEMAKER_MODEL:
            parts = _arn_parts(dig(props, "executionRoleArn"))
            if parts and parts[4].isdigit():
                accounts.add(parts[4])
        elif resource.resource_type == AWS_PROVIDER:
            accounts |= {str(a) for a in as_list(dig(props, "allowedAccountIds")) if text(a)}
    return accounts


def _region_of(resource: PolicyResource, props: Any) -> Any:
    """The region a resource is created in: its `region` input, else its provider's."""
    region = dig(props, "region")
    if region is None and resource.provider is not None:
        region = dig(plain(resource.provider.props), "region")
    return region


def _elsewhere(arn: Any, region: Any, accounts: set[str]) -> Optional[str]:
    parts = _arn_parts(arn)
    if parts is None:
        return None
    if isinstance(region, str) and parts[3] and parts[3] != region:
        return f"region {parts[3]} (the endpoint is in {region})"
    if accounts and parts[4] and parts[4] not in accounts:
        return f"account {parts[4]} (the stack's: {', '.join(sorted(accounts))})"
    return None


def _location_problems(
    config: PolicyResource, props: Any, resources: list[tuple[PolicyResource, Any]], accounts: set[str]
) -> list[tuple[str, str]]:
    """(message, urn) for keys and capture buckets of an endpoint configuration in another region or account."""
    region = _region_of(config, props)
    problems = []
    for field, arn in (
        ("kmsKeyArn", dig(props, "kmsKeyArn")),
        ("dataCaptureConfig.kmsKeyId", dig(props, "dataCaptureConfig", "kmsKeyId")),
    ):
        where = _elsewhere(arn, region, accounts)
        if where:
            problems.append(
                (
                    f"endpoint configuration {config.name} {field} names a KMS key in {where}; use a key of the stack's account and region",
                    config.urn,
                )
            )
    if isinstance(dig(props, "dataCaptureConfig"), dict) and isinstance(region, str):
        dependencies = {d.urn for d in config.dependencies}
        for bucket, bucket_props in resources:
            bucket_region = dig(bucket_props, "region")
            if (
                bucket.resource_type in BUCKETS
                and bucket.urn in dependencies
                and isinstance(bucket_region, str)
                and bucket_region != region
            ):
                problems.append(
                    (
                        f"bucket {bucket.name} region is {bucket_region}, but it receives data capture from {config.name} in {region}; create it in {region}",
                        bucket.urn,
                    )
                )
    return problems


def _replication_problems(resources: list[tuple[PolicyResource, Any]], accounts: set[str]) -> list[tuple[str, str]]:
    """(message, urn) for bucket replication to a bucket outside the stack or to another account."""
    names = {dig(p, "bucket") for r, p in resources if r.resource_type in BUCKETS}
    problems = []
    for resource, props in resources:
        if resource.resource_type == REPLICATION:
            rules, field = dig(props, "rules"), "rules"
        elif resource.resource_type in BUCKETS:
            rules, field = dig(props, "replicationConfiguration", "rules"), "replicationConfiguration.rules"
        else:
            continue
        label = f"{resource.resource_type.rsplit(':', 1)[-1]} {resource.name}"
        for index, rule in enumerate(as_list(rules)):
            destination = dig(rule, "destination", "bucket")
            parts = _arn_parts(destination)
            bucket = parts[5] if parts else None
            if isinstance(bucket, str) and bucket not in names and UNKNOWN not in names:
                problems.append(
                    (
                        f"{label} {field}[{index}].destination.bucket copies to {destination}, a bucket outside this stack; replicate only to buckets the stack creates",
                        resource.urn,
                    )
                )
            account = dig(rule, "destination", "account") or dig(rule, "destination", "accountId")
            if isinstance(account, str) and accounts and account not in accounts:
                problems.append(
                    (
                        f"{label} {field}[{index}].destination.account sends the copies to account {account}; keep them in the stack's account",
                        resource.urn,
                    )
                )
    return problems


def _family(instance_type: Any) -> Optional[str]:
    """`ml.g6e.12xlarge` -> `g6e`."""
    parts = instance_type.split(".") if isinstance(instance_type, str) else []
    return parts[1] if len(parts) == 3 else None


def _endpoint_storage_problems(config: PolicyResource, props: Any, local_families: list[str]) -> list[str]:
    """KMS where SageMaker allows it, and nothing it refuses where storage is local NVMe."""
    variants = [v for v in as_list(dig(props, "productionVariants")) if isinstance(v, dict)]
    types = [dig(v, "instanceType") for v in variants]
    kms = dig(props, "kmsKeyArn")
    if UNKNOWN in types or kms is UNKNOWN:
        return []
    local = [t for t in types if _family(t) in local_families]
    if not local:
        return (
            []
            if text(kms)
            else [f"endpoint configuration {config.name} has no kmsKeyArn; encrypt its storage volumes with a KMS key"]
        )
    problems = []
    if text(kms):
        problems.append(
            f"endpoint configuration {config.name} sets kmsKeyArn, but {', '.join(local)} has local NVMe "
            "storage only (encrypted by the instance hardware) and SageMaker refuses a KmsKeyId for it; "
            "remove kmsKeyArn"
        )
    for variant in variants:
        if dig(variant, "instanceType") in local and dig(variant, "volumeSizeInGb") not in (None, UNKNOWN):
            problems.append(
                f"endpoint configuration {config.name} variant {dig(variant, 'variantName') or '?'} sets "
                f"volumeSizeInGb on {dig(variant, 'instanceType')}, which has no EBS ML storage; remove it"
            )
    return problems


def _launch_template_problem(props: Any) -> Optional[str]:
    tokens, endpoint = dig(props, "metadataOptions", "httpTokens"), dig(props, "metadataOptions", "httpEndpoint")
    if UNKNOWN in (tokens, endpoint) or tokens == "required" or endpoint == "disabled":
        return None
    return f'metadataOptions.httpTokens is {tokens or "unset"}; set it to "required" (IMDSv2 only)'


def validate_data_protection(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = current_stack()
    config = settings(args, SCHEMA)
    protected_stack = stack in as_list(config["protectedStacks"])
    local_families = [str(f) for f in as_list(config["localStorageInstanceFamilies"])]
    resources = [(r, plain(r.props)) for r in args.resources]
    accounts = home_accounts(resources)
    for message, urn in storage_problems(resources):
        report_violation(message, urn)
    for message, urn in _replication_problems(resources, accounts):
        report_violation(message, urn)
    if protected_stack:
        for message, urn in _storage_class_problems(resources):
            report_violation(message, urn)
    for resource, props in resources:
        if (
            protected_stack
            and _is_model_cache_storage(resource, props)
            and not _retained(resource)
            and not (resource.resource_type == PVC and _held_by_a_retained_volume(props, resources))
        ):
            report_violation(
                f"{resource.resource_type.rsplit(':', 1)[-1]} {resource.name} holds the model cache and "
                f"is neither protected nor retained on delete in stack {stack!r}; set protect=True "
                "(retainOnDelete is honoured offline but invisible to `pulumi preview --policy-pack`)",
                resource.urn,
            )
        if resource.resource_type == ENDPOINT_CONFIG:
            for message in _endpoint_storage_problems(resource, props, local_families):
                report_violation(message, resource.urn)
            for message, urn in _capture_problems(resource, props, resources):
                report_violation(message, urn)
            for message, urn in _location_problems(resource, props, resources, accounts):
                report_violation(message, urn)
        if resource.resource_type == LAUNCH_TEMPLATE:
            problem = _launch_template_problem(props)
            if problem:
                report_violation(f"launch template {resource.name}: {problem}", resource.urn)
