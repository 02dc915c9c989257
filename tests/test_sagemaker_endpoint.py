"""The SageMakerEndpoint component under mocks (preview=False): the exact inputs and options of every resource
it registers, for a JumpStart endpoint with data capture and a Hugging Face endpoint sending the token."""

from __future__ import annotations

import json

import pytest
from plan_helpers import FACTS
from sagemaker_helpers import (
    HF_TOKEN,
    NVFP4,
    PUBLIC_ID,
    REGION,
    autoscaling,
    huggingface_endpoint,
    inputs,
    jumpstart_endpoint,
    record,
    stack,
)

from tools.mock_runtime import MOCK_ACCOUNT, MOCK_REGION

ENDPOINT_TYPES = {
    "aws:kms/key:Key",
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:sagemaker/model:Model",
    "aws:sagemaker/endpointConfiguration:EndpointConfiguration",
    "aws:cloudwatch/metricAlarm:MetricAlarm",
    "aws:sagemaker/endpoint:Endpoint",
    "aws:appautoscaling/target:Target",
    "aws:appautoscaling/policy:Policy",
}
ARTIFACTS = f"jumpstart-cache-prod-{REGION}/huggingface-reasoning/{PUBLIC_ID}/artifacts/inference-prepack/v1.0.0/"


@pytest.fixture(scope="module")
def run():
    return record(
        stack(
            jumpstart_endpoint(dataCapture={"enabled": True, "samplingPercentage": 20}),
            huggingface_endpoint(instanceType="ml.p4d.24xlarge", huggingface={"repo": NVFP4, "sendHfToken": True}),
        )
    )


def statements(run, name, policy="role-policy"):
    return {s["Sid"]: s for s in json.loads(inputs(run, f"{name}-{policy}")["policy"])["Statement"]}


def test_children_are_named_by_role_and_parented_to_the_component(run):
    children = [r for r in run.resources if r.custom]
    assert {r.parent for r in children} == {
        "nemotron:aws:SageMakerEndpoint::nemotron-js",
        "nemotron:aws:SageMakerEndpoint::nemotron-hf",
    }
    assert all(r.name.startswith(r.parent.rsplit("::", 1)[1] + "-") for r in children)
    js = {r.type for r in children if r.parent.endswith("::nemotron-js")}
    assert js == ENDPOINT_TYPES
    hf = {r.type for r in children if r.parent.endswith("::nemotron-hf")}
    assert hf == ENDPOINT_TYPES - {"aws:kms/key:Key"} - {t for t in ENDPOINT_TYPES if ":s3/" in t}


def test_trust_policy_is_the_documented_source_arn_of_this_account_and_region(run):
    """SageMaker inference's confused-deputy condition, in the one form AWS documents (`*` literal, no
    endpoint ARN, no aws:SourceAccount): components/sagemaker_iam.py `trust_policy`."""
    for name in ("nemotron-js", "nemotron-hf"):
        (statement,) = json.loads(inputs(run, f"{name}-role")["assumeRolePolicy"])["Statement"]
        assert statement["Principal"] == {"Service": "sagemaker.amazonaws.com"}
        assert statement["Action"] == "sts:AssumeRole"
        assert statement["Condition"] == {"ArnLike": {"aws:SourceArn": f"arn:aws:sagemaker:{REGION}:{MOCK_ACCOUNT}:*"}}


def test_execution_role_is_least_privilege(run):
    assert "managedPolicyArns" not in inputs(run, "nemotron-js-role")
    assert not [r for r in run.resources if "Attachment" in r.type]
    js = statements(run, "nemotron-js")
    assert js["ReadModelArtifacts"]["Resource"] == [f"arn:aws:s3:::{ARTIFACTS}*"]
    assert js["ListModelArtifacts0"]["Condition"] == {"StringLike": {"s3:prefix": [ARTIFACTS.split("/", 1)[1] + "*"]}}
    assert js["PullImage"]["Resource"] == f"arn:aws:ecr:{REGION}:763104351884:repository/djl-inference"
    assert js["WriteCapturedData"]["Resource"] == "arn:aws:s3:::nemotron-js-capture-id/capture/*"  # bucket id = name
    assert [sid for sid, s in js.items() if s["Resource"] == "*"] == ["PullImageToken", "PutEndpointMetrics"]
    assert set(statements(run, "nemotron-hf")) == {"PullImageToken", "PullImage", "WriteLogs", "PutEndpointMetrics"}


def test_rollback_can_read_exactly_its_alarms(run):
    (statement,) = statements(run, "nemotron-js", "rollback-policy").values()
    assert statement["Action"] == "cloudwatch:DescribeAlarms"
    # the alarms' own ARNs (outputs; the mock issues them in its region)
    assert statement["Resource"] == [
        f"arn:aws:cloudwatch:{MOCK_REGION}:{MOCK_ACCOUNT}:alarm:nemotron-js-{alarm}" for alarm in ("5xx", "p99-latency")
    ]
    endpoint = run.named("nemotron-js-endpoint")
    assert any(d.endswith("::nemotron-js-rollback-policy") for d in endpoint.depends_on)


