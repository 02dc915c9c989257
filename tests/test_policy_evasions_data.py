"""data-protection, secret-handling and image-pinning against evasions found by probing the pack: a public
access block of another bucket that only depends on the bucket, credentials hidden behind `$(...)`, inside
shell scripts or after short flags, and images in workflow steps, deep custom resources, unusual Helm keys,
Helm value files and SageMaker inference components. Each is reported; what the stack does still passes."""

from __future__ import annotations

import pytest
from policy_helpers import JOB, check_resource, check_stack, resource
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


TOKEN = "q8Zr3Lx9Vt2Kp7Wm4Ns6Hb1Jc5Fd0Gy8"


def job(env: list | None = None, command: list | None = None, args: list | None = None) -> dict:
    container: dict = {"name": "c", "image": "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu24.04"}
    for field, value in (("env", env), ("command", command), ("args", args)):
        if value is not None:
            container[field] = value
    return {"metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [container]}}}}


def secrets_of(**fields: list) -> list[str]:
    return check_resource("secret-handling", JOB, job(**fields))


@pytest.mark.parametrize(
    "env",
    [
        {"name": "API_KEY", "value": f"$(UNSET){TOKEN}"},
        {"name": "NGC", "value": f"$(UNSET){TOKEN}"},
        {"name": "HEADERS", "value": f"Authorization: Bearer {TOKEN}"},
    ],
)
def test_tokens_behind_references_or_inside_values_are_reported(env):
    assert secrets_of(env=[env]) != []


@pytest.mark.parametrize(
    "fields",
    [
        {"command": ["sh", "-c", f"curl -H 'Authorization: Bearer {TOKEN}' https://x"]},
        {"args": ["-k", TOKEN]},
        {"args": [f"-k{TOKEN}"]},
        {"args": [f"--header=X-Api={TOKEN}"]},
        {"args": [f"$(UNSET){TOKEN}"]},
    ],
)
def test_tokens_in_commands_and_arguments_are_reported(fields):
    assert secrets_of(**fields) != []


def test_references_and_ordinary_arguments_pass():
    assert secrets_of(env=[{"name": "API_KEY", "value": "$(API_KEY_FROM_SECRET)"}]) == []
    assert secrets_of(env=[{"name": "AUTH_HEADER", "value": "Bearer $(TOKEN)"}]) == []
    script = (
        "exec python3 -m dynamo.vllm --model nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4 "
        '--served-model-name nemotron --kv-transfer-config \'{"kv_connector":"NixlConnector"}\' '
        "--annotation sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    )
    assert secrets_of(command=["/bin/sh", "-c", script], args=["-k", "$(TOKEN)", "-v"]) == []


GOOD = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0"
BAD = "docker.io/evil/miner:latest"
RELEASE = "kubernetes:helm.sh/v3:Release"


def pinning(resource_type: str, props: dict) -> list[str]:
    return check_resource("image-pinning", resource_type, props)


def test_images_of_custom_resources_are_found_wherever_they_sit():
    workflow = {"metadata": {"name": "w"}, "spec": {"templates": [{"name": "m", "container": {"image": BAD}}]}}
    (found,) = pinning("kubernetes:argoproj.io/v1alpha1:Workflow", workflow)
    assert found.startswith("Workflow w spec.templates[0].container.image: image 'docker.io/evil/miner:latest'")
    workflow["spec"]["templates"][0]["container"].update(image=GOOD, imagePullPolicy="IfNotPresent")
    assert pinning("kubernetes:argoproj.io/v1alpha1:Workflow", workflow) == []
    task = {"metadata": {"name": "t"}, "spec": {"steps": [{"name": "s", "image": GOOD}], "sidecars": [{"image": BAD}]}}
    assert len(pinning("kubernetes:tekton.dev/v1:Task", task)) == 1


def test_a_container_of_a_custom_resource_is_reported_once():
    body = {
        "metadata": {"name": "l"},
        "spec": {"workerTemplate": {"spec": {"containers": [{"name": "w", "image": BAD}]}}},
    }
    assert len(pinning("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", body)) == 1


@pytest.mark.parametrize(
    ("values", "reported"),
    [
        ({"imageName": BAD}, True),
        ({"sidecar": {"imageRepository": "evil/x", "imageTag": "latest"}}, True),
        ({"sidecar": {"imageRegistry": "nvcr.io", "imageRepository": "nvidia/x", "imageTag": "1.2.3"}}, False),
        ({"proxy": {"hub": "docker.io/evil", "tag": "latest"}}, True),
        ({"proxy": {"hub": "nvcr.io/nvidia", "tag": "1.2.3"}}, False),
        ({"imagePullPolicy": "Always", "imagePullSecrets": [{"name": "ngc"}]}, False),
    ],
)
def test_other_spellings_of_helm_image_values(values, reported):
    assert bool(pinning(RELEASE, {"chart": "c", "values": values})) == reported


def test_helm_value_files_given_as_text_are_read():
    assert pinning(RELEASE, {"chart": "c", "valueYamlFiles": [{"text": f"image: {BAD}\n"}]}) != []
    assert pinning(RELEASE, {"chart": "c", "valueYamlFiles": [{"text": f"image: {GOOD}\n"}]}) == []
    assert pinning(RELEASE, {"chart": "c", "valueYamlFiles": [{"path": "values.yaml"}, {"text": ": ["}]}) == []


def test_sagemaker_inference_components_are_judged():
    component = {"specification": {"container": {"image": BAD}}}
    assert pinning("aws:sagemaker/inferenceComponent:InferenceComponent", component) != []
    component["specification"]["container"]["image"] = (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0"
    )
    assert pinning("aws:sagemaker/inferenceComponent:InferenceComponent", component) == []
