"""data-protection, secret-handling and image-pinning against evasions found by probing the pack: a public
access block of another bucket that only depends on the bucket, credentials hidden behind `$(...)`, inside
shell scripts or after short flags, and images in workflow steps, deep custom resources, unusual Helm keys,
Helm value files and SageMaker inference components. Each is reported; what the stack does still passes."""

from __future__ import annotations

from policy_helpers import check_stack, resource
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

BUCKET = "aws:s3/bucketV2:BucketV2"
BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
ENCRYPTED = {
    "serverSideEncryptionConfiguration": {"rule": {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}}
}
ALL_ON = dict.fromkeys(("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"), True)


def unblocked(bucket_name: object, block_names: object, *, depends: bool = True, other: str | None = None) -> list:
    """Buckets reported without a public access block when one block (`bucket: block_names`) exists."""
    bucket = resource(BUCKET, {**({"bucket": bucket_name} if bucket_name else {}), **ENCRYPTED}, "cap")
    resources = [bucket]
    if other:
        resources.append(resource(BUCKET, {"bucket": other, **ENCRYPTED}, "other"))
    resources.append(
        resource(BLOCK, {"bucket": block_names, **ALL_ON}, "pab", dependencies=[bucket] if depends else [])
    )
    return [
        urn.rsplit("::", 1)[-1]
        for message, urn in check_stack("data-protection", resources)
        if "PublicAccessBlock" in message
    ]


def test_a_block_naming_another_bucket_does_not_block_a_named_bucket():
    assert unblocked("cap", "some-other-bucket") == ["cap"]


def test_a_block_naming_another_stack_bucket_does_not_block_an_auto_named_bucket():
    assert unblocked(None, "nemotron-scratch", other="nemotron-scratch") == ["cap"]


def test_blocks_by_name_or_by_dependency_where_a_name_is_unknown_still_count():
    assert unblocked("cap", "cap", depends=False) == []
    assert unblocked("cap", UNKNOWN_STRING_VALUE) == []  # bucket.id of a new bucket at preview
    assert unblocked(None, "cap-20250101-id") == []  # the id of an auto-named bucket
    assert unblocked(None, "cap-20250101-id", depends=False) == ["cap"]
