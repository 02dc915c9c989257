"""GPU-memory fit per instance type and precision, the pinned LMI's vLLM against the checkpoint's minimum, and
the wait budget against the provider's fixed 60-minute InService wait: each derived from the data."""

from __future__ import annotations

import itertools

import pytest
from plan_helpers import FACTS
from sagemaker_helpers import (
    autoscaling,
    expected_engine_environment,
    huggingface_endpoint,
    jumpstart_endpoint,
    picked_container,
    plan,
    stack,
)

from serving_stack.errors import ConfigError
from serving_stack.facts.aws import version_key
from serving_stack.plan.sagemaker import PROVIDER_INSERVICE_WAIT_SECONDS, pick_container, traffic_steps

LMI, FIT = FACTS.lmi, FACTS.lmi.fit
CASES = list(itertools.product(sorted(FACTS.sagemaker_instances), sorted(LMI.repositories)))


def expected_fit(instance_type: str, repo: str) -> bool:
    instance, checkpoint = FACTS.sagemaker_instances[instance_type], LMI.repositories[repo]
    usable = instance.gpus * instance.gpuMemoryGb * FIT.gpuMemoryUtilization.value
    return checkpoint.weightsGb + instance.gpus * FIT.perGpuOverheadGb.value + FIT.minimumCacheGb.value <= usable


@pytest.mark.parametrize(("instance_type", "repo"), CASES)
def test_fit_precision_path_and_recipe_arguments_per_instance_type(instance_type, repo):
    raw = stack(huggingface_endpoint(instanceType=instance_type, huggingface={"repo": repo}))
    if not expected_fit(instance_type, repo):
        with pytest.raises(ConfigError, match=rf"instanceType: {repo} \(.*\) does not fit {instance_type}"):
            plan(raw)
        return
    (planned,) = plan(raw)
    checkpoint = LMI.repositories[repo]
    assert planned.source.precision_path == checkpoint.runsAs.path
    assert expected_engine_environment(repo, instance_type).items() <= planned.container.environment.items()
    unverified = checkpoint.engineArguments.unverified_on(FACTS.sagemaker_instances[instance_type].gpuArchitecture)
    assert len(planned.notes) == len(unverified)
    assert all(what in note for what, note in zip(unverified, planned.notes, strict=True))


def test_bf16_does_not_fit_a_single_48_gb_gpu_and_fits_four():
    """JUMPSTART-FACTS.md corrections: ml.g6e.2xlarge cannot hold BF16 30B, ml.g6e.12xlarge can."""
    bf16 = next(name for name, repo in LMI.repositories.items() if repo.precision == "bf16")
    assert not expected_fit("ml.g6e.2xlarge", bf16)
    assert expected_fit("ml.g6e.12xlarge", bf16)


@pytest.mark.parametrize("repo", sorted(LMI.repositories))
def test_the_picked_container_bundles_the_vllm_the_recipe_needs(repo):
    """The first listed container whose bundled vLLM meets the recipe's minimum; none listed before it does."""
    (planned,) = plan(stack(huggingface_endpoint(huggingface={"repo": repo})))
    minimum = version_key(LMI.repositories[repo].minimumVllm)
    container = picked_container(repo)
    assert planned.source.container == container.name
    assert version_key(planned.source.vllm_version) >= minimum
    earlier = LMI.containers[: LMI.containers.index(container)]
    assert all(version_key(c.vllmVersion) < minimum for c in earlier)


def test_a_checkpoint_no_container_serves_is_refused_naming_both_versions():
    name, repo = next(iter(LMI.repositories.items()))
    newest = max(LMI.containers, key=lambda c: version_key(c.vllmVersion))
    beyond = ".".join(str(part + 1) for part in version_key(newest.vllmVersion))
    raised = repo.model_copy(update={"minimumVllm": beyond})
    with pytest.raises(ConfigError) as caught:
        pick_container(name, raised, LMI, "sagemaker.endpoints[0].huggingface.repo")
    message = str(caught.value)
    assert message.startswith("sagemaker.endpoints[0].huggingface.repo: ")
    assert f"needs vLLM >= {beyond}" in message and f"bundles vLLM {newest.vllmVersion}" in message
    assert "\n" not in message


def test_the_lmi_container_below_the_minimum_is_not_picked():
    """The pinned LMI (catalog/sagemaker_lmi.yaml) bundles a vLLM older than the recipe's minimum: refused."""
    name, repo = next(iter(LMI.repositories.items()))
    only_lmi = LMI.model_copy(update={"containers": tuple(c for c in LMI.containers if c.argumentForm == "lmi")})
    if all(version_key(c.vllmVersion) >= version_key(repo.minimumVllm) for c in only_lmi.containers):
        pytest.skip("every listed LMI meets the minimum")
    with pytest.raises(ConfigError, match=r"needs vLLM >= .* bundles vLLM"):
        pick_container(name, repo, only_lmi, "sagemaker.endpoints[0].huggingface.repo")


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
    assert traffic_steps(planned.shifting, planned.config.deployment) == steps
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
    assert not planned.config.autoscaling.enabled
    assert planned.config.instanceType == "ml.p5en.48xlarge"


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_unset_traffic_shifting_is_a_canary_only_where_the_instance_count_holds_one(count):
    """SageMaker: a canary moves at most half the instances (capacity percent, rounded up to whole instances)."""
    endpoint = huggingface_endpoint(initialInstanceCount=count, autoscaling=autoscaling("ml.p5.48xlarge"))
    (planned,) = plan(stack(endpoint))
    canary = -(-count * planned.config.deployment.canarySize // 100)
    expected = "CANARY" if 2 * canary <= count else "ALL_AT_ONCE"
    assert planned.shifting == expected
    assert any("blue/green ALL_AT_ONCE" in note for note in planned.notes) == (expected == "ALL_AT_ONCE")


@pytest.mark.parametrize(
    ("deployment", "count", "key", "allowed"),
    [
        ({"type": "CANARY"}, 1, "canarySize", "type ALL_AT_ONCE, or initialInstanceCount >= 2"),
        ({"type": "CANARY", "canarySize": 50}, 3, "canarySize", "at most 33%"),
        (
            {"type": "LINEAR", "linearStepSize": 50},
            1,
            "linearStepSize",
            "type ALL_AT_ONCE, or initialInstanceCount >= 2",
        ),
    ],
)
def test_a_configured_step_larger_than_half_the_instances_is_refused(deployment, count, key, allowed):
    endpoint = huggingface_endpoint(
        initialInstanceCount=count, deployment=deployment, autoscaling=autoscaling("ml.p5.48xlarge")
    )
    with pytest.raises(ConfigError) as caught:
        plan(stack(endpoint))
    message = str(caught.value)
    assert message.startswith(f"sagemaker.endpoints[0].deployment.{key}: ")
    assert message.endswith(f"allowed: {allowed}")
