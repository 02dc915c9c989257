"""The `sagemaker` config: bad settings stop with one line naming the key path (in parsing or planning, both
before any resource exists). What a good config plans is `test_sagemaker_plan`."""

from __future__ import annotations

import re

import pytest
from plan_helpers import FACTS
from sagemaker_helpers import (
    GATED_ID,
    NVFP4,
    PUBLIC_ID,
    autoscaling,
    huggingface_endpoint,
    jumpstart_endpoint,
    picked_container,
    plan,
    stack,
)
from stack_helpers import BASE_CONFIG, run_config

from serving_stack.config import ConfigError
from tools.mock_runtime import run_program

E0 = "sagemaker.endpoints[0]"
# A Region AWS has (catalog/aws_regions.yaml) where catalog/sagemaker_lmi.yaml pins no LMI image.
# An LMI image of one's own in another region than the endpoint's, and an option in the form of a listed
# container other than the one the checkpoint's minimum vLLM picks.
LMI_IMAGE_US_EAST_1 = FACTS.lmi.image(next(c for c in FACTS.lmi.containers if c.argumentForm == "lmi"), "us-east-1")
OTHER_FORM_OPTION = next(
    f.prefix + "MAX_MODEL_LEN" for n, f in FACTS.lmi.argumentForms.items() if n != picked_container(NVFP4).argumentForm
)
NO_LMI_REGION = next(r for r in sorted(FACTS.aws.regions.regions) if r not in FACTS.lmi.registries.accounts)
BF16 = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16"
GATED = {"jumpstart": {"modelId": GATED_ID, "version": "2.1.0"}}

