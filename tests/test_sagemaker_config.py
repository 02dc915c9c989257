"""The `sagemaker` config: bad settings stop with one line naming the key path (in parsing or planning, both
before any resource exists), and a good config plans concrete values and the outputs contract entry."""
from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from serving_stack.facts import jumpstart
from serving_stack.config import ConfigError, parse_stack_config
from tools.mock_runtime import PROJECT_DIR, run_program
from serving_stack.contract.outputs import ServingEndpoint
from sagemaker_helpers import GATED_ID, NVFP4, PUBLIC_ID, REGION, huggingface_endpoint, jumpstart_endpoint, plan, stack
from stack_helpers import BASE_CONFIG, run_config

E0 = "sagemaker.endpoints[0]"
GATED = {"jumpstart": {"modelId": GATED_ID, "version": "2.1.0"}}

BAD_CONFIGS = {
    "unknown model id": (stack(jumpstart_endpoint(jumpstart={"modelId": "nvidia-nemotron-3-5-lightning", "version": "1.0.0"})),
                         f"{E0}.jumpstart.modelId: unknown JumpStart model id 'nvidia-nemotron-3-5-lightning'"),
    "unpinned version": (stack(jumpstart_endpoint(jumpstart={"modelId": PUBLIC_ID, "version": "*"})),
                         f"{E0}.jumpstart.version: '*' is not pinned; pin a version; allowed: 1.0.0"),
    "instance type not in the catalog": (stack(jumpstart_endpoint(instanceType="ml.g5.12xlarge")),
                                         f"{E0}.instanceType: unsupported instance type 'ml.g5.12xlarge'; allowed: ml.g6e.2xlarge"),
    "instance type the model does not support": (
        stack(jumpstart_endpoint(instanceType="ml.p4d.24xlarge")),
        f"{E0}.instanceType: {PUBLIC_ID} 1.0.0 does not support 'ml.p4d.24xlarge'; allowed: ml.g6e.12xlarge"),
    "gated without acceptEula": (stack(jumpstart_endpoint(**GATED), snapshotDir="tests/data/jumpstart"),
                                 f"{E0}.jumpstart.acceptEula: {GATED_ID} 2.1.0 is gated and needs its EULA accepted"),
    "timeout below 60": (stack(jumpstart_endpoint(timeouts={"modelDataDownload": 30})),
                         f"{E0}.timeouts.modelDataDownload: Input should be greater than or equal to 60 (got 30)"),
    "timeout above 3600": (stack(jumpstart_endpoint(timeouts={"containerStartupHealthCheck": 7200})),
                           f"{E0}.timeouts.containerStartupHealthCheck: Input should be less than or equal to 3600"),
    "min above max capacity": (stack(jumpstart_endpoint(autoscaling={"minCapacity": 3, "maxCapacity": 2, "targetInvocationsPerInstance": 4})),
                               f"{E0}.autoscaling.minCapacity: 3 is greater than maxCapacity 2"),
    "initial count outside min..max": (stack(jumpstart_endpoint(initialInstanceCount=5)),
                                       f"{E0}.initialInstanceCount: 5 is outside autoscaling; allowed: 1..4"),
    "scale-in cooldown not longer": (stack(jumpstart_endpoint(autoscaling={"maxCapacity": 2, "targetInvocationsPerInstance": 4, "scaleInCooldown": 300})),
                                     f"{E0}.autoscaling.scaleInCooldown: 300 s is not longer than scaleOutCooldown 300 s"),
    "unknown Hugging Face repo": (stack(huggingface_endpoint(huggingface={"repo": "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-FP8"})),
                                  f"{E0}.huggingface.repo: unsupported checkpoint 'nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-FP8'; allowed: {NVFP4}"),
    "token as an LMI option": (stack(huggingface_endpoint(huggingface={"repo": NVFP4, "options": {"HF_TOKEN": "x"}})),
                               f"{E0}.huggingface.options.HF_TOKEN: not an LMI container setting"),
    "unpinned LMI image": (stack(huggingface_endpoint(huggingface={"repo": NVFP4, "lmiImage": "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:latest"})),
                           f"{E0}.huggingface.lmiImage: must be an ECR image pinned by a tag other than 'latest'"),
    "no LMI image in the region": (stack(huggingface_endpoint(), region="ap-south-2"),
                                   f"{E0}.huggingface.lmiImage: no pinned LMI image for 'ap-south-2' in catalog/sagemaker_lmi.yaml"),
    "LMI image from another region": (
        stack(huggingface_endpoint(huggingface={"repo": NVFP4, "lmiImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi25.0.0-cu130"})),
        f"{E0}.huggingface.lmiImage: '763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi25.0.0-cu130' is in us-east-1"),
    "source block missing": (stack(jumpstart_endpoint(source="huggingface")), f"{E0}.huggingface: required when source is huggingface"),
    "duplicate endpoint name": (stack(jumpstart_endpoint(), huggingface_endpoint(name="nemotron-js")),
                                "sagemaker.endpoints[1].name: endpoint name 'nemotron-js' is used twice"),
    "name too long for derived names": (stack(jumpstart_endpoint(name="n" * 48)), f"{E0}.name: must be an endpoint name"),
    "volume size on NVMe-only storage": (stack(huggingface_endpoint(instanceType="ml.p4d.24xlarge", volumeSizeGb=512)),
                                         f"{E0}.volumeSizeGb: ml.p4d.24xlarge has local NVMe storage only"),
    "no region": (stack(jumpstart_endpoint(), region=None), "sagemaker.region: no region for the SageMaker endpoints"),
    "snapshot directory missing": (stack(jumpstart_endpoint(), snapshotDir="catalog/jumpstart-nope"),
                                   "sagemaker.snapshotDir: 'catalog/jumpstart-nope' is not a directory of the project"),
    "canary above half the fleet": (stack(jumpstart_endpoint(deployment={"canarySize": 60})),
                                    f"{E0}.deployment.canarySize: Input should be less than or equal to 50"),
}


