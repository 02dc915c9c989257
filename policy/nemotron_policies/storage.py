"""Encryption and exposure of every storage service the stack can create, judged on a whole stack.

- S3 buckets (`Bucket`, `BucketV2`): a default-encryption configuration (inline, or a
  `BucketServerSideEncryptionConfiguration[V2]` for the bucket), a public access block with all four settings
  on (the bucket's `BucketPublicAccessBlock`, or the account's), and no public canned ACL. An encryption
  configuration or public access block is the bucket's when it names the bucket; by dependency only when one
  of the two names is unknown (an auto-named bucket) and it names no other bucket of the stack. A public access block with a setting off is reported wherever it is.
- S3 ACLs never grant to everyone: no grant to the `AllUsers` or `AuthenticatedUsers` group (any AWS
  account) in a bucket's `grants`, a bucket ACL's `accessControlPolicy.grants` or an object copy's `grants`,
  and no public canned ACL on a bucket ACL of a bucket outside the stack, an object or an object copy.
- EFS file systems: `encrypted: true`. FSx file systems are always encrypted at rest (nothing to check).
- EBS: launch-template block devices, volumes and instance block devices set `encrypted`, unless the stack
  turns on the account's EBS encryption by default.
- EKS clusters envelope-encrypt Secrets with KMS (`encryptionConfig.resources` has `secrets`); KMS keys of
  the stack rotate (symmetric keys only: AWS cannot rotate the others).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .values import UNKNOWN, as_list, dig

BUCKETS = frozenset({"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})
BUCKET_ENCRYPTION = frozenset(
    {
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
    }
)
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
ACCOUNT_PUBLIC_ACCESS_BLOCK = "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock"
BUCKET_ACLS = frozenset({"aws:s3/bucketAclV2:BucketAclV2", "aws:s3/bucketAcl:BucketAcl"})
PUBLIC_ACLS = frozenset({"public-read", "public-read-write", "authenticated-read"})
# The S3 groups that are everyone (docs.aws.amazon.com/AmazonS3/latest/userguide/acl-overview.html,
# "Amazon S3 predefined groups"): a grant to either is a grant to the Internet or to every AWS account.
EVERYONE_GROUPS = ("/groups/global/allusers", "/groups/global/authenticatedusers")
OBJECTS = frozenset(
    {"aws:s3/bucketObject:BucketObject", "aws:s3/bucketObjectv2:BucketObjectv2", "aws:s3/objectCopy:ObjectCopy"}
)
PUBLIC_ACCESS_SETTINGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
EFS = "aws:efs/fileSystem:FileSystem"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EBS_VOLUME = "aws:ebs/volume:Volume"
INSTANCE = "aws:ec2/instance:Instance"
EBS_DEFAULT_ENCRYPTION = "aws:ebs/encryptionByDefault:EncryptionByDefault"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
KMS_KEY = "aws:kms/key:Key"

Found = tuple[str, str]  # (message, urn)


def related(
    target: Any, name: Any, resources: list[tuple[Any, Any]], types: frozenset[str], *, strict: bool = False
) -> list[tuple[Any, Any]]:
    """Resources of `types` that point at a bucket: by its name, or by depending on it. `strict` (for what
    protects a bucket): a bucket whose name is known is matched by name, by dependency only where the other
    resource's `bucket` is unknown; a bucket whose name is unknown (auto-named) by dependency, unless the
    other resource names another bucket of the stack."""
    known = isinstance(name, str) and bool(name)
    others = {dig(p, "bucket") for r, p in resources if r.resource_type in BUCKETS and r.urn != target.urn}

    def points_at_target(resource: Any, props: Any) -> bool:
        points_at = dig(props, "bucket")
        if known and points_at == name:
            return True
        if target.urn not in {d.urn for d in resource.dependencies}:
            return False
        if not strict or points_at is UNKNOWN:
            return True
        return not known and not (isinstance(points_at, str) and points_at in others)

    return [(r, p) for r, p in resources if r.resource_type in types and points_at_target(r, p)]


def _truthy(value: Any) -> Any:
    """True/False for a flag given as a bool or as the string pulumi-aws uses for some (`"true"`)."""
    if value is UNKNOWN:
        return UNKNOWN
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _blocks_everything(props: Any) -> Any:
    settings = [dig(props, s) for s in PUBLIC_ACCESS_SETTINGS]
    if UNKNOWN in settings:
        return UNKNOWN
    return all(s is True for s in settings)


def _bucket_problems(
    bucket: Any, props: Any, resources: list[tuple[Any, Any]], account_blocked: bool
) -> Iterator[Found]:
    name = dig(props, "bucket")
    encryption = [dig(props, "serverSideEncryptionConfiguration", "rule")] + [
        dig(p, "rules") for _, p in related(bucket, name, resources, BUCKET_ENCRYPTION, strict=True)
    ]
    if UNKNOWN not in encryption and not any(encryption):
        yield (
            f"bucket {bucket.name} has no default encryption; add a BucketServerSideEncryptionConfiguration "
            "(aws:kms for data that needs its own key)",
            bucket.urn,
        )
    blocks = related(bucket, name, resources, frozenset({PUBLIC_ACCESS_BLOCK}), strict=True)
    if not blocks and not account_blocked:
        yield (f"bucket {bucket.name} has no BucketPublicAccessBlock; block public ACLs and policies", bucket.urn)
    acls = [dig(props, "acl")] + [dig(p, "acl") for _, p in related(bucket, name, resources, BUCKET_ACLS)]
    for acl in acls:
        if isinstance(acl, str) and acl in PUBLIC_ACLS:
            yield f"bucket {bucket.name} has the public canned ACL {acl}", bucket.urn


def _grants_to_everyone(grants: Any) -> Iterator[str]:
    for grant in as_list(grants):
        uri = dig(grant, "grantee", "uri") if dig(grant, "grantee") is not None else dig(grant, "uri")
        if isinstance(uri, str) and uri.strip().lower().rstrip("/").endswith(EVERYONE_GROUPS):
            permissions = dig(grant, "permission") or dig(grant, "permissions")
            shown = ", ".join(str(p) for p in as_list(permissions)) or "?"
            yield f"grants {shown} to {uri.strip()} (everyone)"


def _acl_problems(resource: Any, props: Any, stack_buckets: set[Any]) -> Iterator[Found]:
    """ACL grants to everyone anywhere, and public canned ACLs the bucket checks do not see."""
    kind, label = resource.resource_type, resource.resource_type.rsplit(":", 1)[-1]
    grants = dig(props, "accessControlPolicy", "grants") if kind in BUCKET_ACLS else dig(props, "grants")
    for problem in _grants_to_everyone(grants):
        yield f"{label} {resource.name} {problem}; grant to named accounts", resource.urn
    acl = dig(props, "acl")
    outside = (
        kind in BUCKET_ACLS
        and dig(props, "bucket") not in stack_buckets
        and not any(d.resource_type in BUCKETS for d in resource.dependencies)
    )
    if isinstance(acl, str) and acl in PUBLIC_ACLS and (kind in OBJECTS or outside):
        yield f"{label} {resource.name} sets the public canned ACL {acl}", resource.urn


def _ebs_problems(resource: Any, props: Any) -> Iterator[str]:
    devices: list[tuple[str, Any]] = []
    if resource.resource_type == LAUNCH_TEMPLATE:
        devices = [
            (f"blockDeviceMappings[{i}] ({dig(m, 'deviceName') or '?'})", dig(m, "ebs"))
            for i, m in enumerate(as_list(dig(props, "blockDeviceMappings")))
        ]
    elif resource.resource_type == EBS_VOLUME:
        devices = [("volume", props)]
    elif resource.resource_type == INSTANCE:
        devices = [("rootBlockDevice", dig(props, "rootBlockDevice"))] + [
            (f"ebsBlockDevices[{i}]", d) for i, d in enumerate(as_list(dig(props, "ebsBlockDevices")))
        ]
    for where, device in devices:
        if isinstance(device, dict) and _truthy(device.get("encrypted")) is False:
            yield f"{where} is not encrypted; set encrypted: true"


def storage_problems(resources: list[tuple[Any, Any]]) -> Iterator[Found]:
    """(message, urn) for unencrypted or publicly exposable storage among `(resource, plain props)` pairs."""
    account_blocked = any(
        r.resource_type == ACCOUNT_PUBLIC_ACCESS_BLOCK and _blocks_everything(p) is True for r, p in resources
    )
    ebs_by_default = any(
        r.resource_type == EBS_DEFAULT_ENCRYPTION and dig(p, "enabled") is not False for r, p in resources
    )
    stack_buckets = {dig(p, "bucket") for r, p in resources if r.resource_type in BUCKETS} - {None, UNKNOWN}
    for resource, props in resources:
        kind = resource.resource_type
        if kind in BUCKETS | BUCKET_ACLS | OBJECTS:
            yield from _acl_problems(resource, props, stack_buckets)
        if kind in BUCKETS:
            yield from _bucket_problems(resource, props, resources, account_blocked)
        elif kind in (PUBLIC_ACCESS_BLOCK, ACCOUNT_PUBLIC_ACCESS_BLOCK) and _blocks_everything(props) is False:
            off = [s for s in PUBLIC_ACCESS_SETTINGS if dig(props, s) is not True]
            yield f"public access block {resource.name} leaves {', '.join(off)} off; set all four to true", resource.urn
        elif kind == EFS and _truthy(dig(props, "encrypted")) is False:
            yield f"EFS file system {resource.name} is not encrypted; set encrypted: true", resource.urn
        elif kind in (LAUNCH_TEMPLATE, EBS_VOLUME, INSTANCE) and not ebs_by_default:
            for problem in _ebs_problems(resource, props):
                yield f"{kind.rsplit(':', 1)[-1]} {resource.name}: {problem}", resource.urn
        elif kind == EKS_CLUSTER:
            configs = dig(props, "encryptionConfig")
            listed = [
                r for c in (configs if isinstance(configs, list) else [configs]) for r in as_list(dig(c, "resources"))
            ]
            if configs is not UNKNOWN and UNKNOWN not in listed and "secrets" not in listed:
                yield (
                    f"EKS cluster {resource.name} does not envelope-encrypt Secrets; set encryptionConfig "
                    "{resources: [secrets], provider.keyArn}",
                    resource.urn,
                )
        elif kind == KMS_KEY:
            spec = dig(props, "customerMasterKeySpec") or dig(props, "keySpec") or "SYMMETRIC_DEFAULT"
            if spec == "SYMMETRIC_DEFAULT" and dig(props, "enableKeyRotation") not in (True, UNKNOWN):
                yield f"KMS key {resource.name} does not rotate; set enableKeyRotation: true", resource.urn
