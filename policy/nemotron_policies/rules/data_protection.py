"""data-protection: the model cache survives a `pulumi destroy` in protected stacks, inference data is
encrypted with KMS, and nodes only serve IMDSv2.

- In a stack of `protectedStacks` (default `["prod"]`), the `shared-model-cache` PVC and the EFS / FSx for
  Lustre file systems are `protect`ed or retained on delete. The analyzer protocol does not carry
  `retainOnDelete` (`PolicyResourceOptions` has no such field), so under `pulumi preview --policy-pack`
  only `protect` counts; the offline runner sets `opts.retain_on_delete` from the recording, and the rule
  reads it when present. A file system the CSI driver provisions for the claim outlives it only if the
  claim's StorageClass (when this stack defines it) has `reclaimPolicy: Retain`.
- SageMaker endpoint configurations set `kmsKeyArn`, unless every variant runs on an instance type with
  local NVMe storage only (`localStorageInstanceTypes`; hardware-encrypted, and SageMaker fails the config
  when a key is given; a copy of `catalog/sagemaker_instances.yaml`, kept equal by a test). Data capture
  goes to a bucket of this stack that has SSE-KMS default encryption (inline or by a
  `BucketServerSideEncryptionConfiguration`): the buckets the endpoint configuration depends on (an
  auto-named bucket's name is only known after the update) or the one named in
  `dataCaptureConfig.destinationS3Uri`; a bucket outside the stack cannot be checked, so the capture must
  set `kmsKeyId` itself.
- Launch templates require IMDSv2 (`metadataOptions.httpTokens: required`, or IMDS disabled).
"""
from __future__ import annotations

from typing import Any, Optional

from pulumi_policy import PolicyConfigSchema, PolicyResource, ReportViolation, StackValidationArgs

from ..config import current_stack, settings
from ..values import UNKNOWN, as_list, dig, plain, text
from ..workloads import MODEL_CACHE_CLAIM, PVC

STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
PERSISTENT_VOLUME = "kubernetes:core/v1:PersistentVolume"
FILE_SYSTEMS = frozenset({"aws:efs/fileSystem:FileSystem", "aws:fsx/lustreFileSystem:LustreFileSystem"})
ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
BUCKETS = frozenset({"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})
BUCKET_ENCRYPTION = frozenset({
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
})
KMS_ALGORITHMS = frozenset({"aws:kms", "aws:kms:dsse"})
LOCAL_STORAGE_INSTANCE_TYPES = [
    "ml.g6e.2xlarge", "ml.g6e.12xlarge", "ml.g6e.48xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.4xlarge",
    "ml.p5.48xlarge", "ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge",
]
SCHEMA = PolicyConfigSchema({
    "protectedStacks": {
        "type": "array",
        "items": {"type": "string"},
        "default": ["prod"],
        "description": "Stacks whose model cache must be protected or retained on delete.",
    },
    "localStorageInstanceTypes": {
        "type": "array",
        "items": {"type": "string"},
        "default": LOCAL_STORAGE_INSTANCE_TYPES,
        "description": "SageMaker instance types with local NVMe storage only: their configs take no kmsKeyArn.",
    },
})


def _retained(resource: PolicyResource) -> bool:
    return bool(resource.opts.protect) or bool(getattr(resource.opts, "retain_on_delete", False))


def _is_model_cache_storage(resource: PolicyResource, props: Any) -> bool:
    if resource.resource_type == PVC:
        return dig(props, "metadata", "name") == MODEL_CACHE_CLAIM
    return resource.resource_type in FILE_SYSTEMS


def _held_by_a_retained_volume(claim: Any, resources: list[tuple[PolicyResource, Any]]) -> bool:
    """The claim is bound to a volume of this stack that is reserved for it and kept (`Retain`): the data lives
    in that volume's file system (checked on its own), not in the claim."""
    wanted = (dig(claim, "metadata", "namespace"), dig(claim, "metadata", "name"))
    return any(
        r.resource_type == PERSISTENT_VOLUME and dig(p, "spec", "persistentVolumeReclaimPolicy") == "Retain"
        and (dig(p, "spec", "claimRef", "namespace"), dig(p, "spec", "claimRef", "name")) == wanted
        for r, p in resources
    )


def _storage_class_problems(resources: list[tuple[PolicyResource, Any]]) -> list[tuple[str, str]]:
    """(message, urn) for StorageClasses of this stack that would delete the model cache's volume."""
    claimed = {dig(p, "spec", "storageClassName") for r, p in resources
               if r.resource_type == PVC and dig(p, "metadata", "name") == MODEL_CACHE_CLAIM}
    problems = []
    for resource, props in resources:
        policy = dig(props, "reclaimPolicy")
        if resource.resource_type == STORAGE_CLASS and dig(props, "metadata", "name") in claimed - {None, UNKNOWN} \
                and policy is not UNKNOWN and policy != "Retain":
            problems.append((f"StorageClass {resource.name} provisions the model cache with reclaimPolicy "
                             f"{policy or 'Delete (default)'}; set reclaimPolicy: Retain", resource.urn))
    return problems


def _kms_encrypted(rules: Any) -> Any:
    """Do SSE rules (a rule, or a list of them) default to KMS? `UNKNOWN` if that is not known."""
    algorithms = [dig(rule, "applyServerSideEncryptionByDefault", "sseAlgorithm")
                  for rule in (rules if isinstance(rules, list) else [rules])]
    if rules is UNKNOWN or UNKNOWN in algorithms:
        return UNKNOWN
    return any(a in KMS_ALGORITHMS for a in algorithms)


def _bucket_name_of(uri: Any) -> Any:
    if uri is UNKNOWN:
        return UNKNOWN
    if isinstance(uri, str) and uri.startswith("s3://"):
        return uri[len("s3://"):].split("/", 1)[0] or None
    return None


def _capture_problems(config: PolicyResource, props: Any, resources: list[tuple[PolicyResource, Any]]) -> list[tuple[str, str]]:
    """(message, urn) for data capture that is not KMS-encrypted."""
    capture = dig(props, "dataCaptureConfig")
    if not isinstance(capture, dict) or dig(capture, "enableCapture") is False:
        return []
    bucket_name = _bucket_name_of(dig(capture, "destinationS3Uri"))
    dependencies = {d.urn for d in config.dependencies}
    buckets = [(r, p) for r, p in resources if r.resource_type in BUCKETS and (
        r.urn in dependencies or (bucket_name not in (None, UNKNOWN) and dig(p, "bucket") == bucket_name))]
    if not buckets:
        if bucket_name is UNKNOWN or dig(capture, "kmsKeyId") is UNKNOWN or text(dig(capture, "kmsKeyId")):
            return []
        return [(f"endpoint configuration {config.name} captures data to bucket {bucket_name}, which is not in this "
                 "stack; set dataCaptureConfig.kmsKeyId", config.urn)]
    problems = []
    for bucket, bucket_props in buckets:
        name = dig(bucket_props, "bucket")
        verdicts = [_kms_encrypted(dig(bucket_props, "serverSideEncryptionConfiguration", "rule"))]
        for other, other_props in resources:
            if other.resource_type in BUCKET_ENCRYPTION and (
                    (name not in (None, UNKNOWN) and dig(other_props, "bucket") == name)
                    or bucket.urn in {d.urn for d in other.dependencies}):
                verdicts.append(_kms_encrypted(dig(other_props, "rules")))
        if True not in verdicts and UNKNOWN not in verdicts:
            problems.append((f"bucket {bucket.name} receives SageMaker data capture from {config.name} but has no "
                             "SSE-KMS default encryption (sseAlgorithm aws:kms)", bucket.urn))
    return problems


def _launch_template_problem(props: Any) -> Optional[str]:
    tokens, endpoint = dig(props, "metadataOptions", "httpTokens"), dig(props, "metadataOptions", "httpEndpoint")
    if UNKNOWN in (tokens, endpoint) or tokens == "required" or endpoint == "disabled":
        return None
    return f"metadataOptions.httpTokens is {tokens or 'unset'}; set it to \"required\" (IMDSv2 only)"


def validate_data_protection(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = current_stack()
    protected_stack = stack in as_list(settings(args, SCHEMA)["protectedStacks"])
    resources = [(r, plain(r.props)) for r in args.resources]
    if protected_stack:
        for message, urn in _storage_class_problems(resources):
            report_violation(message, urn)
    for resource, props in resources:
        if protected_stack and _is_model_cache_storage(resource, props) and not _retained(resource) \
                and not (resource.resource_type == PVC and _held_by_a_retained_volume(props, resources)):
            report_violation(f"{resource.resource_type.rsplit(':', 1)[-1]} {resource.name} holds the model cache and "
                             f"is neither protected nor retained on delete in stack {stack!r}; set protect=True "
                             "(retainOnDelete is honoured offline but invisible to `pulumi preview --policy-pack`)",
                             resource.urn)
        if resource.resource_type == ENDPOINT_CONFIG:
            local_storage = as_list(settings(args, SCHEMA)["localStorageInstanceTypes"])
            variant_types = [dig(v, "instanceType") for v in as_list(dig(props, "productionVariants"))]
            hardware_encrypted = bool(variant_types) and all(t in local_storage for t in variant_types)
            key = dig(props, "kmsKeyArn")
            if not hardware_encrypted and key is not UNKNOWN and not text(key):
                report_violation(f"endpoint configuration {resource.name} has no kmsKeyArn; encrypt its storage "
                                 "volumes with a KMS key", resource.urn)
            for message, urn in _capture_problems(resource, props, resources):
                report_violation(message, urn)
        if resource.resource_type == LAUNCH_TEMPLATE:
            problem = _launch_template_problem(props)
            if problem:
                report_violation(f"launch template {resource.name}: {problem}", resource.urn)
