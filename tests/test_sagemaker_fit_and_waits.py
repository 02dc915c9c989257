"""GPU-memory fit per instance type and precision, the pinned LMI's vLLM against the checkpoint's minimum, and
the wait budget against the provider's fixed 60-minute InService wait: each derived from the data."""

from __future__ import annotations

import itertools

import pytest
from plan_helpers import FACTS
from sagemaker_helpers import autoscaling, huggingface_endpoint, jumpstart_endpoint, plan, stack

from serving_stack.errors import ConfigError
from serving_stack.facts.sagemaker import version_tuple
from serving_stack.plan.sagemaker import PROVIDER_INSERVICE_WAIT_SECONDS, check_vllm

LMI, FIT = FACTS.lmi, FACTS.lmi.fit
CASES = list(itertools.product(sorted(FACTS.sagemaker_instances), sorted(LMI.repositories)))


def expected_fit(instance_type: str, repo: str) -> bool:
    instance, checkpoint = FACTS.sagemaker_instances[instance_type], LMI.repositories[repo]
    usable = instance.gpus * instance.gpuMemoryGb * FIT.gpuMemoryUtilization.value
    return checkpoint.weightsGb + instance.gpus * FIT.perGpuOverheadGb.value + FIT.minimumCacheGb.value <= usable


@pytest.mark.parametrize(("instance_type", "repo"), CASES)
def test_fit_and_precision_path_per_instance_type(instance_type, repo):
    raw = stack(huggingface_endpoint(instanceType=instance_type, huggingface={"repo": repo}))
    if not expected_fit(instance_type, repo):
        with pytest.raises(ConfigError, match=rf"instanceType: {repo} \(.*\) does not fit {instance_type}"):
            plan(raw)
        return
    (planned,) = plan(raw)
    native = FACTS.sagemaker_instances[instance_type].gpuArchitecture in FIT.nativeFp4Architectures
    precision = LMI.repositories[repo].precision
    expected = {"bf16": "bf16", "nvfp4": "nvfp4-native" if native else "nvfp4-w4a16-fallback"}[precision]
    assert planned.source.precision_path == expected
    assert bool(planned.notes) == (expected == "nvfp4-w4a16-fallback")


def test_bf16_does_not_fit_a_single_48_gb_gpu_and_fits_four():
    """JUMPSTART-FACTS.md corrections: ml.g6e.2xlarge cannot hold BF16 30B, ml.g6e.12xlarge can."""
    bf16 = next(name for name, repo in LMI.repositories.items() if repo.precision == "bf16")
    assert not expected_fit("ml.g6e.2xlarge", bf16)
    assert expected_fit("ml.g6e.12xlarge", bf16)


def test_the_pinned_lmi_bundles_a_vllm_each_checkpoint_supports():
    for name, repo in LMI.repositories.items():
        assert version_tuple(LMI.container.vllmVersion) >= version_tuple(repo.minimumVllm), name
    old = LMI.model_copy(update={"container": LMI.container.model_copy(update={"vllmVersion": "0.8.4"})})
    name, repo = next(iter(LMI.repositories.items()))
    with pytest.raises(ConfigError, match=rf"bundles vLLM 0\.8\.4, but {name} needs vLLM >= {repo.minimumVllm}"):
        check_vllm(name, repo, old, "sagemaker.endpoints[0].huggingface.repo")


@pytest.mark.parametrize(
    ("deployment", "steps"),
    [
        ({"type": "ALL_AT_ONCE"}, 1),
        ({"type": "CANARY"}, 2),
        ({"type": "LINEAR", "linearStepSize": 50}, 2),
        ({"type": "LINEAR", "linearStepSize": 34}, 3),
    ],
)
def test_the_update_budget_is_provisioning_startup_bakes_and_termination(deployment, steps):
    (planned,) = plan(stack(huggingface_endpoint(deployment=deployment)))
    waits, variant = planned.waits, planned.variant
    assert planned.deployment.traffic_steps == steps
    assert waits.create_seconds == FACTS.sagemaker_provisioning.value + variant.container_startup_health_check_timeout
    assert waits.update_seconds == waits.create_seconds + steps * 300 + 300 <= PROVIDER_INSERVICE_WAIT_SECONDS


@pytest.mark.parametrize(
    ("endpoint", "key", "message"),
    [
        (
            huggingface_endpoint(timeouts={"containerStartupHealthCheck": 3600}),
            "timeouts",
            "a create can take 600 s provisioning (estimate) + 3600 s startup health-check timeout = 4200 s",
        ),
        (
            huggingface_endpoint(deployment={"maximumExecutionTimeoutSeconds": 7200}),
            "deployment.maximumExecutionTimeoutSeconds",
            "7200 s outlasts the provider's fixed 3600 s InService wait",
        ),
        (
            huggingface_endpoint(deployment={"maximumExecutionTimeoutSeconds": 1800}),
            "deployment.maximumExecutionTimeoutSeconds",
            "1800 s is shorter than the worst-case update (3300 s)",
        ),
        (
            jumpstart_endpoint(deployment={"type": "LINEAR", "linearStepSize": 10}),
            "deployment",
            "a blue/green update can take 600 s provisioning (estimate) + 1200 s model download timeout",
        ),
    ],
)
def test_waits_that_do_not_fit_name_their_key(endpoint, key, message):
    with pytest.raises(ConfigError) as raised:
        plan(stack(endpoint))
    assert f"sagemaker.endpoints[0].{key}: {message}" in str(raised.value)


def test_a_disabled_autoscaling_lets_the_instance_type_change():
    """Step 1 of the documented procedure: with autoscaling off the pin does not apply."""
    (planned,) = plan(
        stack(
            huggingface_endpoint(
                instanceType="ml.p5en.48xlarge", autoscaling=autoscaling("ml.p5.48xlarge", enabled=False)
            )
        )
    )
    assert not planned.scaling.enabled
    assert planned.variant.instance_type == "ml.p5en.48xlarge"
