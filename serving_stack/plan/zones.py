"""Region and zone names against `catalog/aws_regions.yaml`: the Region, the cluster's AZs (never Local
Zones: the EKS control plane must not get their subnets) and the zone of each GPU pool (a Local Zone only
for instance types that launch there, such as P6e-GB200 UltraServers in Dallas)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from serving_stack.config.aws import AwsConfig
from serving_stack.errors import ConfigError
from serving_stack.facts.instance_types import InstanceType
from serving_stack.facts.regions import AwsRegions

ALLOWED_CHARS = 200


def bounded(values: Iterable[str], limit: int = ALLOWED_CHARS) -> str:
    """`a, b, c` cut to about `limit` characters, saying how many names were left out."""
    names = list(values)
    shown: list[str] = []
    for index, name in enumerate(names):
        rest = len(names) - index
        if shown and len(", ".join([*shown, name])) + len(f", ... ({rest} more)") > limit:
            return f"{', '.join(shown)}, ... ({rest} more in catalog/aws_regions.yaml)"
        shown.append(name)
    return ", ".join(shown) or "none"


def check_region(aws: AwsConfig, regions: AwsRegions) -> list[ConfigError]:
    """The Region, the AZs of a cluster the stack creates and the subnet zones of an existing cluster."""
    if aws.region not in regions.regions:
        return [ConfigError("aws.region", f"unknown Region {aws.region!r}", bounded(regions.regions))]
    errors: list[ConfigError] = []
    zones = regions.availability_zones(aws.region)
    create = aws.cluster.create if aws.cluster else None
    existing = aws.cluster.existing if aws.cluster else None
    for index, zone in enumerate(create.availabilityZones if create else []):
        if zone in zones:
            continue
        problem = (
            f"{zone} is a Local Zone; the EKS control plane gets Availability Zone subnets only"
            if regions.local_zone(aws.region, zone)
            else f"{zone!r} is not an Availability Zone of {aws.region}"
        )
        errors.append(ConfigError(f"aws.cluster.create.availabilityZones[{index}]", problem, bounded(zones)))
    known = [*zones, *regions.local_zones(aws.region)]
    for zone in existing.privateSubnetIds if existing else []:
        if zone not in known:
            errors.append(
                ConfigError(
                    f"aws.cluster.existing.privateSubnetIds.{zone}", f"not a zone of {aws.region}", bounded(known)
                )
            )
    return errors


def check_pool_zone(
    path: str, zone: str, instance: Optional[InstanceType], aws: AwsConfig, regions: AwsRegions
) -> Optional[ConfigError]:
    """A pool's zone is one its instance type launches in: an AZ of the Region, or for a type sold only in
    Local Zones, a Local Zone of one of its groups (which the account must have opted in to)."""
    key = f"{path}.availabilityZone"
    local = regions.local_zone(aws.region, zone)
    if instance is not None and instance.local_zones_only:
        allowed = regions.local_zones(aws.region, instance.localZoneGroups)
        if local is None or local.group not in instance.localZoneGroups:
            groups = ", ".join(instance.localZoneGroups)
            return ConfigError(
                key,
                f"this instance type launches only in Local Zones of {groups} (opt in to the "
                f"zone group first), got {zone!r} in {aws.region}",
                bounded(allowed),
            )
        return None
    zones = regions.availability_zones(aws.region)
    if zone in zones:
        return None
    if local is not None and instance is not None:
        return ConfigError(
            key, f"{zone} is a Local Zone; this instance type launches in Availability Zones", bounded(zones)
        )
    if local is None:
        return ConfigError(key, f"{zone!r} is not a zone of {aws.region}", bounded(zones))
    return None
