"""What the SageMakerEndpoint component really registers fits the real IAM, KMS, S3, SageMaker, CloudWatch
and Application Auto Scaling request shapes.

The component is built under mocks, and every resource it records is turned into its boto3 request (a
key-by-key rename, nothing dropped) and sent to moto. botocore validates each request against the service
model before moto sees it, so a field the stack shapes wrongly (a string timeout, a missing ChannelName, a
list where the API takes one structure) fails here rather than at `pulumi up`.
"""
from __future__ import annotations

import json

import boto3
import moto.sagemaker.models
import pytest
from moto import mock_aws

from serving_stack.facts import jumpstart
from tools.mock_runtime import MOCK_ACCOUNT, MOCK_REGION
from sagemaker_helpers import (
    GATED_ID, HF_TOKEN, NVFP4, REGION, api_request, huggingface_endpoint, inputs, jumpstart_endpoint, record, stack,
)

CASES = {
    "public-g6e-capture": stack(jumpstart_endpoint(dataCapture={"enabled": True})),
    "gated-p5en-draft": stack(jumpstart_endpoint(jumpstart={"modelId": GATED_ID, "version": "2.1.0", "acceptEula": True},
                                                 instanceType="ml.p5en.48xlarge", deployment={"type": "LINEAR"}),
                              snapshotDir="tests/data/jumpstart"),
    "huggingface-p5-token": stack(huggingface_endpoint(huggingface={"repo": NVFP4, "sendHfToken": True})),
}


@pytest.fixture
def current_gpu_instances_allowed(monkeypatch):
    """moto 5.2.5 checks CreateEndpointConfig instance types against an old list without g6e, p5 or p5en,
    which SageMaker accepts; let exactly those through and keep moto's check otherwise."""
    original = moto.sagemaker.models.FakeEndpointConfig.validate_instance_type
    allowed = {"ml.g6e.12xlarge", "ml.p5.48xlarge", "ml.p5en.48xlarge"}

    def validate_instance_type(self, instance_type: str) -> None:
        if instance_type not in allowed:
            original(self, instance_type)

    monkeypatch.setattr(moto.sagemaker.models.FakeEndpointConfig, "validate_instance_type", validate_instance_type)


@pytest.fixture
def aws(current_gpu_instances_allowed, monkeypatch):
    for name in (jumpstart.CONTENT_BUCKET_OVERRIDE, jumpstart.GATED_BUCKET_OVERRIDE, jumpstart.MODEL_BUCKET_OVERRIDE,
                 jumpstart.MANIFEST_DIR_OVERRIDE, jumpstart.SPECS_DIR_OVERRIDE):
        monkeypatch.delenv(name, raising=False)
    with mock_aws():
        yield boto3.session.Session(region_name=REGION)


