"""The `sagemaker` config, planned: a good config plans concrete values (container, variant, timeouts) and
the outputs contract entry. Bad settings are `test_sagemaker_config`."""

from __future__ import annotations

import re

import boto3
from moto import mock_aws
from plan_helpers import FACTS
from sagemaker_helpers import (
    NVFP4,
    PUBLIC_ID,
    REGION,
    expected_engine_environment,
    expected_image_prefix,
    huggingface_endpoint,
    jumpstart_endpoint,
    picked_container,
    plan,
    stack,
)

from serving_stack.contract.outputs import ServingEndpoint
from serving_stack.facts import sagemaker as jumpstart
from serving_stack.facts.sagemaker import EngineArguments
from tools.mock_runtime import PROJECT_DIR


def test_jumpstart_endpoint_plans_the_contract_entry_and_spec_defaults():
    (planned,) = plan(stack(jumpstart_endpoint(initialInstanceCount=2, dataCapture={"enabled": True})))
    assert planned.endpoint == ServingEndpoint(
        id="nemotron-js",
        kind="sagemaker",
        servedModelName=PUBLIC_ID,
        url=f"https://runtime.sagemaker.{REGION}.amazonaws.com/endpoints/nemotron-js/invocations",
        gpus=8,
        region=REGION,
        variant="AllTraffic",
        instanceType="ml.g6e.12xlarge",
        instanceCount=2,
        usdPerHour=26.2316,
    )
    variant = planned.variant
    assert (variant.model_data_download_timeout, variant.container_startup_health_check_timeout) == (1200, 1200)
    # g6e has local NVMe only: the spec's 256 GB volume is dropped (SDK volume_size_supported)
    assert (variant.volume_size_gb, variant.ebs_storage, variant.inference_ami_version) == (None, False, None)
    assert planned.container.enable_network_isolation
    assert not planned.container.needs_hf_token
    assert planned.source.provenance is None
    assert planned.tags["nemotron.nvidia.com/jumpstart-spec"] == "unverified"


def test_huggingface_endpoint_takes_the_container_the_recipe_needs_and_config_over_defaults():
    prefix = FACTS.lmi.argumentForms[picked_container(NVFP4).argumentForm].prefix
    raw = stack(
        huggingface_endpoint(
            instanceType="ml.p5en.48xlarge",
            timeouts={"containerStartupHealthCheck": 2100},
            huggingface={"repo": NVFP4, "options": {f"{prefix}MAX_MODEL_LEN": "131072"}},
        ),
        region=None,
    )
    (planned,) = plan(raw, default_region="us-east-1")  # sagemaker.region unset: the stack's aws:region
    assert planned.container.image.startswith(expected_image_prefix(NVFP4, "us-east-1"))
    environment = planned.container.environment
    assert expected_engine_environment(NVFP4, "ml.p5en.48xlarge").items() <= environment.items()
    assert environment[f"{prefix}MAX_MODEL_LEN"] == "131072"
    assert "HF_TOKEN" not in environment
    # nothing comes from S3: no model-data download timeout; the health check covers the Hub download
    assert (planned.variant.model_data_download_timeout, planned.variant.container_startup_health_check_timeout) == (
        None,
        2100,
    )
    assert planned.variant.inference_ami_version == "al2023-ami-sagemaker-inference-gpu-4-1"
    gpus = FACTS.sagemaker_instances["ml.p5en.48xlarge"].gpus * planned.config.initialInstanceCount
    assert (planned.endpoint.gpus, planned.endpoint.usdPerHour, planned.endpoint.region) == (
        gpus,
        None,
        "us-east-1",
    )


def test_local_nvme_instances_get_no_volume_size():
    (planned,) = plan(stack(huggingface_endpoint(instanceType="ml.p4d.24xlarge")))
    assert (planned.variant.volume_size_gb, planned.variant.ebs_storage) == (None, False)


def _planned_from_mirror(monkeypatch, raw):
    """`raw` planned with the snapshot's files served from an S3 bucket that the SDK's override names."""
    monkeypatch.setenv(jumpstart.CONTENT_BUCKET_OVERRIDE, "jumpstart-mirror")
    snapshot = PROJECT_DIR / "catalog" / "jumpstart"
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket="jumpstart-mirror", CreateBucketConfiguration={"LocationConstraint": REGION})
        for path in snapshot.rglob("*.json"):
            s3.put_object(Bucket="jumpstart-mirror", Key=path.relative_to(snapshot).as_posix(), Body=path.read_bytes())
        return plan(raw)


def test_the_snapshot_plans_what_its_s3_mirror_plans(monkeypatch):
    """The committed snapshot stands for S3: the same specs read from a bucket plan the same values, except where
    the specs and artifacts come from."""
    (from_snapshot,) = plan(stack(jumpstart_endpoint()))
    (from_s3,) = _planned_from_mirror(monkeypatch, stack(jumpstart_endpoint(), specSource="s3"))
    snapshot_bucket = from_snapshot.container.model_data.s3_uri.split("/")[2]
    assert from_s3.source.provenance is not None and from_snapshot.source.provenance is None
    mirrored = re.sub(r"provenance='[^']*'", "provenance=None", repr(from_s3))
    assert mirrored.replace("s3://jumpstart-mirror/", f"s3://{snapshot_bucket}/") == repr(from_snapshot)


def test_s3_spec_source_reads_the_content_bucket_override(monkeypatch):
    """`specSource: s3` resolves from the bucket the SDK's override names, and artifacts follow it."""
    (planned,) = _planned_from_mirror(monkeypatch, stack(jumpstart_endpoint(), specSource="s3"))
    assert planned.container.model_data.s3_uri.startswith("s3://jumpstart-mirror/huggingface-reasoning/")


def test_an_architecture_argument_overrides_the_common_one_of_the_same_name():
    """The recipe appends its Hopper arguments after the common ones and vLLM's parser keeps the last value;
    the container takes one environment variable per argument, so the architecture's value must replace the
    common one, not sit beside it."""
    arguments = EngineArguments(
        source="test",
        common={"--moe-backend": "marlin", "--enable-prefix-caching": None},
        byArchitecture={"hopper": {"--moe-backend": "humming"}},
    )
    assert arguments.for_architecture("hopper") == {"--moe-backend": "humming", "--enable-prefix-caching": None}
    assert arguments.for_architecture("blackwell") == {"--moe-backend": "marlin", "--enable-prefix-caching": None}
    form = FACTS.lmi.argumentForms[picked_container(NVFP4).argumentForm]
    assert form.environment_of(arguments.for_architecture("hopper")) == {
        form.variable("--moe-backend"): "humming",
        form.variable("--enable-prefix-caching"): form.flagValue,
    }


def test_the_rendered_environment_holds_the_architecture_value_of_every_overridden_argument():
    endpoint = huggingface_endpoint()
    architecture = FACTS.sagemaker_instances[endpoint["instanceType"]].gpuArchitecture
    arguments = FACTS.lmi.repositories[NVFP4].engineArguments
    form = FACTS.lmi.argumentForms[picked_container(NVFP4).argumentForm]
    (planned,) = plan(stack(endpoint))
    overridden = arguments.byArchitecture.get(architecture, {})
    for flag in set(arguments.common) & set(overridden):
        value = overridden[flag]
        assert planned.container.environment[form.variable(flag)] == (form.flagValue if value is None else value)
    assert planned.source.engine_arguments == {**arguments.common, **overridden}
