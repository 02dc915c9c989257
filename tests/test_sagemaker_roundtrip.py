"""What the SageMakerEndpoint component really registers deploys through moto's IAM, KMS, S3, SageMaker,
CloudWatch and Application Auto Scaling, request by request (`sagemaker_requests.requests_of`).

botocore validates each request before moto sees it; moto then checks what it implements (existence of the
role, the config an endpoint names). The AWS rules moto does not enforce (local-NVMe storage, API ranges) are
tests/test_sagemaker_requests.py's subject, per instance type.
"""

from __future__ import annotations

import json

import boto3
import moto.sagemaker.models
import pytest
from botocore import xform_name
from moto import mock_aws
from plan_helpers import FACTS
from sagemaker_helpers import (
    GATED_ID,
    HF_TOKEN,
    NVFP4,
    REGION,
    huggingface_endpoint,
    inputs,
    jumpstart_endpoint,
    record,
    stack,
)
from sagemaker_requests import requests_of

from serving_stack.facts import sagemaker as jumpstart
from tools.mock_runtime import MOCK_ACCOUNT, MOCK_REGION

CASES = {
    "public-g6e-capture": stack(jumpstart_endpoint(dataCapture={"enabled": True})),
    "gated-p5en-draft": stack(
        jumpstart_endpoint(
            jumpstart={"modelId": GATED_ID, "version": "2.1.0", "acceptEula": True},
            instanceType="ml.p5en.48xlarge",
            deployment={"type": "LINEAR", "linearStepSize": 50},
            timeouts={"modelDataDownload": 600, "containerStartupHealthCheck": 1200},
        ),
        snapshotDir="tests/data/jumpstart",
    ),
    "huggingface-p5-token": stack(huggingface_endpoint(huggingface={"repo": NVFP4, "sendHfToken": True})),
}


@pytest.fixture
def current_gpu_instances_allowed(monkeypatch):
    """moto 5.2.5 checks CreateEndpointConfig instance types against an old list without g6e, p5 or p5en,
    which SageMaker accepts (botocore's enum has them); let the catalog's through and keep moto's check otherwise."""
    original = moto.sagemaker.models.FakeEndpointConfig.validate_instance_type

    def validate_instance_type(self, instance_type: str) -> None:
        if instance_type not in FACTS.sagemaker_instances:
            original(self, instance_type)

    monkeypatch.setattr(moto.sagemaker.models.FakeEndpointConfig, "validate_instance_type", validate_instance_type)


@pytest.fixture
def aws(current_gpu_instances_allowed, monkeypatch):
    for name in (
        jumpstart.CONTENT_BUCKET_OVERRIDE,
        jumpstart.GATED_BUCKET_OVERRIDE,
        jumpstart.MODEL_BUCKET_OVERRIDE,
        jumpstart.MANIFEST_DIR_OVERRIDE,
        jumpstart.SPECS_DIR_OVERRIDE,
    ):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)


def deploy(session, run, name: str) -> set[str]:
    """Send every resource of component `name` to moto in registration order; return the names sent."""
    real: dict[str, str] = {}  # mock identifiers -> the ones moto issued
    sent = set()
    for request in requests_of(run, name):
        text = json.dumps(request.params)
        for mock, issued in real.items():
            text = text.replace(mock, issued)
        client = session.client(request.service)
        response = getattr(client, xform_name(request.operation))(**json.loads(text))
        if request.operation == "CreateKey":
            key = response["KeyMetadata"]
            client.enable_key_rotation(KeyId=key["KeyId"])
            real[f"arn:aws:kms:{MOCK_REGION}:{MOCK_ACCOUNT}:key/{request.resource}"] = key["Arn"]
        sent.add(request.resource)
    return sent


@pytest.mark.parametrize("case", CASES)
def test_component_resources_deploy_through_every_request_shape(aws, case):
    run = record(CASES[case])
    (component,) = run.of_type("nemotron:aws:SageMakerEndpoint")
    name = component.name
    assert deploy(aws, run, name) == {r.name for r in run.resources if r.custom}  # nothing goes unchecked
    sagemaker, cloudwatch = aws.client("sagemaker"), aws.client("cloudwatch")

    container = sagemaker.describe_model(ModelName=f"{name}-model")["PrimaryContainer"]
    assert container["Image"] == inputs(run, f"{name}-model")["primaryContainer"]["image"]
    source = container.get("ModelDataSource", {}).get("S3DataSource")
    channels = [s["ChannelName"] for s in container.get("AdditionalModelDataSources", [])]
    if case == "huggingface-p5-token":
        assert source is None
        assert container["Environment"]["HF_TOKEN"] == HF_TOKEN
    else:
        assert source["S3Uri"].endswith("/")
        assert source["S3DataType"] == "S3Prefix"
        assert source.get("ModelAccessConfig") == ({"AcceptEula": True} if case == "gated-p5en-draft" else None)
    assert channels == (["draft_model"] if case == "gated-p5en-draft" else [])

    config = sagemaker.describe_endpoint_config(EndpointConfigName=f"{name}-config")
    (variant,) = config["ProductionVariants"]
    assert "VolumeSizeInGB" not in variant
    assert "KmsKeyId" not in config
    capture = config.get("DataCaptureConfig")
    assert bool(capture) == (case == "public-g6e-capture")  # moto answers {} for none
    if capture:
        assert capture["KmsKeyId"].startswith(f"arn:aws:kms:{REGION}:")  # the key moto issued, not the mock ARN
    assert sagemaker.describe_endpoint(EndpointName=name)["EndpointStatus"] == "InService"

    alarms = {a["MetricName"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    assert set(alarms) == {"Invocation5XXErrors", "ModelLatency"}
    assert all(
        {d["Name"]: d["Value"] for d in a["Dimensions"]}
        == {"EndpointName": name, "VariantName": "AllTraffic", "EndpointConfigName": f"{name}-config"}
        for a in alarms.values()
    )
    policy = aws.client("application-autoscaling").describe_scaling_policies(ServiceNamespace="sagemaker")[
        "ScalingPolicies"
    ][0]
    assert policy["ResourceId"] == f"endpoint/{name}/variant/AllTraffic"
