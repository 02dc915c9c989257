"""One Region for the whole stack: the AWS provider's `aws:region` and the `aws` block's `region` agree, and
every Region the stack names exists (catalog/aws_regions.yaml).

`aws.region` decides where the stack builds (the provider it creates is pinned to it); `aws:region` is the
default provider's Region, which `pulumi` commands, SageMaker endpoints without `sagemaker.region` and any
resource on the default provider use. Two different values would split the stack across Regions without any
block saying so; `sagemaker.region` is the one setting that may name another Region on purpose.
"""

from __future__ import annotations

from typing import Optional

from serving_stack.config.stack import StackConfig
from serving_stack.errors import ConfigError, bounded
from serving_stack.facts.regions import AwsRegions
from serving_stack.plan.zones import bounded as bounded_names


def check_stack_region(config: StackConfig, default_region: Optional[str], regions: AwsRegions) -> list[ConfigError]:
    """`aws:region` (`default_region`) and `sagemaker.region` exist; `aws.region` equals `aws:region`.
    (`aws.region` itself is checked with its zones, `serving_stack.plan.zones.check_region`.)"""
    errors = [
        ConfigError(key, f"unknown Region {bounded(region)}", bounded_names(regions.regions))
        for key, region in (("aws:region", default_region), ("sagemaker.region", config.sagemaker.region))
        if region is not None and region not in regions.regions
    ]
    aws = config.aws
    if aws is not None and default_region is not None and aws.region != default_region:
        errors.append(
            ConfigError(
                "aws.region",
                f"{aws.region!r} differs from the stack's aws:region "
                f"{bounded(default_region)}: one Region for the stack",
                bounded(default_region, quote=False),
            )
        )
    return errors
