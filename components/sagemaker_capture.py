"""The endpoint's encryption key and data-capture bucket: what holds data outlives the stack.

Both are `retain_on_delete` when they hold captured data: a `pulumi destroy` (or a replacement) would
otherwise fail on a non-empty bucket, or schedule the key for deletion while the objects it encrypted stay
behind unreadable after the waiting period. Pulumi forgets them; `docs/sagemaker.md` says how to delete them
by hand. The bucket's encryption and public-access settings are one per bucket, so a replacement deletes
the old setting before it writes the new one where a change of the same bucket's setting replaces it
(create-before-delete would delete the new setting last); the public-access block is replaced only with a
new bucket.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

import pulumi
import pulumi_aws as aws

SSE = aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs


def encryption_key(
    name: str,
    endpoint_name: str,
    region: str,
    *,
    holds_captured_data: bool,
    tags: Mapping[str, str],
    parent: pulumi.Resource,
) -> aws.kms.Key:
    return aws.kms.Key(
        f"{name}-kms",
        description=f"SageMaker endpoint {endpoint_name}: ML storage volumes and captured data",
        enable_key_rotation=True,
        deletion_window_in_days=30,
        region=region,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=holds_captured_data),
    )


def capture_bucket(
    name: str,
    region: str,
    kms_key_arn: Optional[pulumi.Input[str]],
    *,
    tags: Mapping[str, str],
    parent: pulumi.Resource,
) -> aws.s3.Bucket:
    """An auto-named, SSE-KMS, private bucket that is kept when the stack lets go of it."""
    bucket = aws.s3.Bucket(
        f"{name}-capture",
        region=region,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent, retain_on_delete=True),
    )
    one_per_bucket = pulumi.ResourceOptions(parent=parent, delete_before_replace=True)
    aws.s3.BucketServerSideEncryptionConfiguration(
        f"{name}-capture-encryption",
        bucket=bucket.id,
        region=region,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                bucket_key_enabled=True,
                apply_server_side_encryption_by_default=SSE(sse_algorithm="aws:kms", kms_master_key_id=kms_key_arn),
            )
        ],
        opts=one_per_bucket,
    )
    aws.s3.BucketPublicAccessBlock(
        f"{name}-capture-public-access",
        bucket=bucket.id,
        region=region,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )  # replaced only with a new bucket: nothing to collide with
    return bucket