@pytest.fixture(autouse=True)
def no_bucket_overrides(monkeypatch):
    for name in (jumpstart.MANIFEST_DIR_OVERRIDE, jumpstart.SPECS_DIR_OVERRIDE, jumpstart.CONTENT_BUCKET_OVERRIDE,
                 jumpstart.GATED_BUCKET_OVERRIDE, jumpstart.MODEL_BUCKET_OVERRIDE):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_names_the_key_path(case):
    raw, expected = BAD_CONFIGS[case]
    with pytest.raises(ConfigError) as raised:
        plan(raw)  # parse_stack_config, then the plan: both pure, before any resource
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_every_bad_endpoint_is_reported_at_once():
    raw = stack(jumpstart_endpoint(initialInstanceCount=9), huggingface_endpoint(instanceType="ml.x1.32xlarge"))
    with pytest.raises(ConfigError) as raised:
        plan(raw)
    assert str(raised.value).count(" | ") == 1
    assert "sagemaker.endpoints[1].instanceType: unsupported instance type 'ml.x1.32xlarge'" in str(raised.value)


def test_bad_sagemaker_config_stops_the_program_before_any_resource():
    with pytest.raises(ConfigError, match=r"^sagemaker\.endpoints\[0\]\.autoscaling\.minCapacity"):
        run_config({**BASE_CONFIG, "sagemaker": stack(jumpstart_endpoint(autoscaling={
            "minCapacity": 5, "maxCapacity": 2, "targetInvocationsPerInstance": 4}))["sagemaker"]})
    assert run_program.last_monitor.recorded == []


def test_jumpstart_endpoint_plans_the_contract_entry_and_spec_defaults():
    (planned,) = plan(stack(jumpstart_endpoint(initialInstanceCount=2, dataCapture={"enabled": True})))
    assert planned.endpoint == ServingEndpoint(
        id="nemotron-js", kind="sagemaker", servedModelName=PUBLIC_ID,
        url=f"https://runtime.sagemaker.{REGION}.amazonaws.com/endpoints/nemotron-js/invocations", gpus=8,
        region=REGION, variant="AllTraffic", instanceType="ml.g6e.12xlarge", instanceCount=2, costPerHourUsd=26.2316)
    variant = planned.variant
    assert (variant.model_data_download_timeout, variant.container_startup_health_check_timeout) == (1200, 1200)
    assert (variant.volume_size_gb, variant.ebs_storage, variant.inference_ami_version) == (256, True, None)
    assert planned.container.enable_network_isolation and not planned.container.needs_hf_token


def test_huggingface_endpoint_takes_the_pinned_lmi_image_and_config_over_defaults():
    raw = stack(huggingface_endpoint(instanceType="ml.p5en.48xlarge", timeouts={"containerStartupHealthCheck": 3600},
                                     huggingface={"repo": NVFP4, "options": {"OPTION_MAX_MODEL_LEN": "131072"}}),
                region=None)
    (planned,) = plan(raw, default_region="us-east-1")  # sagemaker.region unset: the stack's aws:region
    assert planned.container.image == "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi25.0.0-cu130"
    environment = planned.container.environment
    assert (environment["HF_MODEL_ID"], environment["OPTION_QUANTIZE"]) == (NVFP4, "modelopt_fp4")
    assert environment["OPTION_MAX_MODEL_LEN"] == "131072" and "HF_TOKEN" not in environment
    assert (planned.variant.model_data_download_timeout, planned.variant.container_startup_health_check_timeout) == (600, 3600)
    assert planned.variant.inference_ami_version == "al2023-ami-sagemaker-inference-gpu-4-1"
    assert (planned.endpoint.gpus, planned.endpoint.costPerHourUsd, planned.endpoint.region) == (8, None, "us-east-1")


def test_local_nvme_instances_get_no_volume_size():
    (planned,) = plan(stack(huggingface_endpoint(instanceType="ml.p4d.24xlarge")))
    assert (planned.variant.volume_size_gb, planned.variant.ebs_storage) == (None, False)


def test_the_snapshot_plans_the_same_values_twice():
    raw = stack(jumpstart_endpoint(), huggingface_endpoint())
    assert plan(raw) == plan(raw)


def test_s3_spec_source_reads_the_content_bucket_override(monkeypatch):
    """`specSource: s3` resolves from the bucket the SDK's override names, and artifacts follow it."""
    monkeypatch.setenv(jumpstart.CONTENT_BUCKET_OVERRIDE, "jumpstart-mirror")
    snapshot = PROJECT_DIR / "catalog" / "jumpstart"
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="jumpstart-mirror", CreateBucketConfiguration={"LocationConstraint": REGION})
        for path in snapshot.rglob("*.json"):
            s3.put_object(Bucket="jumpstart-mirror", Key=path.relative_to(snapshot).as_posix(), Body=path.read_bytes())
        (planned,) = plan(stack(jumpstart_endpoint(), specSource="s3"))
    assert planned.container.model_data.s3_uri.startswith("s3://jumpstart-mirror/huggingface-reasoning/")