BAD_CONFIGS = {
    "unknown model id": (
        stack(jumpstart_endpoint(jumpstart={"modelId": "nvidia-nemotron-3-5-lightning", "version": "1.0.0"})),
        f"{E0}.jumpstart.modelId: unknown JumpStart model id 'nvidia-nemotron-3-5-lightning'",
    ),
    "unpinned version": (
        stack(jumpstart_endpoint(jumpstart={"modelId": PUBLIC_ID, "version": "*"})),
        f"{E0}.jumpstart.version: '*' is not pinned; pin a version; allowed: 1.0.0",
    ),
    "instance type not in the catalog": (
        stack(jumpstart_endpoint(instanceType="ml.g5.12xlarge")),
        f"{E0}.instanceType: unsupported instance type 'ml.g5.12xlarge'; allowed: ml.g6e.2xlarge",
    ),
    "instance type the model does not support": (
        stack(jumpstart_endpoint(instanceType="ml.p4d.24xlarge")),
        f"{E0}.instanceType: {PUBLIC_ID} 1.0.0 does not support 'ml.p4d.24xlarge'; allowed: ml.g6e.12xlarge",
    ),
    "gated without acceptEula": (
        stack(jumpstart_endpoint(**GATED), snapshotDir="tests/data/jumpstart"),
        f"{E0}.jumpstart.acceptEula: {GATED_ID} 2.1.0 is gated and needs its EULA accepted",
    ),
    "timeout below 60": (
        stack(jumpstart_endpoint(timeouts={"modelDataDownload": 30})),
        f"{E0}.timeouts.modelDataDownload: Input should be greater than or equal to 60 (got 30)",
    ),
    "timeout above 3600": (
        stack(jumpstart_endpoint(timeouts={"containerStartupHealthCheck": 7200})),
        f"{E0}.timeouts.containerStartupHealthCheck: Input should be less than or equal to 3600",
    ),
    "min above max capacity": (
        stack(jumpstart_endpoint(autoscaling=autoscaling("ml.g6e.12xlarge", minCapacity=3, maxCapacity=2))),
        f"{E0}.autoscaling.minCapacity: 3 is greater than maxCapacity 2",
    ),
    "initial count outside min..max": (
        stack(jumpstart_endpoint(initialInstanceCount=5)),
        f"{E0}.initialInstanceCount: 5 is outside autoscaling; allowed: 1..4",
    ),
    "scale-in cooldown not longer": (
        stack(jumpstart_endpoint(autoscaling=autoscaling("ml.g6e.12xlarge", scaleInCooldown=300))),
        f"{E0}.autoscaling.scaleInCooldown: 300 s is not longer than scaleOutCooldown 300 s",
    ),
    "unknown Hugging Face repo": (
        stack(huggingface_endpoint(huggingface={"repo": "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-FP8"})),
        f"{E0}.huggingface.repo: unsupported checkpoint 'nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-FP8'; allowed: {NVFP4}",
    ),
    "token as a container option": (
        stack(huggingface_endpoint(huggingface={"repo": NVFP4, "options": {"HF_TOKEN": "x"}})),
        f"{E0}.huggingface.options: HF_TOKEN holds a credential in plain config",
    ),
    "an option in another container's form": (
        stack(huggingface_endpoint(huggingface={"repo": NVFP4, "options": {OTHER_FORM_OPTION: "x"}})),
        f"{E0}.huggingface.options.{OTHER_FORM_OPTION}: the container ({picked_container(NVFP4).release}) reads "
        f"{FACTS.lmi.argumentForms[picked_container(NVFP4).argumentForm].prefix}* settings",
    ),
    "container environment over SageMaker's 100 entries": (
        stack(
            huggingface_endpoint(
                huggingface={
                    "repo": NVFP4,
                    "options": {
                        f"{FACTS.lmi.argumentForms[picked_container(NVFP4).argumentForm].prefix}EXTRA_{i}": "1"
                        for i in range(100)
                    },
                }
            )
        ),
        f"{E0}.huggingface.options: the model's container environment would hold",
    ),
    "KMS key of another region": (
        stack(
            huggingface_endpoint(
                kmsKeyArn="arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                dataCapture={"enabled": True},
            )
        ),
        f"{E0}.kmsKeyArn: the key is in eu-west-1, the endpoint in us-west-2",
    ),
    "unpinned LMI image": (
        stack(
            huggingface_endpoint(
                huggingface={
                    "repo": NVFP4,
                    "lmiImage": "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:latest",
                }
            )
        ),
        f"{E0}.huggingface.lmiImage: must be an ECR image pinned by a tag other than 'latest'",
    ),
    "no LMI image in the region": (
        stack(huggingface_endpoint(), region=NO_LMI_REGION),
        f"{E0}.huggingface.lmiImage: no Deep Learning Containers registry for '{NO_LMI_REGION}' in "
        "catalog/sagemaker_lmi.yaml",
    ),
    "LMI image from another region": (
        stack(huggingface_endpoint(huggingface={"repo": NVFP4, "lmiImage": LMI_IMAGE_US_EAST_1})),
        f"{E0}.huggingface.lmiImage: '{LMI_IMAGE_US_EAST_1}' is in us-east-1",
    ),
    "source block missing": (
        stack(jumpstart_endpoint(source="huggingface")),
        f"{E0}.huggingface: required when source is huggingface",
    ),
    "duplicate endpoint name": (
        stack(jumpstart_endpoint(), huggingface_endpoint(name="nemotron-js")),
        "sagemaker.endpoints[1].name: endpoint name 'nemotron-js' is used twice",
    ),
    "name too long for derived names": (
        stack(jumpstart_endpoint(name="n" * 48)),
        f"{E0}.name: must be an endpoint name",
    ),
    "volume size on NVMe-only storage": (
        stack(huggingface_endpoint(instanceType="ml.p4d.24xlarge", volumeSizeGb=512)),
        f"{E0}.volumeSizeGb: ml.p4d.24xlarge has local NVMe storage only",
    ),
    "volume key on NVMe-only storage without capture": (
        stack(
            huggingface_endpoint(
                kmsKeyArn="arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
            )
        ),
        f"{E0}.kmsKeyArn: ml.p5.48xlarge storage is hardware-encrypted NVMe, where SageMaker rejects a volume key",
    ),
    "linear step below the API's 10%": (
        stack(jumpstart_endpoint(deployment={"type": "LINEAR", "linearStepSize": 5})),
        f"{E0}.deployment.linearStepSize: Input should be greater than or equal to 10",
    ),
    "execution timeout above the provider's 14400 s": (
        stack(jumpstart_endpoint(deployment={"maximumExecutionTimeoutSeconds": 20000})),
        f"{E0}.deployment.maximumExecutionTimeoutSeconds: Input should be less than or equal to 14400",
    ),
    "bake shorter than the alarm window": (
        stack(huggingface_endpoint(deployment={"waitIntervalSeconds": 120})),
        f"{E0}.deployment.waitIntervalSeconds: 120 s of baking is shorter than the rollback alarms' window "
        "(periodSeconds 60 x evaluationPeriods 3 = 180 s)",
    ),
    "instance type changed under autoscaling": (
        stack(huggingface_endpoint(instanceType="ml.p5en.48xlarge", autoscaling=autoscaling("ml.p5.48xlarge"))),
        f"{E0}.autoscaling.instanceType: autoscaling is registered for ml.p5.48xlarge, the endpoint asks for "
        "ml.p5en.48xlarge",
    ),
    "unverified spec without the opt-in": (
        stack(jumpstart_endpoint(), allowUnverifiedSpecs=False),
        f"{E0}.jumpstart: spec community_models/{PUBLIC_ID}/specs_v1.0.0.json was not fetched from the JumpStart "
        "content bucket",
    ),
    "canary waits beyond the provider's 60 minutes": (
        stack(jumpstart_endpoint(deployment={"type": "CANARY"})),
        f"{E0}.deployment: a blue/green update can take 600 s provisioning (estimate) + 1200 s model download timeout "
        "+ 1200 s startup health-check timeout + 600 s of bakes + 300 s termination wait = 3900 s",
    ),
    "BF16 beyond a 48 GB GPU": (
        stack(huggingface_endpoint(instanceType="ml.g6e.2xlarge", huggingface={"repo": BF16})),
        f"{E0}.instanceType: {BF16} (bf16, ~60 GB of weights) does not fit ml.g6e.2xlarge",
    ),
    "no region": (stack(jumpstart_endpoint(), region=None), "sagemaker.region: no region for the SageMaker endpoints"),
    "snapshot directory missing": (
        stack(jumpstart_endpoint(), snapshotDir="catalog/jumpstart-nope"),
        "sagemaker.snapshotDir: 'catalog/jumpstart-nope' is not a directory of the project",
    ),
    "canary above half the fleet": (
        stack(jumpstart_endpoint(deployment={"canarySize": 60})),
        f"{E0}.deployment.canarySize: Input should be less than or equal to 50",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_names_the_key_path(case):
    raw, expected = BAD_CONFIGS[case]
    with pytest.raises(ConfigError) as raised:
        plan(raw)  # parse_stack_config, then the plan: both pure, before any resource
    assert expected in str(raised.value)
    assert "\n" not in str(raised.value)


def test_every_bad_endpoint_is_reported_at_once():
    raw = stack(jumpstart_endpoint(initialInstanceCount=9), huggingface_endpoint(instanceType="ml.x1.32xlarge"))
    with pytest.raises(ConfigError) as raised:
        plan(raw)
    assert str(raised.value).count(" | ") == 1
    assert "sagemaker.endpoints[1].instanceType: unsupported instance type 'ml.x1.32xlarge'" in str(raised.value)


def test_bad_sagemaker_config_stops_the_program_before_any_resource():
    with pytest.raises(ConfigError, match=r"^sagemaker\.endpoints\[0\]\.autoscaling\.minCapacity"):
        run_config(
            {
                **BASE_CONFIG,
                "sagemaker": stack(
                    jumpstart_endpoint(autoscaling=autoscaling("ml.g6e.12xlarge", minCapacity=5, maxCapacity=2))
                )["sagemaker"],
            }
        )
    assert run_program.last_monitor.recorded == []


def test_the_container_environment_limit_is_exact():
    """The container's own settings, the engine arguments and the model id leave room for the rest of the
    100 entries: exactly that many options plan, one more is refused."""
    limit = FACTS.lmi.environmentLimits.maxEntries
    prefix = FACTS.lmi.argumentForms[picked_container(NVFP4).argumentForm].prefix

    def options(count: int) -> dict:
        return {"repo": NVFP4, "options": {f"{prefix}EXTRA_{i}": "1" for i in range(count)}}

    with pytest.raises(ConfigError) as too_many:
        plan(stack(huggingface_endpoint(huggingface=options(limit))))
    held = int(re.search(r"would hold (\d+) entries", str(too_many.value)).group(1))
    room = limit - (held - limit)
    plan(stack(huggingface_endpoint(huggingface=options(room))))
    with pytest.raises(ConfigError, match=rf"would hold {limit + 1} entries"):
        plan(stack(huggingface_endpoint(huggingface=options(room + 1))))
