"""Region and zone names are checked against catalog/aws_regions.yaml: its Regions are botocore's (the `aws`
partition), its names are well formed, and config naming a Region or zone AWS does not have, a Local Zone
for the control plane, or the wrong kind of zone for an instance type fails with the key and the names
allowed, in about 200 characters."""

from __future__ import annotations

import re
import shutil

import botocore.loaders
import pytest
import yaml
from aws_helpers import REGION, capacity_fields, eks_config, node_pool, pool_zone
from plan_helpers import plan_of

from serving_stack.errors import ConfigError
from serving_stack.facts.aws import load_aws_catalog, load_aws_regions
from serving_stack.facts.catalog import CATALOG_DIR
from serving_stack.plan.pools import ALLOWED_CHARS, MAX_LOCAL_ZONE_SUBNETS
from serving_stack.plan.pools import bounded_list as bounded

REGIONS = load_aws_regions()
INSTANCES = load_aws_catalog().instance_types
LOCAL_ONLY = sorted(name for name, i in INSTANCES.items() if i.local_zones_only)
IN_AZS = sorted(name for name, i in INSTANCES.items() if not i.local_zones_only)


def test_the_regions_are_botocores_commercial_partition():
    partitions = botocore.loaders.Loader().load_data("endpoints")["partitions"]
    (aws,) = [p for p in partitions if p["partition"] == "aws"]
    assert set(REGIONS.regions) == set(aws["regions"])


def test_zone_names_belong_to_their_region():
    for code, region in REGIONS.regions.items():
        assert all(re.fullmatch(rf"{code}[a-z]", zone) for zone in region.availabilityZones)
        assert all(
            zone.startswith(f"{local.group}") and local.group.startswith(f"{code}-")
            for zone, local in region.localZones.items()
        )


def test_a_local_zone_of_another_region_is_rejected_in_the_data(tmp_path):
    root = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, root, ignore=shutil.ignore_patterns("recipes", "jumpstart"))
    data = yaml.safe_load((root / "aws_regions.yaml").read_text())
    data["regions"]["us-west-2"]["localZones"]["us-east-1-dfw-2a"] = {"group": "us-east-1-dfw-2", "location": "Dallas"}
    (root / "aws_regions.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"catalog/aws_regions.yaml: regions.us-west-2.localZones.us-east-1-dfw-2a: "):
        load_aws_regions(root)


def test_bounded_lists_stop_near_200_characters_and_say_how_many_more():
    text = bounded(sorted(REGIONS.regions))
    assert len(text) <= ALLOWED_CHARS + len(" in catalog/aws_regions.yaml")
    left_out = len(REGIONS.regions) - text.count(", ")
    assert text.endswith(f"... ({left_out} more in catalog/aws_regions.yaml)")
    assert bounded(["us-east-1a", "us-east-1b"]) == "us-east-1a, us-east-1b"


def rejected(raw: dict) -> str:
    with pytest.raises(ConfigError) as raised:
        plan_of(raw)
    return str(raised.value)


def test_an_unknown_region_names_the_key_and_bounded_allowed_names():
    message = rejected({**eks_config([], []), "aws": {**eks_config([], [])["aws"], "region": "us-east-9"}})
    assert message.startswith("aws.region: unknown Region 'us-east-9'; allowed: af-south-1, ")
    assert len(message.split("allowed: ")[1]) <= ALLOWED_CHARS + len(" in catalog/aws_regions.yaml")


@pytest.mark.parametrize("zone", [REGIONS.local_zones(REGION)[0], "us-east-1z", "us-west-2a"])
def test_cluster_azs_are_availability_zones_of_the_region(zone):
    raw = eks_config([], [])
    raw["aws"]["cluster"] = {"create": {**raw["aws"]["cluster"]["create"], "availabilityZones": ["us-east-1a", zone]}}
    message = rejected(raw)
    assert message.startswith("aws.cluster.create.availabilityZones[1]: ")
    assert ("Local Zone" in message) == (zone in REGIONS.local_zones(REGION))
    assert message.endswith(f"allowed: {', '.join(REGIONS.availability_zones(REGION))}")


@pytest.mark.parametrize("instance_type", LOCAL_ONLY)
def test_a_local_zone_only_type_in_an_availability_zone_is_rejected_with_its_zones_and_the_opt_in(instance_type):
    instance = INSTANCES[instance_type]
    message = rejected(
        eks_config(
            [node_pool("pool", instance_type, availabilityZone="us-east-1a", **capacity_fields(instance_type))], []
        )
    )
    groups = ", ".join(instance.localZoneGroups)
    assert (
        f"aws.nodePools[0].availabilityZone: this instance type launches only in Local Zones of {groups} (opt in"
        in message
    )
    assert message.endswith(f"allowed: {', '.join(REGIONS.local_zones(REGION, instance.localZoneGroups))}")


@pytest.mark.parametrize("instance_type", IN_AZS)
def test_an_availability_zone_type_in_a_local_zone_is_rejected(instance_type):
    zone = REGIONS.local_zones(REGION)[0]
    message = rejected(eks_config([node_pool("pool", instance_type, availabilityZone=zone)], []))
    assert message.startswith(
        f"aws.nodePools[0].availabilityZone: {zone} is a Local Zone; this instance type launches in Availability Zones"
    )


@pytest.mark.parametrize("instance_type", sorted(INSTANCES))
def test_each_type_plans_in_the_zone_the_data_gives_it(instance_type):
    (pool,) = plan_of(eks_config([node_pool("pool", instance_type, **capacity_fields(instance_type))], [])).pools
    assert (pool.availability_zone, pool.local_zone) == (
        pool_zone(instance_type),
        INSTANCES[instance_type].local_zones_only,
    )


@pytest.mark.parametrize("instance_type", LOCAL_ONLY)
def test_the_created_vpc_holds_at_most_its_local_zone_subnets(instance_type):
    pools = [
        node_pool(f"ultra-{i}", instance_type, **capacity_fields(instance_type))
        for i in range(MAX_LOCAL_ZONE_SUBNETS + 1)
    ]
    assert (
        plan_of(eks_config(pools[:-1], [])).cluster.local_zone_subnets[-1].pool == f"ultra-{MAX_LOCAL_ZONE_SUBNETS - 1}"
    )
    assert rejected(eks_config(pools, [])) == (
        f"aws.nodePools[{MAX_LOCAL_ZONE_SUBNETS}].availabilityZone: the created VPC has room "
        f"for {MAX_LOCAL_ZONE_SUBNETS} Local Zone pool subnets; allowed: fewer Local Zone pools"
    )
