"""data-protection over every storage service the stack can create: S3 default encryption, public access
blocks and ACLs, EFS, EBS (launch templates, volumes, instances, or the account default), EKS Secrets, KMS key
rotation, and SageMaker volume keys only where SageMaker accepts them."""

from __future__ import annotations

import pytest
from policy_helpers import check_stack, resource

from policy.nemotron_policies.rules.data_protection import LOCAL_STORAGE_FAMILIES

BUCKET = "aws:s3/bucket:Bucket"
BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
PAB = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
ACCOUNT_PAB = "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock"
ALL_BLOCKED = {
    "blockPublicAcls": True,
    "blockPublicPolicy": True,
    "ignorePublicAcls": True,
    "restrictPublicBuckets": True,
}
ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
KMS = "arn:aws:kms:us-east-1:123456789012:key/abc"


def problems(*resources: object, config: dict | None = None) -> list[str]:
    return [message for message, _ in check_stack("data-protection", list(resources), config, stack="dev")]


def bucket(kind: str = BUCKET, **props: object) -> object:
    return resource(kind, {"bucket": "data", **props}, name="data")


def encryption(algorithm: str = "AES256") -> object:
    return resource(
        SSE,
        {"bucket": "data", "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": algorithm}}]},
        name="sse",
    )


@pytest.mark.parametrize("kind", [BUCKET, BUCKET_V2])
def test_a_bucket_needs_default_encryption_and_a_full_public_access_block(kind):
    assert problems(bucket(kind), encryption(), resource(PAB, {"bucket": "data", **ALL_BLOCKED}, name="pab")) == []
    assert problems(bucket(kind), encryption()) == [
        "bucket data has no BucketPublicAccessBlock; block public ACLs and policies"
    ]
    assert problems(bucket(kind), resource(ACCOUNT_PAB, ALL_BLOCKED, name="account")) == [
        "bucket data has no default encryption; add a BucketServerSideEncryptionConfiguration (aws:kms for data that needs "
        "its own key)"
    ]
    inline = {
        "serverSideEncryptionConfiguration": {
            "rule": {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}
        }
    }
    assert problems(bucket(kind, **inline), resource(ACCOUNT_PAB, ALL_BLOCKED, name="account")) == []


def test_public_access_blocks_with_a_setting_off_and_public_acls_are_reported():
    weak = resource(PAB, {"bucket": "data", **ALL_BLOCKED, "restrictPublicBuckets": False}, name="pab")
    assert problems(bucket(), encryption(), weak) == [
        "public access block pab leaves restrictPublicBuckets off; set all four to true"
    ]
    acl = resource("aws:s3/bucketAclV2:BucketAclV2", {"bucket": "data", "acl": "public-read-write"}, name="acl")
    assert problems(bucket(), encryption(), resource(ACCOUNT_PAB, ALL_BLOCKED, name="a"), acl) == [
        "bucket data has the public canned ACL public-read-write"
    ]


@pytest.mark.parametrize(("encrypted", "reported"), [(True, False), ("true", False), (False, True), (None, True)])
def test_efs_must_be_encrypted(encrypted, reported):
    props = {} if encrypted is None else {"encrypted": encrypted}
    assert problems(resource("aws:efs/fileSystem:FileSystem", props, name="fs")) == (
        ["EFS file system fs is not encrypted; set encrypted: true"] if reported else []
    )


@pytest.mark.parametrize(
    ("resource_type", "props", "where"),
    [
        (
            "aws:ec2/launchTemplate:LaunchTemplate",
            {
                "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}],
                "metadataOptions": {"httpTokens": "required"},
            },
            "blockDeviceMappings[0] (/dev/xvda)",
        ),
        ("aws:ebs/volume:Volume", {"size": 100}, "volume"),
        ("aws:ec2/instance:Instance", {"rootBlockDevice": {"encrypted": False}}, "rootBlockDevice"),
    ],
)
def test_ebs_must_be_encrypted_unless_the_account_encrypts_by_default(resource_type, props, where):
    (found,) = problems(resource(resource_type, props, name="disk"))
    assert found == f"{resource_type.rsplit(':', 1)[-1]} disk: {where} is not encrypted; set encrypted: true"
    assert (
        problems(
            resource(resource_type, props, name="disk"),
            resource("aws:ebs/encryptionByDefault:EncryptionByDefault", {"enabled": True}, name="default"),
        )
        == []
    )


def test_eks_secrets_and_kms_rotation():
    cluster = "aws:eks/cluster:Cluster"
    assert (
        problems(
            resource(cluster, {"encryptionConfig": {"resources": ["secrets"], "provider": {"keyArn": KMS}}}, name="c")
        )
        == []
    )
    assert problems(resource(cluster, {"name": "c"}, name="c")) == [
        "EKS cluster c does not envelope-encrypt Secrets; set encryptionConfig {resources: [secrets], provider.keyArn}"
    ]
    assert problems(resource("aws:kms/key:Key", {"enableKeyRotation": True}, name="k")) == []
    assert problems(resource("aws:kms/key:Key", {}, name="k")) == [
        "KMS key k does not rotate; set enableKeyRotation: true"
    ]
    assert problems(resource("aws:kms/key:Key", {"customerMasterKeySpec": "RSA_2048"}, name="k")) == []


def endpoint(instance_type: str, kms: object = KMS, volume: object = None) -> object:
    variant = {
        "variantName": "AllTraffic",
        "instanceType": instance_type,
        **({"volumeSizeInGb": volume} if volume else {}),
    }
    return resource(
        ENDPOINT_CONFIG, {"productionVariants": [variant], **({"kmsKeyArn": kms} if kms else {})}, name="ec"
    )


@pytest.mark.parametrize("family", LOCAL_STORAGE_FAMILIES)
def test_local_nvme_instance_types_take_no_volume_key_or_size(family):
    assert problems(endpoint(f"ml.{family}.12xlarge", kms=None)) == []
    found = problems(endpoint(f"ml.{family}.12xlarge", volume=256))
    assert len(found) == 2
    assert "SageMaker refuses a KmsKeyId" in found[0]
    assert "sets volumeSizeInGb" in found[1]


def test_ebs_instance_types_need_the_volume_key_and_families_come_from_the_pack_config():
    assert problems(endpoint("ml.m5.4xlarge", volume=256)) == []
    assert problems(endpoint("ml.m5.4xlarge", kms=None)) == [
        "endpoint configuration ec has no kmsKeyArn; encrypt its storage volumes with a KMS key"
    ]
    assert problems(endpoint("ml.g6e.12xlarge", kms=None), config={"localStorageInstanceFamilies": ["p4d"]}) == [
        "endpoint configuration ec has no kmsKeyArn; encrypt its storage volumes with a KMS key"
    ]
