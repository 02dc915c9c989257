"""Checks of the `sagemaker` block against the SageMaker facts (instance types, the LMI repositories),
each naming its key; what needs the region (the JumpStart spec, the LMI image) is checked while planning
each endpoint (`serving_stack.plan.sagemaker`)."""

from __future__ import annotations

from collections.abc import Mapping

from serving_stack.config.sagemaker import (
    CONTAINER_SETTING,
    SageMakerConfig,
    SageMakerEndpointConfig,
)
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts import Facts
from serving_stack.facts.sagemaker import InstanceType, LmiFile


def _check_source(endpoint: SageMakerEndpointConfig, path: str, lmi: LmiFile) -> list[ConfigError]:
    errors = []
    chosen, other = ("jumpstart", "huggingface") if endpoint.source == "jumpstart" else ("huggingface", "jumpstart")
    if getattr(endpoint, chosen) is None:
        errors.append(ConfigError(f"{path}.{chosen}", f"required when source is {chosen}"))
    if getattr(endpoint, other) is not None:
        errors.append(
            ConfigError(f"{path}.{other}", f"set only when source is {other}", f"remove it, or source: {other}")
        )
    model = endpoint.huggingface
    if endpoint.source == "huggingface" and model is not None:
        repositories = lmi.repositories
        if model.repo not in repositories:
            errors.append(
                ConfigError(
                    f"{path}.huggingface.repo", f"unsupported checkpoint {bounded(model.repo)}", ", ".join(repositories)
                )
            )
        for option in model.options:
            if not CONTAINER_SETTING.fullmatch(option):
                errors.append(
                    ConfigError(
                        f"{path}.huggingface.options.{option}",
                        "not a container setting",
                        "OPTION_* (LMI) or SM_VLLM_* (SageMaker vLLM) names (the token comes from the hfToken secret)",
                    )
                )
    return errors


def _check_autoscaling_guard(endpoint: SageMakerEndpointConfig, path: str) -> list[ConfigError]:
    """An instance-type change of a registered variant fails UpdateEndpoint: make it a two-step change."""
    scaling = endpoint.autoscaling
    if not scaling.enabled or scaling.instanceType == endpoint.instanceType:
        return []
    return [
        ConfigError(
            f"{path}.autoscaling.instanceType",
            f"autoscaling is registered for {scaling.instanceType}, the endpoint asks for "
            f"{endpoint.instanceType}: SageMaker refuses to change the instance type of a variant that is "
            "a scaling target",
            f"{endpoint.instanceType} after a `pulumi up` with autoscaling.enabled: "
            "false (docs/sagemaker.md, Changing the instance type)",
        )
    ]


def _check_bake(endpoint: SageMakerEndpointConfig, path: str) -> list[ConfigError]:
    """A bake shorter than the alarms' evaluation window cannot roll anything back."""
    deployment = endpoint.deployment
    alarms = deployment.rollbackAlarms
    window = alarms.periodSeconds * alarms.evaluationPeriods
    if deployment.waitIntervalSeconds >= window:
        return []
    return [
        ConfigError(
            f"{path}.deployment.waitIntervalSeconds",
            f"{deployment.waitIntervalSeconds} s of baking is shorter than the rollback alarms' window "
            f"(periodSeconds {alarms.periodSeconds} x evaluationPeriods {alarms.evaluationPeriods} = "
            f"{window} s): no alarm could trip before the next traffic shift",
            f">= {window}",
        )
    ]


def _check_capacity(
    endpoint: SageMakerEndpointConfig,
    path: str,
    instances: Mapping[str, InstanceType],
) -> list[ConfigError]:
    errors = []
    scaling = endpoint.autoscaling
    if scaling.minCapacity > scaling.maxCapacity:
        errors.append(
            ConfigError(
                f"{path}.autoscaling.minCapacity",
                f"{scaling.minCapacity} is greater than maxCapacity {scaling.maxCapacity}",
            )
        )
    elif not scaling.minCapacity <= endpoint.initialInstanceCount <= scaling.maxCapacity:
        errors.append(
            ConfigError(
                f"{path}.initialInstanceCount",
                f"{endpoint.initialInstanceCount} is outside autoscaling",
                f"{scaling.minCapacity}..{scaling.maxCapacity}",
            )
        )
    if scaling.scaleInCooldown <= scaling.scaleOutCooldown:
        errors.append(
            ConfigError(
                f"{path}.autoscaling.scaleInCooldown",
                f"{scaling.scaleInCooldown} s is not longer than scaleOutCooldown "
                f"{scaling.scaleOutCooldown} s, so the endpoint could flap",
                f"more than {scaling.scaleOutCooldown}",
            )
        )
    instance = instances.get(endpoint.instanceType)
    if instance is None:
        errors.append(
            ConfigError(
                f"{path}.instanceType",
                f"unsupported instance type {bounded(endpoint.instanceType)}",
                ", ".join(instances),
            )
        )
    elif instance.storage == "nvme":
        if endpoint.volumeSizeGb is not None:
            errors.append(
                ConfigError(
                    f"{path}.volumeSizeGb",
                    f"{endpoint.instanceType} has local NVMe storage only, where SageMaker rejects a volume size",
                    "unset",
                )
            )
        if endpoint.kmsKeyArn is not None and not endpoint.dataCapture.enabled:
            errors.append(
                ConfigError(
                    f"{path}.kmsKeyArn",
                    f"{endpoint.instanceType} storage is hardware-encrypted "
                    "NVMe, where SageMaker rejects a volume key, and data capture is off",
                    "unset, or enable dataCapture",
                )
            )
    return errors


def check_sagemaker(config: SageMakerConfig, facts: Facts, prefix: str = "sagemaker") -> list[ConfigError]:
    """Every problem across the endpoints, each with its key path (the region-free checks)."""
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for index, endpoint in enumerate(config.endpoints):
        path = f"{prefix}.endpoints[{index}]"
        if endpoint.name in seen:
            errors.append(ConfigError(f"{path}.name", f"endpoint name {endpoint.name!r} is used twice"))
        seen.add(endpoint.name)
        errors += _check_source(endpoint, path, facts.lmi)
        errors += _check_capacity(endpoint, path, facts.sagemaker_instances)
        errors += _check_autoscaling_guard(endpoint, path)
        errors += _check_bake(endpoint, path)
    return errors
