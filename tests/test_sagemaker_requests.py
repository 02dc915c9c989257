"""Every request the SageMaker endpoint makes passes botocore's parameter validation and the service model's
constraints, for every instance type the data offers and for the committed prod stack; and the storage rules
hold per instance type (local NVMe: neither VolumeSizeInGB nor KmsKeyId), independent of moto."""

from __future__ import annotations

import pytest
from plan_helpers import FACTS
from sagemaker_helpers import (
    GATED_ID,
    NVFP4,
    expected_engine_environment,
    expected_image_prefix,
    huggingface_endpoint,
    jumpstart_endpoint,
    record,
    stack,
)
from sagemaker_requests import Request, requests_of, validation_errors
from stack_helpers import rendered_stack

INSTANCE_TYPES = sorted(FACTS.sagemaker_instances)
OPERATIONS = {
    "CreateRole",
    "PutRolePolicy",
    "CreateModel",
    "CreateEndpointConfig",
    "PutMetricAlarm",
    "CreateEndpoint",
    "RegisterScalableTarget",
    "PutScalingPolicy",
}
SAGEMAKER_ENDPOINT = "nemotron:aws:SageMakerEndpoint"


def assert_valid(requests: list[Request]) -> None:
    problems = {r.resource: errors for r in requests if (errors := validation_errors(r))}
    assert problems == {}
    assert {r.operation for r in requests} >= OPERATIONS


def endpoint_config(requests: list[Request]) -> dict:
    (config,) = [r.params for r in requests if r.operation == "CreateEndpointConfig"]
    return config


@pytest.mark.parametrize("instance_type", INSTANCE_TYPES)
def test_every_instance_type_gets_valid_requests_and_its_storage_rule(instance_type):
    instance = FACTS.sagemaker_instances[instance_type]
    raw = stack(huggingface_endpoint(instanceType=instance_type, dataCapture={"enabled": True}))
    requests = requests_of(record(raw), "nemotron-hf")
    assert_valid(requests)
    config = endpoint_config(requests)
    (variant,) = config["ProductionVariants"]
    assert variant["InstanceType"] == instance_type
    if instance.storage == "nvme":
        assert "VolumeSizeInGB" not in variant
        assert "KmsKeyId" not in config
    else:
        assert variant["VolumeSizeInGB"] == FACTS.lmi.volumeSizeGb
        assert config["KmsKeyId"]
    assert config["DataCaptureConfig"]["KmsKeyId"]  # captured data is encrypted whatever the instance storage


@pytest.mark.parametrize(
    "deployment", [{"type": "CANARY"}, {"type": "LINEAR", "linearStepSize": 50}, {"type": "ALL_AT_ONCE"}]
)
def test_every_traffic_routing_shape_is_valid(deployment):
    assert_valid(requests_of(record(stack(huggingface_endpoint(deployment=deployment))), "nemotron-hf"))


def test_a_gated_jumpstart_model_with_a_draft_is_valid():
    raw = stack(
        jumpstart_endpoint(
            jumpstart={"modelId": GATED_ID, "version": "2.1.0", "acceptEula": True},
            instanceType="ml.p5en.48xlarge",
            timeouts={"modelDataDownload": 600, "containerStartupHealthCheck": 1200},
        ),
        snapshotDir="tests/data/jumpstart",
    )
    requests = requests_of(record(raw), "nemotron-js")
    assert_valid(requests)
    (model,) = [r.params for r in requests if r.operation == "CreateModel"]
    assert model["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]["ModelAccessConfig"] == {"AcceptEula": True}


def test_the_validation_catches_what_the_api_refuses():
    """Not a stand-in: an instance type, an AMI version or a timeout the API refuses fail validation."""
    (good,) = [
        r
        for r in requests_of(record(stack(huggingface_endpoint())), "nemotron-hf")
        if r.operation == "CreateEndpointConfig"
    ]
    variant = good.params["ProductionVariants"][0]
    for field, bad in (
        ("InstanceType", "ml.p5.96xlarge"),
        ("InferenceAmiVersion", "al2023-gpu-5"),
        ("ContainerStartupHealthCheckTimeoutInSeconds", 7200),
        ("VolumeSizeInGB", "256"),
    ):
        broken = Request(
            good.resource,
            good.service,
            good.operation,
            {**good.params, "ProductionVariants": [{**variant, field: bad}]},
        )
        assert validation_errors(broken), field


def test_prod_serves_lightning_in_the_cluster_region_with_valid_requests():
    run = rendered_stack("prod")
    (component,) = run.of_type(SAGEMAKER_ENDPOINT)
    requests = requests_of(run, component.name)
    assert_valid(requests)
    (model,) = [r.params for r in requests if r.operation == "CreateModel"]
    environment = model["PrimaryContainer"]["Environment"]
    (variant,) = endpoint_config(requests)["ProductionVariants"]
    assert "Lightning" in NVFP4
    # the recipe's minimum vLLM picks the container, which gets the recipe's arguments in its own form (the
    # model itself from local disk: prod stages its weights in S3, tests/test_sagemaker_s3_weights.py)
    expected = expected_engine_environment(NVFP4, variant["InstanceType"])
    model_variable = next(name for name, value in expected.items() if value == NVFP4)
    assert {**expected, model_variable: FACTS.lmi.s3ModelData.localPath}.items() <= environment.items()
    cluster_region = next(r.inputs["region"] for r in run.resources if r.type == "pulumi:providers:aws")
    assert model["PrimaryContainer"]["Image"].startswith(expected_image_prefix(NVFP4, cluster_region))
    instance = FACTS.sagemaker_instances[variant["InstanceType"]]
    assert instance.storage == "nvme"
    assert "VolumeSizeInGB" not in variant
    assert variant["InferenceAmiVersion"] == FACTS.lmi.inferenceAmiVersion
