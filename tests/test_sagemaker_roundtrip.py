"""Resolved JumpStart values fit the real SageMaker, Application Auto Scaling and CloudWatch request shapes.

botocore validates every request against the service model before moto sees it, so a field the resolver
shapes wrongly (a string timeout, a missing ChannelName) fails here rather than at `pulumi up`.
"""
from __future__ import annotations

import json
from pathlib import Path

import boto3
import moto.sagemaker.models
import pytest
from moto import mock_aws

from nemotron import jumpstart
from nemotron.jumpstart import ResolvedJumpStartModel, S3ModelData, SnapshotSpecSource, resolve_jumpstart_model

REPO = Path(__file__).resolve().parent.parent
REGION = "us-west-2"
VARIANT = "AllTraffic"
CASES = {
    "public-g6e": ("huggingface-reasoning-nvidia-nemotron-3-nano-30b-a3b-bf16", "1.0.0", "ml.g6e.12xlarge",
                   REPO / "catalog" / "jumpstart"),
    "gated-p5en-draft": ("test-gated-nemotron-shaped", "2.1.0", "ml.p5en.48xlarge",
                         REPO / "tests" / "data" / "jumpstart"),
}


@pytest.fixture
def current_gpu_instances_allowed(monkeypatch):
    """moto 5.2.5 checks CreateEndpointConfig instance types against an old list without g6e, p5 or p5en,
    which SageMaker accepts; let exactly the spec's instance types through and keep moto's check otherwise."""
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


def s3_data_source(data: S3ModelData) -> dict:
    source = {"S3Uri": data.s3_uri, "S3DataType": data.s3_data_type, "CompressionType": data.compression_type}
    if data.accept_eula is not None:
        source["ModelAccessConfig"] = {"AcceptEula": data.accept_eula}
    return source


