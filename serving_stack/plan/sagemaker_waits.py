"""Do an endpoint's worst-case create and blue/green update fit the waits around them?

The Terraform provider behind pulumi-aws waits for InService after CreateEndpoint and UpdateEndpoint with
a fixed 60-minute waiter (aws-sdk-go `WaitUntilEndpointInService`: 120 x 30 s; not configurable). If
SageMaker may legitimately take longer, `up` fails while the endpoint is still creating or deploying, and
the state no longer says what AWS has. Worst case = instance provisioning (an estimate, data) + the model
download timeout (when there is S3 model data) + the container startup health-check timeout, and for an
update + one bake (`waitIntervalSeconds`) per traffic shift + `terminationWaitSeconds`. SageMaker itself
stops a deployment at `maximumExecutionTimeoutSeconds` and rolls it back, so that must cover the update and
stay within the provider's wait.
"""

from __future__ import annotations

from serving_stack.errors import ConfigError
from serving_stack.plan.sagemaker_spec import BlueGreen, ProductionVariant, WaitBudget

PROVIDER_INSERVICE_WAIT_SECONDS = 3600


def wait_budget(
    variant: ProductionVariant,
    deployment: BlueGreen,
    provisioning: int,
    has_model_data: bool,
) -> WaitBudget:
    return WaitBudget(
        provisioning=provisioning,
        model_download=(variant.model_data_download_timeout or 0) if has_model_data else 0,
        startup=variant.container_startup_health_check_timeout or 0,
        traffic_shifting=deployment.traffic_steps * deployment.wait_interval_seconds,
        termination=deployment.termination_wait_seconds,
    )


def _parts(budget: WaitBudget, update: bool) -> str:
    parts = [f"{budget.provisioning} s provisioning (estimate)"]
    if budget.model_download:
        parts.append(f"{budget.model_download} s model download timeout")
    parts.append(f"{budget.startup} s startup health-check timeout")
    if update:
        parts += [f"{budget.traffic_shifting} s of bakes", f"{budget.termination} s termination wait"]
    return " + ".join(parts)


def check_waits(budget: WaitBudget, deployment: BlueGreen, path: str) -> list[ConfigError]:
    """Every way the waits do not fit, each naming the key to change."""
    limit = PROVIDER_INSERVICE_WAIT_SECONDS
    wait = f"the provider's fixed {limit} s InService wait"
    errors = []
    if budget.create_seconds > limit:
        errors.append(
            ConfigError(
                f"{path}.timeouts",
                f"a create can take {_parts(budget, False)} = {budget.create_seconds} s, longer than {wait}",
                f"timeouts summing to at most {limit - budget.provisioning} s",
            )
        )
        return errors
    if budget.update_seconds > limit:
        errors.append(
            ConfigError(
                f"{path}.deployment",
                f"a blue/green update can take {_parts(budget, True)} = {budget.update_seconds} s, longer than {wait}",
                f"waitIntervalSeconds x {deployment.traffic_steps} traffic steps + "
                f"terminationWaitSeconds <= {limit - budget.create_seconds} s, or shorter timeouts",
            )
        )
    maximum = deployment.maximum_execution_timeout_seconds
    key = f"{path}.deployment.maximumExecutionTimeoutSeconds"
    if maximum > limit:
        errors.append(
            ConfigError(
                key,
                f"{maximum} s outlasts {wait}: `up` would give up while SageMaker still deploys",
                f"{min(budget.update_seconds, limit)}..{limit}",
            )
        )
    elif budget.update_seconds <= limit and maximum < budget.update_seconds:
        errors.append(
            ConfigError(
                key,
                f"{maximum} s is shorter than the worst-case update "
                f"({budget.update_seconds} s): SageMaker would roll back a slow but healthy "
                "deployment",
                f"{budget.update_seconds}..{limit}",
            )
        )
    return errors