def deploy(session, run, name: str) -> set[str]:
    """Send every resource of component `name` to moto in dependency order; return the names sent."""
    iam, kms, s3 = session.client("iam"), session.client("kms"), session.client("s3")
    sagemaker, cloudwatch = session.client("sagemaker"), session.client("cloudwatch")
    autoscaling = session.client("application-autoscaling")
    present = {r.name for r in run.resources if r.custom}
    real: dict[str, str] = {}  # mock identifiers -> the ones moto issued

    def request(resource: str) -> dict:
        text = json.dumps(api_request(run, resource))
        for mock, issued in real.items():
            text = text.replace(mock, issued)
        return json.loads(text)

    def mock_arn(service: str, kind: str, resource: str) -> str:
        return f"arn:aws:{service}:{MOCK_REGION}:{MOCK_ACCOUNT}:{kind}/{resource}"

    role = f"{name}-role"
    real[mock_arn("iam", "role", role)] = iam.create_role(
        RoleName=role, AssumeRolePolicyDocument=inputs(run, role)["assumeRolePolicy"],
        Description=inputs(run, role)["description"])["Role"]["Arn"]
    iam.put_role_policy(RoleName=role, PolicyName=f"{name}-role-policy",
                        PolicyDocument=inputs(run, f"{name}-role-policy")["policy"])
    if f"{name}-kms" in present:
        key = kms.create_key(Description=inputs(run, f"{name}-kms")["description"])["KeyMetadata"]
        kms.enable_key_rotation(KeyId=key["KeyId"])
        real[mock_arn("kms", "key", f"{name}-kms")] = key["Arn"]
    if f"{name}-capture" in present:
        bucket = f"{name}-capture-id"
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": request(f"{name}-capture-encryption")["Rules"]})
        block = request(f"{name}-capture-public-access")
        s3.put_public_access_block(Bucket=block.pop("Bucket"), PublicAccessBlockConfiguration=block)
    sagemaker.create_model(ModelName=f"{name}-model", **request(f"{name}-model"))
    sagemaker.create_endpoint_config(EndpointConfigName=f"{name}-config", **request(f"{name}-config"))
    for alarm in (f"{name}-5xx", f"{name}-p99-latency"):
        cloudwatch.put_metric_alarm(AlarmName=inputs(run, alarm)["name"], **request(alarm))
    sagemaker.create_endpoint(EndpointName=inputs(run, f"{name}-endpoint")["name"], **request(f"{name}-endpoint"))
    autoscaling.register_scalable_target(**request(f"{name}-scaling-target"))
    autoscaling.put_scaling_policy(PolicyName=inputs(run, f"{name}-scaling-policy")["name"],
                                   **request(f"{name}-scaling-policy"))
    return present


@pytest.mark.parametrize("case", CASES)
def test_component_resources_deploy_through_every_request_shape(aws, case):
    run = record(CASES[case])
    (component,) = run.of_type("nemotron:aws:SageMakerEndpoint")
    name = component.name
    sent = deploy(aws, run, name)
    assert sent == {r.name for r in run.resources if r.custom}  # nothing the component creates goes unchecked
    sagemaker, cloudwatch = aws.client("sagemaker"), aws.client("cloudwatch")

    model = inputs(run, f"{name}-model")["primaryContainer"]
    container = sagemaker.describe_model(ModelName=f"{name}-model")["PrimaryContainer"]
    assert (container["Image"], container["Environment"]) == (model["image"], model["environment"])
    source = container.get("ModelDataSource", {}).get("S3DataSource")
    channels = [s["ChannelName"] for s in container.get("AdditionalModelDataSources", [])]
    if case == "huggingface-p5-token":
        assert source is None and container["Environment"]["HF_TOKEN"] == HF_TOKEN
    else:
        assert source["S3Uri"].endswith("/") and source["S3DataType"] == "S3Prefix"
        assert source.get("ModelAccessConfig") == ({"AcceptEula": True} if case == "gated-p5en-draft" else None)
    assert channels == (["draft_model"] if case == "gated-p5en-draft" else [])

    config = sagemaker.describe_endpoint_config(EndpointConfigName=f"{name}-config")
    (variant,) = config["ProductionVariants"]
    planned = inputs(run, f"{name}-config")["productionVariants"][0]
    assert variant["ModelDataDownloadTimeoutInSeconds"] == planned["modelDataDownloadTimeoutInSeconds"]
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == planned["containerStartupHealthCheckTimeoutInSeconds"]
    assert variant["VolumeSizeInGB"] == planned["volumeSizeInGb"]
    assert config["KmsKeyId"].startswith(f"arn:aws:kms:{REGION}:")  # the key moto issued, not the mock ARN
    assert bool(config.get("DataCaptureConfig")) == (case == "public-g6e-capture")  # moto answers {} for none
    assert sagemaker.describe_endpoint(EndpointName=name)["EndpointStatus"] == "InService"

    alarms = {a["MetricName"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    assert set(alarms) == {"Invocation5XXErrors", "ModelLatency"}
    assert all({d["Name"]: d["Value"] for d in a["Dimensions"]} == {"EndpointName": name, "VariantName": "AllTraffic"}
               for a in alarms.values())
    policy = aws.client("application-autoscaling").describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"][0]
    assert policy["ResourceId"] == f"endpoint/{name}/variant/AllTraffic"
    assert policy["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"}