def requests(model: ResolvedJumpStartModel, name: str, role_arn: str, kms_key: str) -> dict[str, dict]:
    """The calls the SageMakerEndpoint component will make, built from nothing but the resolved fields."""
    dimensions = [{"Name": "EndpointName", "Value": name}, {"Name": "VariantName", "Value": VARIANT}]
    alarm = {"Namespace": "AWS/SageMaker", "Dimensions": dimensions, "Period": 60, "EvaluationPeriods": 3,
             "ComparisonOperator": "GreaterThanOrEqualToThreshold", "TreatMissingData": "notBreaching"}
    target = {"ServiceNamespace": "sagemaker", "ResourceId": f"endpoint/{name}/variant/{VARIANT}",
              "ScalableDimension": "sagemaker:variant:DesiredInstanceCount"}
    variant = {"VariantName": VARIANT, "ModelName": name, "InstanceType": model.instance_type,
               "InitialInstanceCount": 1, "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
               "ModelDataDownloadTimeoutInSeconds": model.model_data_download_timeout,
               "ContainerStartupHealthCheckTimeoutInSeconds": model.container_startup_health_check_timeout}
    if model.volume_size_gb is not None:
        variant["VolumeSizeInGB"] = model.volume_size_gb
    container = {"Image": model.image_uri, "Environment": dict(model.environment),
                 "ModelDataSource": {"S3DataSource": s3_data_source(model.model_data_source)}}
    if model.additional_model_data_sources:
        container["AdditionalModelDataSources"] = [
            {"ChannelName": source.channel_name, "S3DataSource": s3_data_source(source.s3)}
            for source in model.additional_model_data_sources]
    return {
        "model": {"ModelName": name, "ExecutionRoleArn": role_arn, "PrimaryContainer": container,
                  "EnableNetworkIsolation": model.enable_network_isolation},
        "config": {"EndpointConfigName": name, "ProductionVariants": [variant], "KmsKeyId": kms_key,
                   "DataCaptureConfig": {"EnableCapture": True, "InitialSamplingPercentage": 5,
                                         "DestinationS3Uri": f"s3://{name}-capture/", "KmsKeyId": kms_key,
                                         "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}]}},
        "errors_alarm": {**alarm, "AlarmName": f"{name}-5xx", "MetricName": "Invocation5XXErrors",
                         "Statistic": "Sum", "Threshold": 1.0},
        "latency_alarm": {**alarm, "AlarmName": f"{name}-p99-latency", "MetricName": "ModelLatency",
                          "ExtendedStatistic": "p99", "Threshold": 60_000_000.0},  # microseconds
        "endpoint": {"EndpointName": name, "EndpointConfigName": name, "DeploymentConfig": {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "CANARY", "WaitIntervalInSeconds": 600,
                                                "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 10}},
                "TerminationWaitInSeconds": 600, "MaximumExecutionTimeoutInSeconds": 3600},
            "AutoRollbackConfiguration": {
                "Alarms": [{"AlarmName": f"{name}-5xx"}, {"AlarmName": f"{name}-p99-latency"}]}}},
        "target": {**target, "MinCapacity": 1, "MaxCapacity": 4},
        "policy": {**target, "PolicyName": f"{name}-invocations", "PolicyType": "TargetTrackingScaling",
                   "TargetTrackingScalingPolicyConfiguration": {
                       "TargetValue": 4.0, "ScaleInCooldown": 600, "ScaleOutCooldown": 300,
                       "PredefinedMetricSpecification": {
                           "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"}}},
    }


@pytest.mark.parametrize("case", CASES)
def test_resolved_model_deploys_through_every_request_shape(aws, case):
    model_id, version, instance_type, snapshot = CASES[case]
    model = resolve_jumpstart_model(model_id, version, REGION, instance_type,
                                    accept_eula=True, source=SnapshotSpecSource(snapshot))
    role = aws.client("iam").create_role(RoleName="nemotron-sagemaker", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "sagemaker.amazonaws.com"}}]}))["Role"]
    kms_key = aws.client("kms").create_key(Description="endpoint volumes and capture")["KeyMetadata"]["Arn"]
    sagemaker, cloudwatch = aws.client("sagemaker"), aws.client("cloudwatch")
    autoscaling = aws.client("application-autoscaling")
    calls = requests(model, "nemotron-jumpstart", role["Arn"], kms_key)

    sagemaker.create_model(**calls["model"])  # moto reports EnableNetworkIsolation False whatever is sent
    sagemaker.create_endpoint_config(**calls["config"])
    cloudwatch.put_metric_alarm(**calls["errors_alarm"])
    cloudwatch.put_metric_alarm(**calls["latency_alarm"])
    sagemaker.create_endpoint(**calls["endpoint"])  # moto drops DeploymentConfig; botocore checked its shape
    autoscaling.register_scalable_target(**calls["target"])
    autoscaling.put_scaling_policy(**calls["policy"])

    container = sagemaker.describe_model(ModelName="nemotron-jumpstart")["PrimaryContainer"]
    assert container["Image"] == model.image_uri
    assert container["Environment"] == dict(model.environment)
    source = container["ModelDataSource"]["S3DataSource"]
    assert source["S3Uri"].endswith("/") and source["S3DataType"] == "S3Prefix"
    assert source.get("ModelAccessConfig") == ({"AcceptEula": True} if model.gated else None)
    channels = [s["ChannelName"] for s in container.get("AdditionalModelDataSources", [])]
    assert channels == ([] if case == "public-g6e" else ["draft_model"])

    variant = sagemaker.describe_endpoint_config(EndpointConfigName="nemotron-jumpstart")["ProductionVariants"][0]
    assert (variant["InstanceType"], variant["VolumeSizeInGB"]) == (instance_type, model.volume_size_gb)
    assert variant["ModelDataDownloadTimeoutInSeconds"] == model.model_data_download_timeout
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == model.container_startup_health_check_timeout
    assert sagemaker.describe_endpoint(EndpointName="nemotron-jumpstart")["EndpointStatus"] == "InService"

    alarms = {a["MetricName"]: a for a in cloudwatch.describe_alarms()["MetricAlarms"]}
    assert set(alarms) == {"Invocation5XXErrors", "ModelLatency"}
    assert alarms["ModelLatency"]["ExtendedStatistic"] == "p99"
    assert all({d["Name"] for d in a["Dimensions"]} == {"EndpointName", "VariantName"} for a in alarms.values())
    policy = autoscaling.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"][0]
    assert policy["ResourceId"] == "endpoint/nemotron-jumpstart/variant/AllTraffic"
    assert policy["TargetTrackingScalingPolicyConfiguration"]["PredefinedMetricSpecification"] == {
        "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"}
