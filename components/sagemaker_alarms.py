"""The CloudWatch alarms that roll a blue/green deployment back, scoped to the new fleet.

SageMaker publishes invocation metrics with an `EndpointConfigName` dimension once a fleet takes traffic
(SageMaker developer guide, "Auto-Rollback Configuration and Monitoring": monitor the new fleet). Scoping
both alarms to the endpoint config being deployed means a noisy old fleet cannot abort a good deployment,
and an alarm watches only what the deployment changes. The alarm is updated in place to the new config's
name before the endpoint update starts (its dimension is built from the config), and its name stays fixed
(the endpoint's rollback configuration names it, and changing that forces a replacement).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_aws as aws

from serving_stack.plan.sagemaker_spec import RollbackAlarms

SAGEMAKER_NAMESPACE = "AWS/SageMaker"


def rollback_alarms(
    name: str,
    endpoint_name: str,
    variant_name: str,
    region: str,
    endpoint_config_name: pulumi.Input[str],
    thresholds: RollbackAlarms,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> list[aws.cloudwatch.MetricAlarm]:
    """5xx errors and p99 model latency of the variant on the config being deployed."""
    common: dict[str, Any] = {
        "namespace": SAGEMAKER_NAMESPACE,
        "dimensions": {
            "EndpointName": endpoint_name,
            "VariantName": variant_name,
            "EndpointConfigName": endpoint_config_name,
        },
        "period": thresholds.period_seconds,
        "evaluation_periods": thresholds.evaluation_periods,
        "comparison_operator": "GreaterThanOrEqualToThreshold",
        "treat_missing_data": "notBreaching",
        "region": region,
        "tags": dict(tags),
        "opts": opts,
    }
    errors = aws.cloudwatch.MetricAlarm(
        f"{name}-5xx",
        name=f"{endpoint_name}-5xx",
        metric_name="Invocation5XXErrors",
        statistic="Sum",
        threshold=thresholds.invocation_5xx_errors,
        alarm_description=f"{endpoint_name}: model 5xx errors on the new fleet; rolls a blue/green deployment back",
        **common,
    )
    latency = aws.cloudwatch.MetricAlarm(
        f"{name}-p99-latency",
        name=f"{endpoint_name}-p99-latency",
        metric_name="ModelLatency",
        extended_statistic="p99",
        threshold=thresholds.model_latency_p99_ms * 1000,  # ModelLatency is in microseconds
        alarm_description=f"{endpoint_name}: p99 model latency on the new fleet; rolls a blue/green deployment back",
        **common,
    )
    return [errors, latency]
