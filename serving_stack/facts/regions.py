"""AWS Regions, Availability Zones and Local Zones as data (`catalog/aws_regions.yaml`).

Config names zones by name; a name that AWS does not have, or one of another Region, fails while planning
with the key and the names allowed. Local Zones are kept apart from AZs: the EKS control plane only gets AZ
subnets, and a Local Zone must be opted in (its zone group) before anything launches there.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from pathlib import Path
from typing import Literal, Optional

import pydantic

from serving_stack.errors import ConfigError
from serving_stack.facts.data import DATA_DIR, Data, load_model

FILE = "aws_regions.yaml"


class LocalZone(Data):
    group: str = pydantic.Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d-[a-z]{3}-\d$")
    location: str


class Region(Data):
    availabilityZones: list[str] = pydantic.Field(min_length=2)
    localZones: dict[str, LocalZone] = pydantic.Field(default_factory=dict)


class RegionsFile(Data):
    schemaVersion: Literal[1]
    sources: dict[Literal["regions", "availabilityZones", "localZones"], str]
    regions: dict[str, Region] = pydantic.Field(min_length=1)


class AwsRegions:
    """Zone lookups by name; every name checked to belong to its Region when the file is loaded."""

    def __init__(self, data: RegionsFile):
        self.regions = data.regions

    def availability_zones(self, region: str) -> list[str]:
        return list(self.regions[region].availabilityZones) if region in self.regions else []

    def local_zone(self, region: str, zone: str) -> Optional[LocalZone]:
        return self.regions[region].localZones.get(zone) if region in self.regions else None

    def local_zones(self, region: str, groups: Optional[Collection[str]] = None) -> list[str]:
        """Local Zone names of the Region (of these zone groups only, when given)."""
        zones = self.regions[region].localZones if region in self.regions else {}
        return [name for name, zone in zones.items() if groups is None or zone.group in groups]


def _check(data: RegionsFile, label: str) -> None:
    for code, region in data.regions.items():
        for index, zone in enumerate(region.availabilityZones):
            if not (zone.startswith(code) and len(zone) == len(code) + 1 and zone[-1].isalpha()):
                raise ConfigError(
                    f"{label}: regions.{code}.availabilityZones[{index}]",
                    f"{zone!r} is not an AZ name of {code} (the Region code and one letter)",
                )
        for zone, local in region.localZones.items():
            if not (local.group.startswith(f"{code}-") and zone.startswith(local.group) and zone[-1].isalpha()):
                raise ConfigError(
                    f"{label}: regions.{code}.localZones.{zone}",
                    f"a Local Zone of {code} is named <zone group><letter>, got group {local.group!r}",
                )


@functools.lru_cache(maxsize=4)
def load_aws_regions(root: Path = DATA_DIR) -> AwsRegions:
    data = load_model(root / FILE, RegionsFile, root)
    _check(data, f"catalog/{FILE}")
    return AwsRegions(data)