def test_models_and_configs_outlive_a_rolled_back_replacement(run):
    for name in ("nemotron-js-model", "nemotron-js-config", "nemotron-hf-model", "nemotron-hf-config"):
        assert run.named(name).retain_on_delete, name
    assert not run.named("nemotron-js-endpoint").retain_on_delete


def test_captured_data_and_its_key_are_retained_and_one_per_bucket_settings_replace_first(run):
    assert run.named("nemotron-js-capture").retain_on_delete
    assert run.named("nemotron-js-kms").retain_on_delete
    # One setting per bucket: a change of the same bucket's encryption replaces it, deleting the old first; the
    # public-access block is replaced only with a new bucket.
    assert run.named("nemotron-js-capture-encryption").delete_before_replace
    assert not run.named("nemotron-js-capture-public-access").delete_before_replace
    encryption = inputs(run, "nemotron-js-capture-encryption")
    assert encryption["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"


def test_jumpstart_model_is_the_resolved_container_tagged_with_its_provenance(run):
    model = inputs(run, "nemotron-js-model")
    container = model["primaryContainer"]
    assert container["modelDataSource"] == {
        "s3DataSources": [{"s3Uri": f"s3://{ARTIFACTS}", "s3DataType": "S3Prefix", "compressionType": "None"}]
    }
    assert model["enableNetworkIsolation"] is True
    assert model["region"] == REGION
    assert model["tags"]["nemotron.nvidia.com/jumpstart-spec"] == "unverified"
    assert inputs(run, "nemotron-js-endpoint")["tags"] == model["tags"] == inputs(run, "nemotron-js-config")["tags"]


def test_huggingface_model_downloads_from_the_hub_with_the_token_as_a_secret(run):
    recorded = run.named("nemotron-hf-model").inputs["primaryContainer"]
    assert recorded["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"  # secret on the wire
    model = inputs(run, "nemotron-hf-model")
    environment = model["primaryContainer"]["environment"]
    assert environment["HF_TOKEN"] == HF_TOKEN
    assert NVFP4 in environment.values()
    assert "modelDataSource" not in model["primaryContainer"]
    assert model["enableNetworkIsolation"] is False
    assert model["tags"]["nemotron.nvidia.com/precision"] == FACTS.lmi.repositories[NVFP4].runsAs.path


def test_local_nvme_variants_get_no_volume_size_and_no_volume_key(run):
    for name in ("nemotron-js", "nemotron-hf"):
        config = inputs(run, f"{name}-config")
        (variant,) = config["productionVariants"]
        assert "volumeSizeInGb" not in variant, name
        assert "kmsKeyArn" not in config, name
    capture = inputs(run, "nemotron-js-config")["dataCaptureConfig"]
    assert capture["kmsKeyId"].endswith(":key/nemotron-js-kms")  # captured data is still KMS-encrypted
    (hf_variant,) = inputs(run, "nemotron-hf-config")["productionVariants"]
    assert "modelDataDownloadTimeoutInSeconds" not in hf_variant  # nothing comes from S3
    assert hf_variant["containerStartupHealthCheckTimeoutInSeconds"] == 1800


def test_endpoint_deploys_blue_green_and_rolls_back_on_new_fleet_alarms(run):
    endpoint = inputs(run, "nemotron-js-endpoint")
    assert (endpoint["name"], endpoint["endpointConfigName"]) == ("nemotron-js", "nemotron-js-config")
    assert endpoint["deploymentConfig"]["blueGreenUpdatePolicy"] == {
        "trafficRoutingConfiguration": {"type": "ALL_AT_ONCE", "waitIntervalInSeconds": 300},
        "terminationWaitInSeconds": 300,
        "maximumExecutionTimeoutInSeconds": 3600,
    }
    hf_routing = inputs(run, "nemotron-hf-endpoint")["deploymentConfig"]["blueGreenUpdatePolicy"][
        "trafficRoutingConfiguration"
    ]
    assert hf_routing == {
        "type": "CANARY",
        "waitIntervalInSeconds": 300,
        "canarySize": {"type": "CAPACITY_PERCENT", "value": 10},
    }
    alarms = endpoint["deploymentConfig"]["autoRollbackConfiguration"]["alarms"]
    assert alarms == [{"alarmName": "nemotron-js-5xx"}, {"alarmName": "nemotron-js-p99-latency"}]
    for alarm in (inputs(run, "nemotron-js-5xx"), inputs(run, "nemotron-js-p99-latency")):
        assert alarm["dimensions"] == {
            "EndpointName": "nemotron-js",
            "VariantName": "AllTraffic",
            "EndpointConfigName": "nemotron-js-config",
        }


def test_autoscaling_tracks_invocations_and_can_be_switched_off():
    target = inputs(record(stack(jumpstart_endpoint())), "nemotron-js-scaling-target")
    assert (target["resourceId"], target["minCapacity"], target["maxCapacity"]) == (
        "endpoint/nemotron-js/variant/AllTraffic",
        1,
        4,
    )
    off = record(stack(jumpstart_endpoint(autoscaling=autoscaling("ml.g6e.12xlarge", enabled=False))))
    assert not off.of_type("aws:appautoscaling/target:Target")
    assert not off.of_type("aws:appautoscaling/policy:Policy")
