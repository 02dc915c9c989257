"""data-protection: the model cache is protected or retained on delete in protected stacks, SageMaker endpoint
storage and data-capture buckets are KMS-encrypted, launch templates require IMDSv2."""

from __future__ import annotations

import pytest
from policy_helpers import check_stack, resource
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE, UNKNOWN_STRING_VALUE

PVC = "kubernetes:core/v1:PersistentVolumeClaim"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
BUCKET = "aws:s3/bucket:Bucket"
SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
KMS = "arn:aws:kms:us-east-1:123456789012:key/abc"
CACHE = {
    "metadata": {"name": "shared-model-cache", "namespace": "nemotron"},
    "spec": {"storageClassName": "fsx-lustre"},
}


def problems(*resources: object, stack: str = "prod", config: dict | None = None) -> list[str]:
    return [message for message, _ in check_stack("data-protection", list(resources), config, stack=stack)]


def capture_problems(*resources: object) -> list[str]:
    """Only the data-capture findings (bucket encryption and public access have their own tests)."""
    return [m for m in problems(*resources) if "data capture" in m or "captures request" in m]


def endpoint_config(capture: dict | None = None, kms: object = KMS, dependencies: tuple = ()) -> object:
    props = {"productionVariants": [{"variantName": "AllTraffic"}], "kmsKeyArn": kms}
    if capture is not None:
        props["dataCaptureConfig"] = {"initialSamplingPercentage": 100, **capture}
    return resource(ENDPOINT_CONFIG, props, name="endpoint-config", dependencies=dependencies)


def kms_rules(algorithm: str = "aws:kms") -> list[dict]:
    return [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": algorithm, "kmsMasterKeyId": KMS}}]


ENCRYPTED_INLINE = {"serverSideEncryptionConfiguration": {"rule": kms_rules()[0]}}


@pytest.mark.parametrize(
    ("kind", "props"), [(PVC, CACHE), (FSX, {"storageCapacity": 1200}), (EFS, {"encrypted": True})]
)
def test_model_cache_storage_in_prod_must_be_protected_or_retained(kind, props):
    (found,) = problems(resource(kind, props, name="cache"))
    assert (
        "holds the model cache and is neither protected nor retained on delete in stack 'prod'; set protect=True"
        in found
    )
    assert problems(resource(kind, props, name="cache", protect=True)) == []
    assert problems(resource(kind, props, name="cache", retain_on_delete=True)) == []


def test_without_the_offline_retain_option_only_protect_counts():
    """The engine's options carry no retainOnDelete: a resource that is only retained fails under the CLI."""
    assert len(problems(resource(PVC, CACHE, retain_on_delete=None))) == 1


def test_other_stacks_and_other_claims_are_not_checked():
    assert problems(resource(PVC, CACHE), stack="dev") == []
    assert problems(resource(PVC, {"metadata": {"name": "scratch"}})) == []


def test_protected_stacks_come_from_the_pack_config():
    config = {"protectedStacks": ["staging"]}
    assert problems(resource(PVC, CACHE), config=config) == []
    assert len(problems(resource(PVC, CACHE), stack="staging", config=config)) == 1


def test_endpoint_configurations_need_a_kms_key():
    assert problems(endpoint_config()) == []
    assert problems(endpoint_config(kms=None)) == [
        "endpoint configuration endpoint-config has no kmsKeyArn; encrypt its storage volumes with a KMS key"
    ]


def test_data_capture_bucket_found_by_name_needs_sse_kms():
    bucket = resource(BUCKET, {"bucket": "capture"}, name="capture-bucket")
    capture = endpoint_config({"destinationS3Uri": "s3://capture/endpoint"})
    assert capture_problems(bucket, capture) == [
        "bucket capture-bucket receives SageMaker data capture from endpoint-config but has no SSE-KMS default "
        "encryption (sseAlgorithm aws:kms)"
    ]
    assert (
        capture_problems(bucket, capture, resource(SSE, {"bucket": "capture", "rules": kms_rules()}, name="sse")) == []
    )
    assert (
        len(
            capture_problems(
                bucket, capture, resource(SSE, {"bucket": "capture", "rules": kms_rules("AES256")}, name="sse")
            )
        )
        == 1
    )


def test_data_capture_bucket_with_an_unknown_name_is_found_by_dependency():
    bucket = resource(BUCKET, {"bucket": UNKNOWN_STRING_VALUE}, name="capture-bucket")
    capture = endpoint_config({"destinationS3Uri": UNKNOWN_STRING_VALUE}, dependencies=(bucket,))
    assert len(capture_problems(bucket, capture)) == 1
    encryption = resource(
        SSE, {"bucket": UNKNOWN_STRING_VALUE, "rules": kms_rules()}, name="sse", dependencies=(bucket,)
    )
    assert capture_problems(bucket, capture, encryption) == []
    inline = resource(BUCKET, {"serverSideEncryptionConfiguration": {"rule": kms_rules()[0]}}, name="inline")
    assert (
        capture_problems(inline, endpoint_config({"destinationS3Uri": UNKNOWN_STRING_VALUE}, dependencies=(inline,)))
        == []
    )


def test_capture_to_a_bucket_outside_the_stack_is_reported_with_or_without_a_kms_key():
    outside = [
        "endpoint configuration endpoint-config captures request and response payloads to bucket elsewhere, which "
        "is not in this stack (its access policy, public access block and retention are not checked); capture "
        "into a bucket the stack creates"
    ]
    assert problems(endpoint_config({"destinationS3Uri": "s3://elsewhere/x"})) == outside
    assert problems(endpoint_config({"destinationS3Uri": "s3://elsewhere/x", "kmsKeyId": KMS})) == outside
    assert problems(endpoint_config({"destinationS3Uri": "s3://elsewhere/x", "enableCapture": False})) == []


def test_a_dependency_on_a_stack_bucket_does_not_vouch_for_another_bucket_named_in_the_uri():
    bucket = resource(BUCKET, {"forceDestroy": False, **ENCRYPTED_INLINE}, name="capture-bucket")
    for uri in ("s3://elsewhere/capture", "s3://capture-bucke/x", "s3://other-capture-bucket-id/x"):
        found = capture_problems(bucket, endpoint_config({"destinationS3Uri": uri}, dependencies=(bucket,)))
        assert len(found) == 1 and "not in this stack" in found[0], uri
    named = resource(BUCKET, {"bucket": "capture", **ENCRYPTED_INLINE}, name="capture-bucket")
    assert capture_problems(named, endpoint_config({"destinationS3Uri": "s3://capture-2/x"}, dependencies=(named,)))
    assert capture_problems(named, endpoint_config({"destinationS3Uri": "s3://capture/x"}, dependencies=(named,))) == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"httpTokens": "required", "httpEndpoint": "enabled"}, []),
        ({"httpEndpoint": "disabled"}, []),
        (
            {"httpTokens": "optional"},
            ['launch template nodes: metadataOptions.httpTokens is optional; set it to "required" (IMDSv2 only)'],
        ),
        (None, ['launch template nodes: metadataOptions.httpTokens is unset; set it to "required" (IMDSv2 only)']),
    ],
)
def test_launch_templates_require_imdsv2(options, expected):
    props = {"imageId": "ami-1"} if options is None else {"metadataOptions": options}
    assert problems(resource(LAUNCH_TEMPLATE, props, name="nodes"), stack="dev") == expected


