"""The SageMakerEndpoint component under mocks (preview=False): the exact inputs of every resource it
registers, for a JumpStart endpoint with data capture and a Hugging Face endpoint on local-NVMe instances."""
from __future__ import annotations

import json

import pytest

from sagemaker_helpers import (
    HF_TOKEN, NVFP4, PUBLIC_ID, REGION, huggingface_endpoint, inputs, jumpstart_endpoint, record, stack,
)

ENDPOINT_TYPES = {
    "aws:kms/key:Key", "aws:s3/bucket:Bucket", "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy",
    "aws:sagemaker/model:Model", "aws:sagemaker/endpointConfiguration:EndpointConfiguration",
    "aws:cloudwatch/metricAlarm:MetricAlarm", "aws:sagemaker/endpoint:Endpoint", "aws:appautoscaling/target:Target",
    "aws:appautoscaling/policy:Policy",
}
ARTIFACTS = f"jumpstart-cache-prod-{REGION}/huggingface-reasoning/{PUBLIC_ID}/artifacts/inference-prepack/v1.0.0/"


@pytest.fixture(scope="module")
def run():
    return record(stack(jumpstart_endpoint(dataCapture={"enabled": True, "samplingPercentage": 20}),
                        huggingface_endpoint(instanceType="ml.p4d.24xlarge",
                                             huggingface={"repo": NVFP4, "sendHfToken": True})))


def statements(run, name):
    return {s["Sid"]: s for s in json.loads(inputs(run, f"{name}-role-policy")["policy"])["Statement"]}


def test_children_are_named_by_role_and_parented_to_the_component(run):
    children = [r for r in run.resources if r.custom]
    assert {r.parent for r in children} == {"nemotron:aws:SageMakerEndpoint::nemotron-js",
                                            "nemotron:aws:SageMakerEndpoint::nemotron-hf"}
    assert all(r.name.startswith(r.parent.rsplit("::", 1)[1] + "-") for r in children)
    js = {r.type for r in children if r.parent.endswith("::nemotron-js")}
    assert js == ENDPOINT_TYPES
    hf = {r.type for r in children if r.parent.endswith("::nemotron-hf")}
    assert hf == ENDPOINT_TYPES - {"aws:kms/key:Key"} - {t for t in ENDPOINT_TYPES if ":s3/" in t}


