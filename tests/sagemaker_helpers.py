"""SageMaker endpoint configs as data, planned and built under Pulumi mocks, and the recorded resource inputs
turned into the boto3 requests SageMaker, IAM, KMS, S3, CloudWatch and Application Auto Scaling take."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
from aws_helpers import run_components
from plan_helpers import FACTS, plan_of

from components.sagemaker_endpoint import SageMakerEndpoint, SageMakerEndpointArgs
from serving_stack.config import parse_stack_config
from serving_stack.config.secrets import required_secrets
from serving_stack.facts.aws import version_key
from serving_stack.facts.sagemaker import Container
from serving_stack.plan.sagemaker import PlannedEndpoint
from tools.mock_runtime import ProgramRun, plain_numbers

REGION = "us-west-2"
PUBLIC_ID = "huggingface-reasoning-nvidia-nemotron-3-nano-30b-a3b-bf16"
GATED_ID = "test-gated-nemotron-shaped"
NVFP4 = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
HF_TOKEN = "hf_test_token_value"
SECRET_SIG_KEY, SECRET_SIG = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"


def picked_container(repo: str) -> Container:
    """The first listed container whose bundled vLLM meets the checkpoint's minimum (catalog/sagemaker_lmi.yaml)."""
    minimum = version_key(FACTS.lmi.repositories[repo].minimumVllm)
    return next(c for c in FACTS.lmi.containers if version_key(c.vllmVersion) >= minimum)


def expected_image_prefix(repo: str, region: str) -> str:
    container = picked_container(repo)
    return f"{FACTS.lmi.registries.accounts[region]}.dkr.ecr.{region}.amazonaws.com/{container.repository}:"


def expected_engine_environment(repo: str, instance_type: str) -> dict[str, str]:
    """The recipe's vLLM arguments for the instance's GPU generation, spelled as the picked container reads them."""
    form = FACTS.lmi.argumentForms[picked_container(repo).argumentForm]
    arguments = FACTS.lmi.repositories[repo].engineArguments
    architecture = FACTS.sagemaker_instances[instance_type].gpuArchitecture
    wanted = {**arguments.common, **arguments.byArchitecture.get(architecture, {})}
    expected = {}
    for flag, value in wanted.items():
        name = flag[2:]
        variable = form.renames.get(name, form.prefix + name.upper().replace("-", "_"))
        expected[variable] = form.flagValue if value is None else value
    return {**expected, form.modelVariable: repo}


def autoscaling(instance_type: str, **overrides: Any) -> dict[str, Any]:
    return {"instanceType": instance_type, "maxCapacity": 4, "targetInvocationsPerInstance": 4, **overrides}


def jumpstart_endpoint(**overrides: Any) -> dict[str, Any]:
    """The public JumpStart snapshot model on ml.g6e.12xlarge, 2 of 1..4 instances. ALL_AT_ONCE: the spec's 1200 s
    timeouts leave room for one bake and the termination wait in the provider's 60 minutes, not for a canary."""
    instance_type = overrides.get("instanceType", "ml.g6e.12xlarge")
    return {
        "name": "nemotron-js",
        "source": "jumpstart",
        "jumpstart": {"modelId": PUBLIC_ID, "version": "1.0.0"},
        "instanceType": instance_type,
        "initialInstanceCount": 2,
        "autoscaling": autoscaling(instance_type),
        "deployment": {"type": "ALL_AT_ONCE"},
        **overrides,
    }


def huggingface_endpoint(**overrides: Any) -> dict[str, Any]:
    """NVFP4 Lightning on ml.p5.48xlarge, 2 instances (the fewest that hold a canary), 1..2."""
    instance_type = overrides.get("instanceType", "ml.p5.48xlarge")
    return {
        "name": "nemotron-hf",
        "source": "huggingface",
        "huggingface": {"repo": NVFP4},
        "instanceType": instance_type,
        "initialInstanceCount": 2,
        "autoscaling": autoscaling(instance_type, maxCapacity=2),
        **overrides,
    }


def stack(*endpoints: dict[str, Any], **sagemaker: Any) -> dict[str, Any]:
    """A raw stack config (as in `Pulumi.<stack>.yaml`) with these SageMaker endpoints. The committed JumpStart
    snapshot and the test specs are hand-made (no provenance), so unverified specs are allowed unless told."""
    return {
        "kubernetes": {"cluster": {"source": "kubeconfig", "context": "sagemaker-test"}},
        "modelCache": {"storageClassName": "efs-ap"},
        "sagemaker": {
            "region": REGION,
            "allowUnverifiedSpecs": True,
            **sagemaker,
            "endpoints": [copy.deepcopy(e) for e in endpoints],
        },
    }


def plan(raw: dict[str, Any], default_region: str | None = None) -> list[PlannedEndpoint]:
    """The planned endpoints, with every secret the config requires set (`hfToken` for `sendHfToken`)."""
    secrets = frozenset(required_secrets(parse_stack_config(raw)))
    return list(plan_of(raw, default_region, secrets=secrets).sagemaker)


def record(raw: dict[str, Any]) -> ProgramRun:
    """Build one `SageMakerEndpoint` per planned endpoint under mocks and record every registration."""
    planned = plan(raw)

    def build() -> None:
        for endpoint in planned:
            token = pulumi.Output.secret(HF_TOKEN) if endpoint.container.needs_hf_token else None
            SageMakerEndpoint(endpoint.name, SageMakerEndpointArgs(endpoint, hf_token=token))

    return run_components(build)


def unsecret(value: Any) -> Any:
    """Recorded inputs with every secret replaced by its value (a secret map lifts its whole parent)."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG_KEY) == SECRET_SIG:
            return unsecret(value["value"])
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


def inputs(run: ProgramRun, name: str) -> dict[str, Any]:
    """The plain inputs of the resource with this name (numbers as ints where integral)."""
    return plain_numbers(unsecret(run.named(name).inputs))


# Recorded (Terraform-style camelCase) keys whose AWS API name is not just the key capitalised.
RENAMES = {
    "volumeSizeInGb": "VolumeSizeInGB",
    "kmsKeyArn": "KmsKeyId",
    "kmsMasterKeyId": "KMSMasterKeyID",
    "sseAlgorithm": "SSEAlgorithm",
    "s3Uri": "S3Uri",
    "s3DataType": "S3DataType",
}
# Lists in the provider schema that are a single structure in the API.
SINGLE = {"s3DataSources": "S3DataSource", "routingConfigs": "RoutingConfig"}
# Maps whose keys are data (environment variable names), not field names.
VERBATIM = {"environment"}
PULUMI_ONLY = {"region", "name"}


def to_api(value: Any, key: str = "") -> Any:
    """Recorded inputs -> AWS API shape, key by key; nothing is dropped except what only Pulumi reads."""
    if isinstance(value, list):
        return [to_api(v) for v in value]
    if not isinstance(value, dict) or key in VERBATIM:
        return value
    shaped = {}
    for child_key, child in value.items():
        if child_key in SINGLE:
            (only,) = child
            shaped[SINGLE[child_key]] = to_api(only)
        elif child_key == "dimensions":
            shaped["Dimensions"] = [{"Name": k, "Value": v} for k, v in sorted(child.items())]
        else:
            shaped[RENAMES.get(child_key, child_key[0].upper() + child_key[1:])] = to_api(child, child_key)
    return shaped


def api_request(run: ProgramRun, name: str) -> dict[str, Any]:
    """The boto3 request body for a recorded resource (`region` and the resource name left to the caller)."""
    recorded = inputs(run, name)
    return to_api({k: v for k, v in recorded.items() if k not in PULUMI_ONLY})