def test_unknown_values_at_preview_are_tolerated():
    assert problems(resource(LAUNCH_TEMPLATE, {"metadataOptions": UNKNOWN_OBJECT_VALUE}, name="nodes")) == []
    assert (
        problems(
            endpoint_config(
                {"destinationS3Uri": UNKNOWN_STRING_VALUE, "kmsKeyId": UNKNOWN_STRING_VALUE}, kms=UNKNOWN_STRING_VALUE
            )
        )
        == []
    )
    assert problems(
        resource(PVC, {"metadata": UNKNOWN_OBJECT_VALUE}), resource(ENDPOINT_CONFIG, {"dataCaptureConfig": None})
    ) == ["endpoint configuration subject has no kmsKeyArn; encrypt its storage volumes with a KMS key"]
    bucket = resource(
        BUCKET, {"bucket": "capture", "serverSideEncryptionConfiguration": UNKNOWN_OBJECT_VALUE}, name="b"
    )
    assert capture_problems(bucket, endpoint_config({"destinationS3Uri": "s3://capture/x"})) == []


def test_the_cache_storage_class_retains_provisioned_volumes_in_prod():
    storage_class = {"metadata": {"name": "fsx-lustre"}, "provisioner": "fsx.csi.aws.com"}
    cache = resource(PVC, CACHE, name="cache", retain_on_delete=True)
    assert problems(cache, resource(STORAGE_CLASS, storage_class, name="sc")) == [
        "StorageClass sc provisions the model cache with reclaimPolicy Delete (default); set reclaimPolicy: Retain"
    ]
    assert problems(cache, resource(STORAGE_CLASS, {**storage_class, "reclaimPolicy": "Retain"}, name="sc")) == []
    assert problems(cache, resource(STORAGE_CLASS, {**storage_class, "metadata": {"name": "other"}}, name="sc")) == []
    assert problems(cache, resource(STORAGE_CLASS, storage_class, name="sc"), stack="dev") == []


def test_an_auto_named_capture_bucket_is_found_by_dependency_even_with_a_known_uri():
    """Offline, mocks give the auto-named bucket an id the URI carries but its inputs never name."""
    bucket = resource(BUCKET, {"forceDestroy": False}, name="capture-bucket")
    capture = endpoint_config(
        {"destinationS3Uri": "s3://capture-bucket-id/capture", "kmsKeyId": KMS}, dependencies=(bucket,)
    )
    assert len(capture_problems(bucket, capture)) == 1
    encryption = resource(
        SSE, {"bucket": "capture-bucket-id", "rules": kms_rules()}, name="sse", dependencies=(bucket,)
    )
    assert capture_problems(bucket, capture, encryption) == []