def test_execution_role_is_least_privilege(run):
    role = inputs(run, "nemotron-js-role")
    assert json.loads(role["assumeRolePolicy"])["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert "managedPolicyArns" not in role
    assert not [r for r in run.resources if "Attachment" in r.type]
    js = statements(run, "nemotron-js")
    assert js["ReadModelArtifacts"]["Resource"] == [f"arn:aws:s3:::{ARTIFACTS}*"]
    assert js["ListModelArtifacts0"]["Resource"] == f"arn:aws:s3:::jumpstart-cache-prod-{REGION}"
    assert js["ListModelArtifacts0"]["Condition"] == {"StringLike": {"s3:prefix": [ARTIFACTS.split("/", 1)[1] + "*"]}}
    assert js["PullImage"]["Resource"] == f"arn:aws:ecr:{REGION}:763104351884:repository/djl-inference"
    assert js["WriteLogs"]["Resource"] == [
        f"arn:aws:logs:{REGION}:123456789012:log-group:/aws/sagemaker/Endpoints/nemotron-js",
        f"arn:aws:logs:{REGION}:123456789012:log-group:/aws/sagemaker/Endpoints/nemotron-js:*"]
    assert js["PutEndpointMetrics"]["Condition"] == {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/Endpoints"}}
    assert js["WriteCapturedData"]["Resource"] == "arn:aws:s3:::nemotron-js-capture-id/capture/*"  # bucket id = name
    wildcards = [sid for sid, s in js.items() if s["Resource"] == "*"]
    assert wildcards == ["PullImageToken", "PutEndpointMetrics"]  # neither action takes a resource ARN
    hf = statements(run, "nemotron-hf")
    assert set(hf) == {"PullImageToken", "PullImage", "WriteLogs", "PutEndpointMetrics"}  # no S3, no KMS


def test_jumpstart_model_is_the_resolved_container_with_network_isolation(run):
    model = inputs(run, "nemotron-js-model")
    container = model["primaryContainer"]
    assert container["image"] == f"763104351884.dkr.ecr.{REGION}.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"
    assert container["modelDataSource"] == {"s3DataSources": [
        {"s3Uri": f"s3://{ARTIFACTS}", "s3DataType": "S3Prefix", "compressionType": "None"}]}
    assert container["environment"]["OPTION_MAX_MODEL_LEN"] == "65536" and "HF_TOKEN" not in container["environment"]
    assert model["enableNetworkIsolation"] is True and model["region"] == REGION
    assert model["executionRoleArn"].endswith(":role/nemotron-js-role")


def test_huggingface_model_downloads_from_the_hub_with_the_token_as_a_secret(run):
    recorded = run.named("nemotron-hf-model").inputs["primaryContainer"]
    assert recorded["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"  # secret on the wire
    model = inputs(run, "nemotron-hf-model")
    environment = model["primaryContainer"]["environment"]
    assert (environment["HF_MODEL_ID"], environment["HF_TOKEN"]) == (NVFP4, HF_TOKEN)
    assert environment["OPTION_QUANTIZE"] == "modelopt_fp4"
    assert "modelDataSource" not in model["primaryContainer"] and model["enableNetworkIsolation"] is False


def test_endpoint_config_sets_timeouts_volume_routing_kms_and_capture(run):
    config = inputs(run, "nemotron-js-config")
    (variant,) = config["productionVariants"]
    assert variant == {
        "variantName": "AllTraffic", "modelName": "nemotron-js-model", "instanceType": "ml.g6e.12xlarge",
        "initialInstanceCount": 1, "modelDataDownloadTimeoutInSeconds": 1200,
        "containerStartupHealthCheckTimeoutInSeconds": 1200, "volumeSizeInGb": 256,
        "routingConfigs": [{"routingStrategy": "LEAST_OUTSTANDING_REQUESTS"}]}
    assert inputs(run, "nemotron-js-kms")["enableKeyRotation"] is True  # created: the config names no key
    assert config["kmsKeyArn"].endswith(":key/nemotron-js-kms")
    assert config["dataCaptureConfig"] == {
        "enableCapture": True, "initialSamplingPercentage": 20, "destinationS3Uri": "s3://nemotron-js-capture-id/capture",
        "kmsKeyId": config["kmsKeyArn"], "captureOptions": [{"captureMode": "Input"}, {"captureMode": "Output"}]}
    encryption = inputs(run, "nemotron-js-capture-encryption")
    assert encryption["rules"] == [{"bucketKeyEnabled": True, "applyServerSideEncryptionByDefault": {
        "sseAlgorithm": "aws:kms", "kmsMasterKeyId": config["kmsKeyArn"]}}]
    block = inputs(run, "nemotron-js-capture-public-access")
    assert all(block[k] for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"))


def test_local_nvme_variant_gets_no_volume_size_and_no_volume_key(run):
    config = inputs(run, "nemotron-hf-config")
    (variant,) = config["productionVariants"]
    assert "volumeSizeInGb" not in variant and "kmsKeyArn" not in config and "dataCaptureConfig" not in config
    assert variant["inferenceAmiVersion"] == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert (variant["modelDataDownloadTimeoutInSeconds"], variant["containerStartupHealthCheckTimeoutInSeconds"]) == (600, 1800)


def test_endpoint_deploys_blue_green_and_rolls_back_on_its_own_alarms(run):
    endpoint = inputs(run, "nemotron-js-endpoint")
    assert (endpoint["name"], endpoint["endpointConfigName"]) == ("nemotron-js", "nemotron-js-config")
    policy = endpoint["deploymentConfig"]["blueGreenUpdatePolicy"]
    assert policy == {"trafficRoutingConfiguration": {"type": "CANARY", "waitIntervalInSeconds": 600, "canarySize": {
        "type": "CAPACITY_PERCENT", "value": 10}}, "terminationWaitInSeconds": 600, "maximumExecutionTimeoutInSeconds": 3600}
    alarms = endpoint["deploymentConfig"]["autoRollbackConfiguration"]["alarms"]
    assert alarms == [{"alarmName": "nemotron-js-5xx"}, {"alarmName": "nemotron-js-p99-latency"}]
    errors, latency = inputs(run, "nemotron-js-5xx"), inputs(run, "nemotron-js-p99-latency")
    for alarm in (errors, latency):
        assert alarm["namespace"] == "AWS/SageMaker"
        assert alarm["dimensions"] == {"EndpointName": "nemotron-js", "VariantName": "AllTraffic"}
    assert (errors["metricName"], errors["statistic"], errors["threshold"]) == ("Invocation5XXErrors", "Sum", 1)
    assert (latency["metricName"], latency["extendedStatistic"], latency["threshold"]) == ("ModelLatency", "p99", 60_000_000)


def test_autoscaling_tracks_invocations_per_instance_with_a_slower_scale_in(run):
    target = inputs(run, "nemotron-js-scaling-target")
    assert target == {"serviceNamespace": "sagemaker", "scalableDimension": "sagemaker:variant:DesiredInstanceCount",
                      "resourceId": "endpoint/nemotron-js/variant/AllTraffic", "minCapacity": 1, "maxCapacity": 4,
                      "region": REGION}
    policy = inputs(run, "nemotron-js-scaling-policy")
    assert (policy["policyType"], policy["resourceId"]) == ("TargetTrackingScaling", target["resourceId"])
    assert policy["targetTrackingScalingPolicyConfiguration"] == {
        "targetValue": 4, "predefinedMetricSpecification": {"predefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
        "scaleInCooldown": 600, "scaleOutCooldown": 300, "disableScaleIn": False}


def test_a_configured_kms_key_replaces_the_created_one():
    key = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    run = record(stack(jumpstart_endpoint(kmsKeyArn=key)))
    assert not run.of_type("aws:kms/key:Key")
    assert inputs(run, "nemotron-js-config")["kmsKeyArn"] == key
