"""SageMaker weights from S3 (`huggingface.modelData`): CreateModel reads the staged prefix (ModelDataSource
S3DataSource, uncompressed), the container loads it from local disk under the repo's served name, with
network isolation and no Hub token; the committed prod endpoint does so. Requests are checked against
botocore's service models (tests/sagemaker_requests.py)."""

from __future__ import annotations

import json
import re

import pytest
from plan_helpers import FACTS, plan_of
from sagemaker_helpers import NVFP4, REGION, huggingface_endpoint, record, stack
from sagemaker_requests import Request, requests_of, validation_errors
from stack_helpers import rendered_stack, stack_file_config

from serving_stack.config import ConfigError

STAGED = FACTS.lmi.s3ModelData
PREFIX = "s3://models-bucket/nvidia/lightning/"
KEY = f"arn:aws:kms:{REGION}:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab"
OTHER_REGION_KEY = KEY.replace(REGION, "eu-west-1" if REGION != "eu-west-1" else "us-east-1")
SAGEMAKER_ENDPOINT = "nemotron:aws:SageMakerEndpoint"


def staged_endpoint(**model_data: str) -> dict:
    return huggingface_endpoint(huggingface={"repo": NVFP4, "modelData": {"s3Uri": PREFIX, **model_data}})


def calls(requests: list[Request], operation: str) -> list[dict]:
    return [r.params for r in requests if r.operation == operation]


def assert_reads_staged_weights(requests: list[Request], s3_uri: str, repo: str) -> None:
    assert {r.resource: e for r in requests if (e := validation_errors(r))} == {}
    (model,) = calls(requests, "CreateModel")
    container = model["PrimaryContainer"]
    assert container["ModelDataSource"] == {
        "S3DataSource": {"S3Uri": s3_uri, "S3DataType": "S3Prefix", "CompressionType": "None"}
    }
    assert model["EnableNetworkIsolation"] is True
    form = next(f for f in FACTS.lmi.argumentForms.values() if f.modelVariable in container["Environment"])
    environment = container["Environment"]
    assert environment[form.modelVariable] == STAGED.localPath
    assert environment[form.variable("--served-model-name")] == repo
    assert STAGED.environment.items() <= environment.items() and "HF_TOKEN" not in environment
    (config,) = calls(requests, "CreateEndpointConfig")
    assert config["ProductionVariants"][0]["ModelDataDownloadTimeoutInSeconds"] == STAGED.downloadTimeoutSeconds


def test_the_committed_prod_endpoint_reads_its_weights_from_s3() -> None:
    run = rendered_stack("prod")
    (component,) = run.of_type(SAGEMAKER_ENDPOINT)
    (endpoint,) = stack_file_config("prod")["sagemaker"]["endpoints"]
    model = endpoint["huggingface"]
    assert_reads_staged_weights(requests_of(run, component.name), model["modelData"]["s3Uri"], model["repo"])


def test_the_role_reads_only_the_staged_prefix_and_decrypts_with_its_key() -> None:
    requests = requests_of(record(stack(staged_endpoint(kmsKeyArn=KEY))), "nemotron-hf")
    assert_reads_staged_weights(requests, PREFIX, NVFP4)
    statements = [
        s
        for p in calls(requests, "PutRolePolicy")
        for s in json.loads(p["PolicyDocument"])["Statement"]
        if s["Sid"] in ("ReadModelArtifacts", "ListModelArtifacts0", "DecryptModelArtifacts")
    ]
    by_sid = {s["Sid"]: s for s in statements}
    assert by_sid["ReadModelArtifacts"]["Resource"] == ["arn:aws:s3:::models-bucket/nvidia/lightning/*"]
    assert by_sid["ListModelArtifacts0"]["Condition"] == {"StringLike": {"s3:prefix": ["nvidia/lightning/*"]}}
    assert by_sid["DecryptModelArtifacts"]["Resource"] == KEY
    assert by_sid["DecryptModelArtifacts"]["Action"] == "kms:Decrypt"


def test_without_model_data_the_container_reads_the_hub_without_isolation() -> None:
    requests = requests_of(record(stack(huggingface_endpoint())), "nemotron-hf")
    (model,) = calls(requests, "CreateModel")
    assert "ModelDataSource" not in model["PrimaryContainer"] and not model.get("EnableNetworkIsolation")


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"sendHfToken": True}, "huggingface.sendHfToken"),
        ({"options": {"SM_VLLM_SERVED_MODEL_NAME": "other"}}, "huggingface.options.SM_VLLM_SERVED_MODEL_NAME"),
        ({"modelData": {"s3Uri": PREFIX, "kmsKeyArn": OTHER_REGION_KEY}}, "huggingface.modelData.kmsKeyArn"),
        ({"modelData": {"s3Uri": "s3://models-bucket/no-trailing-slash"}}, "huggingface.modelData.s3Uri"),
    ],
)
def test_what_contradicts_staged_weights_is_refused_naming_its_key(change: dict, key: str) -> None:
    endpoint = staged_endpoint()
    endpoint["huggingface"] = {**endpoint["huggingface"], **change}
    with pytest.raises(ConfigError, match="^" + re.escape(f"sagemaker.endpoints[0].{key}")):
        plan_of(stack(endpoint))
