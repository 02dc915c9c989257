"""One Region for the whole stack: the AWS provider's `aws:region` and the `aws` block's `region` agree.

`aws.region` decides where the stack builds (the provider it creates is pinned to it); `aws:region` is the
default provider's Region, which `pulumi` commands, SageMaker endpoints without `sagemaker.region` and any
resource on the default provider use. Two different values would split the stack across Regions without any
block saying so; `sagemaker.region` is the one setting that may name another Region on purpose.
"""
from __future__ import annotations

from typing import Optional

from serving_stack.config.aws import AwsConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.regions import AwsRegions
from serving_stack.plan.zones import bounded as bounded_names


def check_stack_region(aws: Optional[AwsConfig], default_region: Optional[str],
                       regions: AwsRegions) -> list[ConfigError]:
    if default_region is None:
        return []
    if default_region not in regions.regions:
        return [ConfigError("aws:region", f"unknown Region {bounded(default_region)}", bounded_names(regions.regions))]
    if aws is not None and aws.region != default_region:
        return [ConfigError("aws.region", f"{aws.region!r} differs from the stack's aws:region {default_region!r}: "
                            "one Region for the stack", default_region)]
    return []
